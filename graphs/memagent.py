"""MemAgent as a LangGraph state machine: chunk the document, overwrite memory per chunk, answer.

MemAgent (Yu et al., 2025, arXiv 2507.02259) reads a document of any length chunk by
chunk. After each chunk one independent single-message LLM call rewrites a bounded
memory, which overwrites the old one; after the last chunk one more call answers from
question + memory alone. Cost is linear in document length.

Graph: ``chunk_document -> update_memory (once per chunk) -> answer``.

The document never rides in the checkpointed state after the first step: its chunks
live in the graph's store (namespace ``(<user>, "memagent", "documents", <document_id>)``, the
run's user first: see :mod:`langgraph_memagent.agents.users`), so
the bytes a checkpointer writes per step do not grow with document length. A run killed
at chunk k resumes at chunk k through ``graph.invoke(None, config)``; if the store did
not survive (an in-memory store in a new process), the chunks are rebuilt from the
run's input checkpoint.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import uuid
from dataclasses import dataclass, replace
from typing import Any, Iterator, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from ..agents.answers import extract_answer
from ..agents.calls import (
    AnswerOutput,
    QuestionInput,
    acall_model,
    add_usage,
    call_model,
    positive_int,
    validated_inputs,
)
from ..agents.compiled_graph import RecursionSizedGraph, node
from ..agents.constrained import answer_grammar
from ..agents.loading import context_window
from ..agents.prompts import MEMORY_START, FinalPromptStyle, final_prompt, memory_update_prompt
from ..agents.tokenizers import TokenCodec, chunk_text, iter_chunks, resolve_tokenizer
from ..agents.users import UserContext, owner_label


logger = logging.getLogger(__name__)

DOCUMENTS_NAMESPACE = ("memagent", "documents")
# Steps outside the per-chunk loop (chunk_document, answer) plus slack for the input step.
_FIXED_STEPS = 5
# Chunks per store write while chunking: bounds what is held besides the document.
_CHUNKS_PER_WRITE = 64


MemAgentInput = QuestionInput


class MemAgentOutput(AnswerOutput, total=False):
    """What a run returns."""

    memory: str  # memory after the last chunk
    chunks_read: int
    num_chunks: int
    empty_memory_updates: int  # chunks after which the model returned an empty memory


class MemAgentState(MemAgentOutput, total=False):
    """Checkpointed state: small and of constant size per step (no document text)."""

    document: str  # input only; cleared by chunk_document
    document_id: str
    document_owner: str  # the user whose namespace holds the chunks during the run


def chunks_namespace(state: Any) -> tuple[str, ...]:
    """Where the run's chunks live: under its user, then MemAgent's documents, then the run's document."""
    return (state["document_owner"], *DOCUMENTS_NAMESPACE, state["document_id"])


@dataclass(frozen=True)
class MemAgentConfig:
    """Budgets and prompt style of a MemAgent graph (defaults: MemAgent paper, 8K window)."""

    chunk_tokens: int = 5000  # tokens of document per memory update (paper: 5000)
    memory_tokens: int = 1024  # generation limit of a memory update, which bounds the memory (paper: 1024)
    answer_tokens: int = 1024  # generation limit of the final answer (paper: 1024)
    final_prompt: FinalPromptStyle = "boxed"  # "boxed" (paper) or "answer_is" (reference eval harness variant)
    # Decode the final answer in the form final_prompt asks for, under a grammar (ours: the embedded
    # 135M model never wrote \boxed{} unaided); None: where the model decodes grammars (the local backends).
    constrained_answer: bool | None = None

    def __post_init__(self) -> None:
        for name in ("chunk_tokens", "memory_tokens", "answer_tokens"):
            positive_int(name, getattr(self, name), unit="number of tokens")
        if self.final_prompt not in ("boxed", "answer_is"):
            raise ValueError(f"final_prompt must be 'boxed' or 'answer_is', got {self.final_prompt!r}")
        if self.constrained_answer not in (None, True, False):
            raise ValueError(f"constrained_answer must be True, False or None (where the model decodes grammars), got {self.constrained_answer!r}")


def chunk_key(index: int) -> str:
    return f"{index:08d}"


class MemAgentSteps:
    """The node functions; sync and async kept symmetric, shared logic in plain helpers."""

    def __init__(self, model: BaseChatModel, codec: TokenCodec, config: MemAgentConfig, own_store: BaseStore):
        self.model = model
        self.codec = codec
        self.config = config
        # A graph nested in another (a subgraph node, a call inside a node or a tool) runs with
        # its parent's store, which is None when the parent was compiled without one.
        self.own_store = own_store
        self.memory_model = model.bind(max_tokens=config.memory_tokens)
        answer_options: dict[str, Any] = {"max_tokens": config.answer_tokens}
        if config.constrained_answer:
            answer_options["grammar"] = answer_grammar(config.final_prompt, config.answer_tokens)
        self.answer_model = model.bind(**answer_options)
        # A model trained to answer freely (smollm2-135m-memagent) writes no \boxed{}: its reply is its answer.
        self.reply_is_answer = bool(getattr(model, "free_answer", False))

    def _store(self, store: BaseStore | None) -> BaseStore:
        """The run's store: the parent's or the server's when there is one, else the graph's own."""
        return store if store is not None else self.own_store

    # chunk_document ---------------------------------------------------------------
    def _chunk_groups(self, state: MemAgentState) -> Iterator[list[str]]:
        """The document's chunks, a group at a time, so memory stays bounded by one group."""
        question, document = validated_inputs(state)
        chunks = iter_chunks(document, self.codec, self.config.chunk_tokens)
        while group := list(itertools.islice(chunks, _CHUNKS_PER_WRITE)):
            yield group

    @staticmethod
    def _puts(namespace: tuple[str, ...], first: int, group: list[str]) -> list[PutOp]:
        return [PutOp(namespace, chunk_key(first + i), {"text": text}, index=False) for i, text in enumerate(group)]

    @staticmethod
    def _start(where: dict[str, str], num_chunks: int) -> dict[str, Any]:
        return {
            "document": "",
            **where,
            "num_chunks": num_chunks,
            "chunks_read": 0,
            "memory": MEMORY_START,
            "response": "",
            "answer": None,
            "empty_memory_updates": 0,
            "usage": {"llm_calls": 0, "input_tokens": 0, "output_tokens": 0},
        }

    @staticmethod
    def _new_document(runtime: Runtime[Any]) -> tuple[dict[str, str], tuple[str, ...]]:
        where = {"document_owner": owner_label(runtime), "document_id": uuid.uuid4().hex}
        return where, chunks_namespace(where)

    def chunk_document(self, state: MemAgentState, store: BaseStore | None, runtime: Runtime[Any]) -> dict[str, Any]:
        store = self._store(store)
        (where, namespace), written = self._new_document(runtime), 0
        for group in self._chunk_groups(state):
            store.batch(self._puts(namespace, written, group))
            written += len(group)
        return self._start(where, written)

    async def achunk_document(self, state: MemAgentState, store: BaseStore | None, runtime: Runtime[Any]) -> dict[str, Any]:
        store = self._store(store)
        (where, namespace), written = self._new_document(runtime), 0
        groups = self._chunk_groups(state)
        # Tokenizing millions of tokens is CPU work: keep it off the event loop.
        while group := await asyncio.to_thread(next, groups, None):
            await store.abatch(self._puts(namespace, written, group))
            written += len(group)
        return self._start(where, written)

    # update_memory ----------------------------------------------------------------
    @staticmethod
    def _chunk(state: MemAgentState, item: Any) -> str:
        """The text of the chunk ``item`` read from the store, or a clear error when the store lost it."""
        if item is None:
            raise LookupError(
                f"chunk {state['chunks_read']} of document {state['document_id']} is missing from the store; "
                "resume with the same graph (or the same persistent store) that started the run"
            )
        return item.value["text"]

    def _memory_messages(self, state: MemAgentState, item: Any) -> list[BaseMessage]:
        return [HumanMessage(memory_update_prompt(state["question"], state["memory"], self._chunk(state, item)))]

    def _after_memory(self, state: MemAgentState, reply: BaseMessage) -> dict[str, Any]:
        index = state["chunks_read"]
        memory = reply.text.strip()
        empty = state.get("empty_memory_updates", 0)
        if not memory:
            # The method overwrites memory unconditionally; record the loss instead of hiding it.
            empty += 1
            logger.warning("model returned an empty memory after chunk %d of %d", index, state["num_chunks"])
        return {
            "memory": memory,
            "chunks_read": index + 1,
            "empty_memory_updates": empty,
            "usage": add_usage(state["usage"], reply),
        }

    def update_memory(self, state: MemAgentState, store: BaseStore | None) -> dict[str, Any]:
        store = self._store(store)
        item = store.get(chunks_namespace(state), chunk_key(state["chunks_read"]))
        messages = self._memory_messages(state, item)
        reply = call_model(self.memory_model, messages, f"memory update for chunk {state['chunks_read']}", self.model)
        return self._after_memory(state, reply)

    async def aupdate_memory(self, state: MemAgentState, store: BaseStore | None) -> dict[str, Any]:
        store = self._store(store)
        item = await store.aget(chunks_namespace(state), chunk_key(state["chunks_read"]))
        messages = self._memory_messages(state, item)
        reply = await acall_model(self.memory_model, messages, f"memory update for chunk {state['chunks_read']}", self.model)
        return self._after_memory(state, reply)

    # answer -----------------------------------------------------------------------
    def _answer_messages(self, state: MemAgentState) -> list[BaseMessage]:
        return [HumanMessage(final_prompt(state["question"], state["memory"], self.config.final_prompt))]

    def _after_answer(self, state: MemAgentState, reply: BaseMessage) -> tuple[dict[str, Any], list[PutOp]]:
        namespace = chunks_namespace(state)
        deletes = [PutOp(namespace, chunk_key(i), None) for i in range(state["num_chunks"])]
        answer = extract_answer(reply.text, self.config.final_prompt)
        if answer is None and self.reply_is_answer:
            answer = reply.text.strip() or None
        update = {
            "response": reply.text,
            "answer": answer,
            "usage": add_usage(state["usage"], reply),
        }
        return update, deletes

    def answer(self, state: MemAgentState, store: BaseStore | None) -> dict[str, Any]:
        store = self._store(store)
        reply = call_model(self.answer_model, self._answer_messages(state), "final answer", self.model)
        update, deletes = self._after_answer(state, reply)
        store.batch(deletes)
        return update

    async def aanswer(self, state: MemAgentState, store: BaseStore | None) -> dict[str, Any]:
        store = self._store(store)
        reply = await acall_model(self.answer_model, self._answer_messages(state), "final answer", self.model)
        update, deletes = self._after_answer(state, reply)
        await store.abatch(deletes)
        return update


def _next_step(state: MemAgentState) -> Literal["update_memory", "answer"]:
    return "update_memory" if state["chunks_read"] < state["num_chunks"] else "answer"


class MemAgentGraph(RecursionSizedGraph):
    """A compiled MemAgent graph that sizes its own recursion limit.

    The per-chunk loop takes one step per chunk, so the limit needed grows with the
    document. Before each run the limit is raised to cover the document: from an upper
    bound on its chunk count for a new input (tokens never outnumber UTF-8 bytes for
    byte-level and SentencePiece tokenizers) or from the checkpointed ``num_chunks``
    when resuming. A larger limit set by the caller is kept.

    Checkpoints are written synchronously by default (``durability="sync"``): a
    memory update costs seconds of LLM time and a checkpoint write milliseconds, so a
    run killed mid-chunk must resume at that chunk, not one before it. Pass another
    ``durability`` to trade that away.
    """

    graph_attributes = ("memagent_config", "memagent_codec")
    memagent_config: MemAgentConfig
    memagent_codec: TokenCodec
    steps_per_chunk = 1  # graph steps a chunk takes (InfMem: PreThink, Retrieve, Write)

    def prepare_config(self, input: Any, config: RunnableConfig | None, kwargs: dict[str, Any]) -> RunnableConfig:
        if self.checkpointer not in (None, False):
            if kwargs.get("durability") is None:
                kwargs["durability"] = "sync"
            if input is None and (config or {}).get("configurable"):  # resuming: the store may have lost the chunks
                self._restore_chunks(self.get_state(config).values, config)
        return super().prepare_config(input, config, kwargs)

    def steps_needed(self, input: Any, config: RunnableConfig) -> int:
        if isinstance(input, dict) and isinstance(input.get("document"), str):
            max_tokens = 4 * len(input["document"]) + 1  # a character is at most 4 UTF-8 bytes
            return _FIXED_STEPS + self.steps_per_chunk * math.ceil(max_tokens / self.memagent_config.chunk_tokens)
        if input is None and self.checkpointer not in (None, False) and config.get("configurable"):
            values = self.get_state(config).values
            return _FIXED_STEPS + self.steps_per_chunk * (values.get("num_chunks", 0) - values.get("chunks_read", 0))
        return _FIXED_STEPS

    def _restore_chunks(self, values: dict[str, Any], config: RunnableConfig) -> None:
        """Rebuild a run's chunks from its checkpoints when the store lost them.

        The document is in the state only between the run's input and chunk_document,
        which clears it; so the newest checkpoint holding a document is this run's.
        """
        document_id = values.get("document_id")
        remaining = values.get("num_chunks", 0) - values.get("chunks_read", 0)
        store = self.store
        if not document_id or remaining <= 0 or store is None:
            return
        namespace = chunks_namespace(values)
        if store.get(namespace, chunk_key(values["chunks_read"])) is not None:
            return
        thread = {"configurable": {k: v for k, v in config["configurable"].items() if k in ("thread_id", "checkpoint_ns")}}
        for saved in self.checkpointer.list(thread):
            document = saved.checkpoint["channel_values"].get("document")
            if document:
                chunks = chunk_text(document, self.memagent_codec, self.memagent_config.chunk_tokens)
                if len(chunks) == values["num_chunks"]:
                    store.batch([PutOp(namespace, chunk_key(i), {"text": t}, index=False) for i, t in enumerate(chunks)])
                    logger.info("restored %d chunks of document %s from its checkpoint", len(chunks), document_id)
                return


# Role markers the chat template wraps a user message in (SmolLM2/Qwen: about 10 tokens).
CHAT_MARKUP_TOKENS = 16


def _check_window(config: MemAgentConfig, codec: TokenCodec, window: int | None) -> None:
    """Refuse budgets whose calls cannot fit the model's window (unknown window: no check).

    A memory-update prompt holds its template, a chunk and the previous memory, and the
    reply may take ``memory_tokens`` more; the answer prompt holds its template and the
    memory, and the reply ``answer_tokens``. The question comes on top at run time, where
    the backend checks the exact prompt.
    """
    if window is None:
        return

    def template(text: str) -> int:
        return len(codec.encode_batch([text])[0]) + CHAT_MARKUP_TOKENS

    update, memory = template(memory_update_prompt("", "", "")), config.memory_tokens
    if config.chunk_tokens + 2 * memory + update > window:
        room = window - 2 * memory - update
        raise ValueError(
            f"chunk_tokens {config.chunk_tokens} + memory_tokens {memory} (the memory in the prompt) + memory_tokens "
            f"{memory} (the reply) + {update} template tokens = {config.chunk_tokens + 2 * memory + update} exceeds the "
            f"model's {window}-token window; " + (f"use chunk_tokens <= {room}" if room > 0 else "lower memory_tokens")
        )
    answer = template(final_prompt("", "", config.final_prompt))
    if memory + config.answer_tokens + answer > window:
        raise ValueError(
            f"memory_tokens {memory} + answer_tokens {config.answer_tokens} + {answer} template tokens = "
            f"{memory + config.answer_tokens + answer} exceeds the model's {window}-token window; lower answer_tokens"
        )


def build_memagent_graph(
    model: BaseChatModel,
    *,
    chunk_tokens: int = 5000,
    memory_tokens: int = 1024,
    answer_tokens: int = 1024,
    tokenizer: Any = None,
    final_prompt: FinalPromptStyle = "boxed",
    constrained_answer: bool | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    name: str = "memagent",
) -> MemAgentGraph:
    """Build MemAgent (read chunk -> overwrite memory -> answer) as a compiled LangGraph graph.

    Defaults are the MemAgent paper's budget for an 8K window (arXiv 2507.02259): 5000
    document tokens per chunk, 1024-token memory, 1024-token answer, ``\\boxed{}`` answer.

    Args:
        model: any LangChain chat model: ``load_chat_model("smollm2-135m")``, a
            ``ChatOpenAI`` pointed at ``vllm serve``, or any other ``BaseChatModel``.
        chunk_tokens: document tokens per memory update, counted with ``tokenizer``.
        memory_tokens: generation limit of each memory update; the only bound on memory.
        answer_tokens: generation limit of the final answer.
        tokenizer: tokenizer for exact chunking; defaults to the model's own (local
            backends). Hosted models need one: a transformers tokenizer, a local
            tokenizer directory or name, or ``"tiktoken:<encoding>"``.
        final_prompt: ``"boxed"`` (paper) or ``"answer_is"`` (reference eval variant).
        constrained_answer: decode the final answer in ``final_prompt``'s form (``\\boxed{...}``)
            under a grammar; the prompts stay the paper's. ``None``: on where the model decodes
            grammars (``LocalChatModel``, ``VLLMEngineChatModel``) and was not trained to answer freely
            (``free_answer``, as ``smollm2-135m-memagent``), off elsewhere. On the same 8
            generated RULER ``niah_single_1`` 4K haystacks the embedded model's extracted answer
            held the needle 6 times with it and 0 without (its raw reply 6 times either way;
            BENCHMARKS.md section 13). A policy trained by this package's trainer answers freely, as
            its rollouts did, and scored higher so (experiments/2026-12-04_memagent-rl-at-length,
            stage 5): ``load_chat_model`` with an adapter sets its ``free_answer``.
        checkpointer: any LangGraph checkpointer; enables resuming with
            ``graph.invoke(None, {"configurable": {"thread_id": ...}})``.
        store: where chunks live during a run (default: an in-memory store). Nested in
            another graph (as a node, or called from a node or a tool), the graph uses its
            parent's store when the parent has one and this one otherwise.
        name: graph name (shown in traces and LangGraph servers).

    Returns:
        A compiled graph. Input ``{"question", "document"}``; output ``answer`` (what the
        reply's ``\\boxed{}`` holds; a ``free_answer`` model's whole reply when it writes none),
        ``response``, ``memory``, ``chunks_read``, ``num_chunks``,
        ``empty_memory_updates`` and ``usage``. The run's chunks sit in the store under its user
        (``context={"user_id": ...}``, the signed-in user when served, else ``"anonymous"``).

    Example:
        >>> from langgraph_memagent import build_memagent_graph, load_chat_model
        >>> graph = build_memagent_graph(load_chat_model("smollm2-135m"),   # doctest: +SKIP
        ...                              chunk_tokens=1000, memory_tokens=128)
        >>> result = graph.invoke({"question": "What is the magic number?",  # doctest: +SKIP
        ...                        "document": open("haystack.txt").read()})
        >>> result["answer"], result["chunks_read"]                          # doctest: +SKIP
        ('4815162', 16)
    """
    config = MemAgentConfig(chunk_tokens, memory_tokens, answer_tokens, final_prompt, constrained_answer)
    decodes_grammars = bool(getattr(model, "decodes_grammars", False))
    if config.constrained_answer and not decodes_grammars:
        raise ValueError(
            f"constrained_answer=True needs a model that decodes grammars (LocalChatModel, VLLMEngineChatModel); "
            f"{type(model).__name__} does not"
        )
    if config.constrained_answer is None:
        config = replace(config, constrained_answer=decodes_grammars and not getattr(model, "free_answer", False))
    codec = resolve_tokenizer(tokenizer, model)
    _check_window(config, codec, context_window(model))
    own_store = store if store is not None else InMemoryStore()
    steps = MemAgentSteps(model, codec, config, own_store)
    builder = StateGraph(MemAgentState, context_schema=UserContext, input_schema=MemAgentInput, output_schema=MemAgentOutput)
    builder.add_node("chunk_document", node(steps.chunk_document, steps.achunk_document))
    builder.add_node("update_memory", node(steps.update_memory, steps.aupdate_memory))
    builder.add_node("answer", node(steps.answer, steps.aanswer))
    builder.add_edge(START, "chunk_document")
    builder.add_conditional_edges("chunk_document", _next_step, ["update_memory", "answer"])
    builder.add_conditional_edges("update_memory", _next_step, ["update_memory", "answer"])
    builder.add_edge("answer", END)
    compiled = builder.compile(checkpointer=checkpointer, store=own_store, name=name)
    return MemAgentGraph.from_compiled(compiled, memagent_config=config, memagent_codec=codec)
