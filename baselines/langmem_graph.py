"""LangMem as a peer baseline: LangMem's memory manager extracts memories from each session, and
the question is answered from LangMem's search over them.

LangMem is the memory library LangGraph users already know. Its memory manager
(``create_memory_store_manager``) reads a conversation, looks up related memories in a
LangGraph ``BaseStore``, and inserts or updates short text memories there through trustcall
tool calls. Mem0's LoCoMo table puts it at J 58.10 with gpt-4o-mini (Mem0 66.88, full
context 72.90).

Graph: ``extract -> answer``.

* ``extract`` hands each session of the conversation (LoCoMo ``turns`` grouped by
  ``session``; a plain document in ``chunk_tokens`` pieces, one per session) to LangMem's
  manager, which writes to the namespace ``(user, "langmem", conversation_id)`` (the run's user:
  see :mod:`langgraph_memagent.agents.users`; ``conversation_id`` scopes within it). A marker item
  per session records that it was extracted, so many questions about one conversation
  extract it once, and an interrupted run resumes at the first session not yet done. Concurrent questions about one conversation wait for
  one extraction (a lock per conversation).
* ``answer`` searches the memories with LangMem's ``manager.search(query=question)``
  (the store's semantic index) and asks MemAgent's answer prompt over the ``search_limit``
  best.

``usage`` counts every LLM call of the run: LangMem's extraction calls (seen through a
callback, since LangMem makes them) and the answer. On the local backends LangMem's tool
calls decode under the tools' grammar, so every extraction call validates.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections import defaultdict
from itertools import groupby
from typing import Any, Sequence

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from pydantic import BaseModel

from ..agents.calls import (
    NO_USAGE, AnswerOutput, ModelCallError, TokenUsage, acall_model, add_usage, call_model, describe_endpoint, describe_error, positive_int,
)
from ..agents.compiled_graph import RecursionSizedGraph, node
from ..agents.extras import require
from ..agents.prompts import FinalPromptStyle, answer_template, fill_template
from ..agents.tokenizers import chunk_text, optional_tokenizer
from ..agents.users import UserContext, owner_label
from .agemem.store import default_agemem_store
from .full_context import answer_update
from .sumer import SumerInput, conversation_key

NAMESPACE = "langmem"
_DONE_MARKERS = "langmem_sessions"  # namespace of the per-session "extracted" markers


class LangMemOutput(AnswerOutput, total=False):
    """The shared contract plus what extraction did."""

    conversation_id: str
    sessions_extracted: int  # sessions this run handed to LangMem (0 when all were done before)
    extraction_calls: int  # LLM calls LangMem made in this run (also counted in usage)
    extraction_tool_calls: int  # tool calls those replies made (memory inserts, updates)
    invalid_extraction_calls: int  # tool calls among them that did not parse or validate
    memories: int  # memories stored for the conversation after extraction


class LangMemState(LangMemOutput, total=False):
    document: str
    turns: list[dict[str, Any]]


class _ExtractionCounter(BaseCallbackHandler):
    """Counts the LLM calls LangMem makes, the tokens they report and the tool calls they write."""

    def __init__(self, usage: TokenUsage):
        self.usage, self.tool_calls, self.invalid_tool_calls = usage, 0, 0

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                self.usage = add_usage(self.usage, message)
                self.tool_calls += len(getattr(message, "tool_calls", None) or [])
                self.invalid_tool_calls += len(getattr(message, "invalid_tool_calls", None) or [])


def _with_handler(config: RunnableConfig, handler: BaseCallbackHandler) -> RunnableConfig:
    """``config`` whose callbacks also include ``handler`` (the run's own callbacks are kept)."""
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        callbacks = callbacks.copy()
        callbacks.add_handler(handler, inherit=True)
    else:
        callbacks = [*(callbacks or []), handler]
    return {**config, "callbacks": callbacks}


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn.get('speaker', 'Speaker')}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption']}]"
    return text


def sessions(turns: Sequence[dict[str, Any]] | None, document: str, codec: Any, chunk_tokens: int) -> list[list[dict[str, str]]]:
    """What LangMem reads, session by session: one user message per turn (a session's date first), or per document piece.

    >>> sessions([{"speaker": "Ann", "text": "Hi", "session": 1, "date_time": "1 May"}, {"speaker": "Bo", "text": "Yo", "session": 2}], "", None, 0)
    [[{'role': 'user', 'content': 'Session date: 1 May'}, {'role': 'user', 'content': 'Ann: Hi'}], [{'role': 'user', 'content': 'Bo: Yo'}]]
    """
    if not turns:
        return [[{"role": "user", "content": piece}] for piece in chunk_text(document, codec, chunk_tokens)]
    grouped = []
    for _, session in groupby(turns, key=lambda turn: turn.get("session")):
        session = list(session)
        date = session[0].get("date_time")
        grouped.append(([{"role": "user", "content": f"Session date: {date}"}] if date else []) + [
            {"role": "user", "content": _turn_text(turn)} for turn in session
        ])
    return grouped


def memory_text(item: Any) -> str:
    """One memory LangMem's search found (its value a schema object, LangMem's ``Memory`` by default) as a line of the answer prompt."""
    value = item.value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict) and set(value) == {"content"}:
        value = value["content"]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _LangMemSteps:
    def __init__(self, model: BaseChatModel, store: BaseStore, codec: Any, *, extract_tokens: int, chunk_tokens: int,
                 search_limit: int, answer_tokens: int, final_prompt: FinalPromptStyle, memory_per_run: bool):
        # LangMem wants a BaseChatModel, not a binding: its settings go on a copy of the model.
        # LangMem's first extraction leaves tool_choice to the model, and the embedded model then
        # writes prose and stores nothing (2 of 2 LoCoMo sessions): where the model can default
        # it, extraction is forced to call LangMem's tools.
        fields = getattr(type(model), "model_fields", {})
        settings = {"max_tokens": extract_tokens, "default_tool_choice": "required"}
        self.extract_model = model.model_copy(update={key: value for key, value in settings.items() if key in fields})
        self.model, self.store, self.codec = model, store, codec
        self.answer_model = model.bind(max_tokens=answer_tokens)
        self.chunk_tokens, self.search_limit, self.final_prompt = chunk_tokens, search_limit, final_prompt
        self.memory_per_run = memory_per_run
        self._locks: defaultdict[tuple[str, str], threading.Lock] = defaultdict(threading.Lock)
        self.template = answer_template(final_prompt, material="memories of a conversation", based_on="the memories", tag="memories")

    def manager(self, scope: tuple[str, str]) -> Any:
        """LangMem's manager over the memories of ``scope``: (user, conversation id)."""
        create_memory_store_manager = require("langmem", "baselines", "the LangMem baseline").create_memory_store_manager
        owner, conversation_id = scope
        return create_memory_store_manager(
            self.extract_model, namespace=(owner, NAMESPACE, conversation_id), store=self.store, enable_deletes=False
        )

    def _conversation(self, state: LangMemState) -> tuple[str, list[list[dict[str, str]]]]:
        """The run's conversation id and its sessions, or a clear error naming the bad input."""
        question, document, turns = state.get("question"), state.get("document") or "", state.get("turns")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"input 'question' must be a non-empty string, got {question!r}")
        if not turns and not document.strip():
            raise ValueError(f"input 'document' must be a non-empty string when no 'turns' are given, got {document[:40]!r}")
        if not turns and self.codec is None:
            raise ValueError(f"a document without 'turns' is cut into {self.chunk_tokens}-token pieces: pass tokenizer=... to build_langmem_graph")
        conversation_id = state.get("conversation_id") or conversation_key(turns, document, chunk_tokens=self.chunk_tokens)
        if self.memory_per_run:  # a namespace of its own, forgotten after the answer
            conversation_id = f"{conversation_id}:run-{uuid.uuid4().hex}"
        return conversation_id, sessions(turns, document, self.codec, self.chunk_tokens)

    def extract(self, state: LangMemState, config: RunnableConfig, runtime: Runtime[Any]) -> dict[str, Any]:
        conversation_id, all_sessions = self._conversation(state)
        owner = owner_label(runtime)
        scope = (owner, conversation_id)
        manager, counter, done = self.manager(scope), _ExtractionCounter(NO_USAGE), 0
        markers = (owner, _DONE_MARKERS, conversation_id)
        with self._locks[scope]:  # concurrent questions about one conversation extract it once
            for index, messages in enumerate(all_sessions):
                if self.store.get(markers, str(index)) is not None:
                    continue
                try:
                    manager.invoke({"messages": messages}, config=_with_handler(config, counter))
                except Exception as error:
                    step = f"LangMem extraction of session {index + 1} of {len(all_sessions)}"
                    raise ModelCallError(f"{step}: model call to {describe_endpoint(self.model)} failed: {describe_error(error)}") from error
                self.store.put(markers, str(index), {"done": True}, index=False)
                done += 1
        return {
            "document": "", "turns": [], "conversation_id": conversation_id, "sessions_extracted": done, "usage": counter.usage,
            "extraction_calls": counter.usage["llm_calls"], "extraction_tool_calls": counter.tool_calls,
            "invalid_extraction_calls": counter.invalid_tool_calls,
            "memories": len(self.store.search((owner, NAMESPACE, conversation_id), limit=10_000)),
        }

    async def aextract(self, state: LangMemState, config: RunnableConfig, runtime: Runtime[Any]) -> dict[str, Any]:
        # In a worker thread: the per-conversation lock is a thread lock, shared with sync runs.
        return await asyncio.to_thread(self.extract, state, config, runtime)

    def _prompt(self, state: LangMemState, scope: tuple[str, str]) -> tuple[str, str]:
        found = self.manager(scope).search(query=state["question"], limit=self.search_limit)
        memory = "\n".join(f"- {memory_text(item)}" for item in found)
        return fill_template(self.template, prompt=state["question"], memory=memory), memory

    def _answered(self, state: LangMemState, scope: tuple[str, str], memory: str, reply: Any) -> dict[str, Any]:
        update = answer_update(reply, self.final_prompt)
        if self.memory_per_run:
            self._forget(scope)
        return {**update, "memory": memory, "usage": add_usage(state["usage"], reply)}

    def _forget(self, scope: tuple[str, str]) -> None:
        """Delete a run's memories and its extraction markers."""
        owner, conversation_id = scope
        for namespace in ((owner, NAMESPACE, conversation_id), (owner, _DONE_MARKERS, conversation_id)):
            for item in self.store.search(namespace, limit=10_000):
                self.store.delete(namespace, item.key)

    def answer(self, state: LangMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        scope = (owner_label(runtime), state["conversation_id"])
        prompt, memory = self._prompt(state, scope)
        reply = call_model(self.answer_model, [HumanMessage(prompt)], "LangMem answer", self.model)
        return self._answered(state, scope, memory, reply)

    async def aanswer(self, state: LangMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        scope = (owner_label(runtime), state["conversation_id"])
        prompt, memory = await asyncio.to_thread(self._prompt, state, scope)
        reply = await acall_model(self.answer_model, [HumanMessage(prompt)], "LangMem answer", self.model)
        return self._answered(state, scope, memory, reply)


def build_langmem_graph(
    model: BaseChatModel,
    *,
    store: BaseStore | None = None,
    embeddings: Embeddings | None = None,
    tokenizer: Any = None,
    extract_tokens: int = 512,
    chunk_tokens: int = 512,
    search_limit: int = 10,
    answer_tokens: int = 1024,
    final_prompt: FinalPromptStyle = "boxed",
    memory_per_run: bool = False,
    checkpointer: BaseCheckpointSaver | None = None,
    name: str = "langmem",
) -> CompiledStateGraph:
    """Build the LangMem baseline (LangMem extracts memories per session, then answers from its search).

    Args:
        model: any LangChain chat model with tool calling (LangMem extracts through tool calls).
        store: the LangGraph store that keeps the memories, e.g. a ``PostgresStore`` so they
            survive restarts; it needs a semantic index. Default: an in-memory store indexed
            with ``embeddings``.
        embeddings: LangChain ``Embeddings`` of the default store (default: the embedded all-MiniLM-L6-v2).
        tokenizer: cuts a plain document into ``chunk_tokens`` pieces (default: the model's own;
            server models need one for documents, not for ``turns``).
        extract_tokens: generation limit of each LangMem call (ours: a few memories fit).
        chunk_tokens: tokens per piece of a plain document, each extracted as one session.
        search_limit: memories the answer reads (LangMem's search default: 10).
        answer_tokens: generation limit of the answer (MemAgent paper: 1024).
        final_prompt: ``"boxed"`` (MemAgent paper) or ``"answer_is"``.
        memory_per_run: each run extracts into a namespace of its own and deletes it after
            answering, as GRPO needs: the rollouts of one question must each build their own
            memory. Default: runs about one conversation share its memories (extracted once).
        checkpointer: any LangGraph checkpointer.
        name: graph name.

    Returns:
        A compiled graph. Input ``{"question", "document"}`` plus optional ``turns`` and
        ``conversation_id`` (as SUMER's); output ``answer``, ``response``, ``usage``,
        ``memory`` (the memories read), ``conversation_id``, ``sessions_extracted``,
        ``extraction_calls`` and ``memories``. Memories are per user: run it with
        ``context={"user_id": "alice"}`` (served: the signed-in user; neither: ``"anonymous"``).

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> graph = build_langmem_graph(load_chat_model("smollm2-135m"))            # doctest: +SKIP
        >>> result = graph.invoke({"question": sample.question, "document": sample.document,  # doctest: +SKIP
        ...                        "turns": sample.meta["turns"]})
        >>> result["memories"], result["extraction_calls"]                          # doctest: +SKIP
        (41, 19)
    """
    for option, value in (("extract_tokens", extract_tokens), ("chunk_tokens", chunk_tokens), ("search_limit", search_limit),
                          ("answer_tokens", answer_tokens)):
        positive_int(option, value)
    if final_prompt not in ("boxed", "answer_is"):
        raise ValueError(f"final_prompt must be 'boxed' or 'answer_is', got {final_prompt!r}")
    require("langmem", "baselines", "the LangMem baseline")  # missing: fail here, not at the first run
    if not callable(getattr(model, "bind_tools", None)):
        raise TypeError(f"LangMem needs a chat model with tool calling (bind_tools); {type(model).__name__} has none")
    if store is None:
        store = default_agemem_store(embeddings)  # the items' "content" embedded, MiniLM loaded on first use
    elif embeddings is not None:
        raise ValueError("pass either store= (with its own index) or embeddings= (for the default store), not both")
    steps = _LangMemSteps(model, store, optional_tokenizer(tokenizer, model), extract_tokens=extract_tokens, chunk_tokens=chunk_tokens,
                          search_limit=search_limit, answer_tokens=answer_tokens, final_prompt=final_prompt,
                          memory_per_run=memory_per_run)
    builder = StateGraph(LangMemState, context_schema=UserContext, input_schema=SumerInput, output_schema=LangMemOutput)
    builder.add_node("extract", node(steps.extract, steps.aextract))
    builder.add_node("answer", node(steps.answer, steps.aanswer))
    builder.add_edge(START, "extract")
    builder.add_edge("extract", "answer")
    builder.add_edge("answer", END)
    return RecursionSizedGraph.from_compiled(builder.compile(checkpointer=checkpointer, name=name))


__all__ = ["LangMemOutput", "build_langmem_graph", "memory_text", "sessions"]
