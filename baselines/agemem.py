"""AgeMem-style memory agent: one policy manages long-term memory (a store) and its own context.

AgeMem ("Agentic Memory": one policy manages long- and short-term memory; see
../shared/spec/baselines.md) gives a tool-calling model six memory actions:

* long-term memory, a LangGraph ``BaseStore`` namespace: ADD (``add_memory``), UPDATE
  (``update_memory``), DELETE (``delete_memory``); items get short ids ``m1``, ``m2``, ...
  that are their store keys, so the model can cite them;
* short-term memory, the message list in the graph state: RETRIEVE (``retrieve_memory``,
  semantic search whose hits come back as the tool reply, i.e. injected into the
  context), SUMMARY (``summarize_context``, a span of whole message groups replaced by one
  summary message) and FILTER (``filter_context``, whole message groups removed).

**Message groups.** A group is one user message, or one assistant message together with
all its tool replies: OpenAI-format APIs reject an assistant tool call without its reply,
so SUMMARY and FILTER act on whole groups only and the transcript stays valid. Group ids
are message ids: ``g3`` is the id of a group's first message, ``g3-r1`` of the first tool
reply in group 3. The model sees them two ways: every user message and tool reply it
reads starts with its group's id (``"[g3] ..."``, added when the prompt is rendered, never
stored), and the system prompt ends with a map of the context (``g1 user (120 words) ·
g2 assistant + 1 tool reply ...``). Assistant messages get no prefix, so the model is not
taught to start its own answers with one. A summary keeps the id of the first group it
replaces.

**Stages.** One run of :func:`build_agemem_graph` is one stage of AgeMem's rollout: the
stage's content (``incoming``) arrives one user message at a time and after each arrival
the model takes turns (text or tool calls) until it replies with text only or
``max_turns_per_message`` turns are used; ``max_stage_turns`` caps the stage's turns in
total (content that arrives after the cap is still appended, unanswered).
:func:`run_agemem_protocol` runs the three stages: (1) build long-term memory while the
content arrives, (2) reset the context (long-term memory is kept), distractors arrive,
(3) the question arrives in that same context, the model retrieves and answers.
:func:`build_agemem_qa_graph` wraps the protocol in the package's graph contract
(``{"question", "document"}`` in, :class:`~langgraph_memagent.graphs.calls.AnswerOutput`
out) for the comparison harness.

The long-term namespace comes from the run's context (``context={"user_id": "alice"}``
gives ``("agemem", "alice")``), read through the LangGraph ``Runtime``; bad tool calls
(unknown ids, malformed arguments, unparsable calls) become tool replies the model can
read and act on, never exceptions.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    Annotated,
    Any,
    Literal,
    TypedDict,
)

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel, Field, ValidationError, field_validator

from ..agents.answers import last_boxed_content
from ..agents.tokenizers import TokenCodec, chunk_text, resolve_tokenizer
from ..graphs.calls import (
    NO_USAGE,
    AnswerOutput,
    QuestionInput,
    TokenUsage,
    acall_model,
    add_usage,
    call_model,
)
from .embeddings import load_embeddings
from .full_context import validated_inputs

Stage = Literal["build", "distract", "answer"]
STAGES: tuple[Stage, ...] = ("build", "distract", "answer")

DEFAULT_NAMESPACE_ROOT = "agemem"
# all-MiniLM-L6-v2, the default embedding model, returns 384-dimensional vectors.
DEFAULT_EMBEDDING_DIMS = 384
# Hits a retrieve_memory call may ask for: enough to gather evidence, few enough that one
# reply cannot flood a small model's context.
MAX_RETRIEVE_K = 20
# Template overhead per message when counting context tokens (role markers, separators).
_TOKENS_PER_MESSAGE = 4
_LIST_PAGE = 1000

_GROUP_ID = re.compile(r"^g(\d+)$")
_REPLY_ID = re.compile(r"^(g\d+)-r\d+$")
_MEMORY_ID = re.compile(r"^\[?\s*m?(\d+)\s*\]?$", re.IGNORECASE)


# -- the tools the model sees ---------------------------------------------------------------------


class AddMemoryArgs(BaseModel):
    """ADD (AgeMem): store a new fact in long-term memory; the reply gives its id (m1, m2, ...)."""

    content: str = Field(min_length=1, description="the fact to remember, self-contained")
    tags: list[str] = Field(default_factory=list, description="optional short labels, e.g. a person's name")


class UpdateMemoryArgs(BaseModel):
    """UPDATE (AgeMem): replace the content of a long-term memory item."""

    memory_id: str = Field(description="id of the item, e.g. m3")
    content: str = Field(min_length=1, description="the new content")


class DeleteMemoryArgs(BaseModel):
    """DELETE (AgeMem): remove a stale or useless long-term memory item."""

    memory_id: str = Field(description="id of the item, e.g. m3")


class RetrieveMemoryArgs(BaseModel):
    """RETRIEVE (AgeMem): search long-term memory by meaning; the best items come back in the reply."""

    query: str = Field(min_length=1, description="what you are looking for")
    k: int = Field(3, ge=1, le=MAX_RETRIEVE_K, description=f"how many items to return (1 to {MAX_RETRIEVE_K})")


def _split_group_ids(value: Any) -> Any:
    """A list of ids, or one string such as ``"g2, g3"`` or ``"g2-g5"``, as a list of tokens."""
    if isinstance(value, (str, int)):
        value = [value]
    if isinstance(value, list):
        tokens: list[str] = []
        for item in value:
            tokens.extend(t for t in re.split(r"[\s,;]+", str(item).strip().strip("[]")) if t)
        return tokens
    return value


class SummarizeContextArgs(BaseModel):
    """SUMMARY (AgeMem): replace a span of consecutive context groups with your summary of them."""

    group_ids: list[str] = Field(min_length=1, description='ids of consecutive context groups, e.g. ["g2", "g3"] or "g2-g5"')
    summary: str = Field(min_length=1, description="what those groups said that is worth keeping")

    _split = field_validator("group_ids", mode="before")(_split_group_ids)


class FilterContextArgs(BaseModel):
    """FILTER (AgeMem): remove context groups that are no longer useful."""

    group_ids: list[str] = Field(min_length=1, description='ids of the context groups to remove, e.g. ["g2", "g4"]')

    _split = field_validator("group_ids", mode="before")(_split_group_ids)


TOOL_ARGS: dict[str, type[BaseModel]] = {
    "add_memory": AddMemoryArgs,
    "update_memory": UpdateMemoryArgs,
    "delete_memory": DeleteMemoryArgs,
    "retrieve_memory": RetrieveMemoryArgs,
    "summarize_context": SummarizeContextArgs,
    "filter_context": FilterContextArgs,
}
"""The six AgeMem actions by tool name (paper names: ADD, UPDATE, DELETE, RETRIEVE, SUMMARY, FILTER)."""


def agemem_tools() -> list[dict[str, Any]]:
    """The six tools as OpenAI tool schemas, ready for ``model.bind_tools``.

    >>> [tool["function"]["name"] for tool in agemem_tools()]
    ['add_memory', 'update_memory', 'delete_memory', 'retrieve_memory', 'summarize_context', 'filter_context']
    """
    tools = []
    for name, args in TOOL_ARGS.items():
        schema = convert_to_openai_tool(args)
        schema["function"]["name"] = name
        tools.append(schema)
    return tools


STAGE_INSTRUCTIONS: dict[str, str] = {
    "build": (
        "Stage 1 of 3: content arrives piece by piece. Store the facts a later question may need with "
        "add_memory (fix or drop stale items with update_memory and delete_memory). When you are done "
        "with a piece, reply with a short text and no tool call."
    ),
    "distract": (
        "Stage 2 of 3: your context was cleared; your long-term memory is kept. The content arriving now "
        "is probably not needed later: keep the context short with filter_context or summarize_context. "
        "When you are done with a piece, reply with a short text and no tool call."
    ),
    "answer": (
        "Stage 3 of 3: a question arrives. Use retrieve_memory to find what you stored, then reply with "
        "text only, giving the final answer in \\boxed{}."
    ),
}

SYSTEM_PROMPT = """You are an agent with a long-term memory store and a short-term context (this conversation).
Tools: add_memory, update_memory, delete_memory manage long-term memory items (ids m1, m2, ...); retrieve_memory searches them; summarize_context and filter_context shrink the context.
Every user message and tool reply starts with its context group id, e.g. [g3]. An assistant message and its tool replies are one group; summarize or filter whole groups only.
{instruction}
Context groups now: {groups}"""

FORCE_ANSWER_PROMPT = "Answer the question now from what you know, without tools. Put the final answer in \\boxed{}."


# -- message groups -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MessageGroup:
    """One user message, or one assistant message with its tool replies (``messages[0]`` leads)."""

    group_id: str
    messages: tuple[BaseMessage, ...]

    @property
    def kind(self) -> str:
        lead = self.messages[0]
        if isinstance(lead, AIMessage):
            replies = len(self.messages) - 1
            return f"assistant + {replies} tool repl{'y' if replies == 1 else 'ies'}" if replies else "assistant"
        return "summary" if lead.additional_kwargs.get("agemem_summary") else lead.type if lead.type != "human" else "user"


def message_groups(messages: Sequence[BaseMessage]) -> list[MessageGroup]:
    """Split a transcript into groups; a tool reply joins the assistant message before it.

    >>> groups = message_groups([HumanMessage("hi", id="g1"), AIMessage("", id="g2", tool_calls=[
    ...     {"name": "f", "args": {}, "id": "c1"}]), ToolMessage("ok", tool_call_id="c1", id="g2-r1")])
    >>> [(group.group_id, len(group.messages), group.kind) for group in groups]
    [('g1', 1, 'user'), ('g2', 2, 'assistant + 1 tool reply')]
    """
    groups: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, ToolMessage) and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return [MessageGroup(str(group[0].id), tuple(group)) for group in groups]


def _is_ours(message: BaseMessage) -> bool:
    pattern = _REPLY_ID if isinstance(message, ToolMessage) else _GROUP_ID
    return isinstance(message.id, str) and bool(pattern.match(message.id))


def _group_number(group_id: str) -> int:
    match = _GROUP_ID.match(group_id)
    return int(match.group(1)) if match else 0


def validate_transcript(messages: Sequence[BaseMessage]) -> list[str]:
    """Problems an OpenAI-format API would reject: unanswered tool calls, orphan tool replies.

    >>> validate_transcript([AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])])
    ['tool call c1 (f) has no tool reply']
    """
    problems, open_calls = [], {}
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                problems.append(f"tool reply {message.id} answers no pending tool call ({message.tool_call_id})")
            open_calls.pop(message.tool_call_id, None)
            continue
        problems.extend(f"tool call {call_id} ({name}) has no tool reply" for call_id, name in open_calls.items())
        open_calls = {}
        if isinstance(message, AIMessage):
            open_calls = {call["id"]: call["name"] for call in [*message.tool_calls, *message.invalid_tool_calls]}
    problems.extend(f"tool call {call_id} ({name}) has no tool reply" for call_id, name in open_calls.items())
    return problems


# -- state and context ----------------------------------------------------------------------------


class AgeMemContext(TypedDict, total=False):
    """The run's context: whose long-term memory this is (namespace ``(root, user_id)``)."""

    user_id: str


class AgeMemInput(TypedDict, total=False):
    """One stage's input: the content that arrives, and optionally the context to continue."""

    stage: Stage
    incoming: list[str]  # messages that arrive one at a time, in order
    messages: list[AnyMessage]  # the context to continue (default: the thread's, or empty)
    reset_context: bool  # clear the context first (AgeMem stage 2)


class AgeMemOutput(TypedDict, total=False):
    """What one stage returns; counters cover this stage only."""

    stage: Stage
    messages: list[AnyMessage]
    response: str  # the last assistant text of the stage ("" when it ended on a tool turn)
    stage_turns: int  # assistant turns (model calls) in this stage
    tool_calls: dict[str, int]  # calls by tool name; "invalid" counts unparsable ones
    usage: TokenUsage
    context_tokens: int  # input tokens of the stage's last model call, as the model reported
    overflow_trims: int  # groups dropped because the context exceeded max_context_tokens
    stop_reason: Literal["replied", "turn_limit"]


class AgeMemState(AgeMemOutput, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    incoming: list[str]
    reset_context: bool
    next_group: int
    message_turns: int  # turns since the last arrival


def _user_id(runtime: Runtime[Any]) -> str:
    context = runtime.context
    user_id = context.get("user_id") if isinstance(context, Mapping) else getattr(context, "user_id", None)
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValueError(
            "AgeMem needs the run's context to say whose memory to use: "
            f"graph.invoke(input, context={{'user_id': 'alice'}}); got context={context!r}"
        )
    if "." in user_id:
        raise ValueError(f"context user_id must not contain '.' (LangGraph namespace labels cannot), got {user_id!r}")
    return user_id


# -- long-term memory -----------------------------------------------------------------------------


class _LazyEmbeddings(Embeddings):
    """The embedded all-MiniLM-L6-v2, loaded on first use so building a graph stays cheap."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return load_embeddings().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return load_embeddings().embed_query(text)


def default_agemem_store(embeddings: Embeddings | None = None) -> InMemoryStore:
    """An ``InMemoryStore`` whose items' ``content`` is embedded for semantic search.

    ``embeddings=None`` is the embedded all-MiniLM-L6-v2, loaded when first needed.

    >>> default_agemem_store().index_config["dims"]
    384
    """
    if embeddings is None:
        return InMemoryStore(index={"dims": DEFAULT_EMBEDDING_DIMS, "embed": _LazyEmbeddings(), "fields": ["content"]})
    dims = getattr(embeddings, "dimensions", None) or len(embeddings.embed_query("dimension probe"))
    return InMemoryStore(index={"dims": int(dims), "embed": embeddings, "fields": ["content"]})


class LongTermMemory:
    """The long-term memory of one namespace: items ``{"content", "tags"}`` under keys ``m1``, ``m2``, ...

    Ids count up from the largest present, so an id is reused only if the newest item was
    deleted. Search is the store's semantic search; a store without an embedding index is
    ranked here by cosine with ``embeddings``.

    >>> memory = LongTermMemory(InMemoryStore(), ("agemem", "doc"))
    >>> memory.add("Ann lives in Oslo.", ["Ann"]), memory.add("Bo likes tea.")
    ('m1', 'm2')
    >>> memory.delete("m1"), [item.key for item in memory.items()]
    (True, ['m2'])
    """

    def __init__(self, store: BaseStore, namespace: tuple[str, ...], embeddings: Embeddings | None = None):
        self.store = store
        self.namespace = namespace
        self._embeddings = embeddings

    def items(self) -> list[Any]:
        """Every item of this namespace (not of namespaces below it), in id order."""
        found, offset = [], 0
        while True:
            page = self.store.search(self.namespace, limit=_LIST_PAGE, offset=offset)
            found.extend(item for item in page if tuple(item.namespace) == self.namespace)
            if len(page) < _LIST_PAGE:
                return sorted(found, key=lambda item: _memory_number(item.key))
            offset += _LIST_PAGE

    def add(self, content: str, tags: Sequence[str] = ()) -> str:
        numbers = [_memory_number(item.key) for item in self.items()]
        memory_id = f"m{max(numbers, default=0) + 1}"
        self.store.put(self.namespace, memory_id, {"content": content, "tags": list(tags)})
        return memory_id

    def get(self, memory_id: str) -> dict[str, Any] | None:
        item = self.store.get(self.namespace, memory_id)
        return None if item is None else dict(item.value)

    def update(self, memory_id: str, content: str) -> bool:
        value = self.get(memory_id)
        if value is None:
            return False
        self.store.put(self.namespace, memory_id, {**value, "content": content})
        return True

    def delete(self, memory_id: str) -> bool:
        if self.get(memory_id) is None:
            return False
        self.store.delete(self.namespace, memory_id)
        return True

    def clear(self) -> None:
        for item in self.items():
            self.store.delete(self.namespace, item.key)

    def search(self, query: str, k: int) -> list[tuple[str, dict[str, Any], float | None]]:
        """``(id, value, score)`` of the ``k`` items nearest ``query``, best first."""
        hits = [item for item in self.store.search(self.namespace, query=query, limit=k) if tuple(item.namespace) == self.namespace]
        if not hits or hits[0].score is not None:
            return [(item.key, dict(item.value), item.score) for item in hits]
        return self._rank_here(query, k)

    def _rank_here(self, query: str, k: int) -> list[tuple[str, dict[str, Any], float | None]]:
        import numpy as np

        embeddings = self._embeddings or load_embeddings()
        items = self.items()
        vectors = np.asarray(embeddings.embed_documents([str(item.value.get("content", "")) for item in items]), dtype=np.float64)
        query_vector = np.asarray(embeddings.embed_query(query), dtype=np.float64)
        cosines = vectors @ query_vector / np.maximum(np.linalg.norm(vectors, axis=1) * np.linalg.norm(query_vector), 1e-12)
        best = np.argsort(-cosines, kind="stable")[:k]
        return [(items[i].key, dict(items[i].value), round(float(cosines[i]), 4)) for i in best]


def _memory_number(key: str) -> int:
    match = _MEMORY_ID.match(key)
    return int(match.group(1)) if match else 0


def _memory_id(text: str) -> str | None:
    """``"m7"``, ``"M7"``, ``"7"`` or ``"[m7]"`` as the key ``"m7"``; ``None`` if it is no id."""
    match = _MEMORY_ID.match(str(text).strip())
    return f"m{int(match.group(1))}" if match else None


# -- the tool executor ----------------------------------------------------------------------------


class _ToolError(ValueError):
    """A tool call the model got wrong; its message becomes the tool reply."""


class _ContextEdit:
    """The context as the current turn's tool calls change it, one call after another."""

    def __init__(self, messages: Sequence[BaseMessage], pending_group: str):
        self.messages = list(messages)
        self.pending_group = pending_group

    def _resolve(self, tokens: Sequence[str]) -> list[int]:
        """Positions (in ``message_groups`` order) of the cited groups; ranges ``g2-g5`` expand."""
        groups = message_groups(self.messages)
        position = {group.group_id: index for index, group in enumerate(groups)}
        members = {str(message.id): group.group_id for group in groups for message in group.messages[1:]}
        known = ", ".join(group.group_id for group in groups if group.group_id != self.pending_group) or "none"
        chosen: list[int] = []
        for token in tokens:
            token = token.strip().lower()
            if token.isdigit():
                token = f"g{token}"
            span = re.fullmatch(r"g(\d+)\s*(?:-|\.\.|to)\s*g?(\d+)", token)
            cited = [f"g{span.group(1)}", f"g{span.group(2)}"] if span else [token]
            for group_id in cited:
                if group_id in members:
                    raise _ToolError(
                        f"{group_id} is a tool reply inside group {members[group_id]}; an assistant message and its "
                        f"tool replies can only be summarized or filtered together: cite {members[group_id]}"
                    )
                if group_id == self.pending_group:
                    raise _ToolError(f"{group_id} is the group of this very tool call; it cannot be summarized or filtered yet")
                if group_id not in position:
                    raise _ToolError(f"no context group {group_id!r}; the groups are: {known}")
            if span:
                low, high = sorted(position[group_id] for group_id in cited)
                chosen.extend(range(low, high + 1))
            else:
                chosen.append(position[cited[0]])
        pending = position.get(self.pending_group)
        if pending is not None and pending in chosen:
            raise _ToolError(f"the span includes {self.pending_group}, the group of this very tool call")
        return sorted(set(chosen))

    def summarize(self, tokens: Sequence[str], summary: str) -> str:
        chosen = self._resolve(tokens)
        groups = message_groups(self.messages)
        gaps = [groups[i].group_id for i in range(chosen[0], chosen[-1] + 1) if i not in chosen]
        if gaps:
            raise _ToolError(
                f"a summary replaces consecutive groups; {', '.join(gaps)} lie(s) between the groups you cited: "
                "include them or summarize separately"
            )
        replaced = [groups[i] for i in chosen]
        first = replaced[0].group_id
        cited = first if len(replaced) == 1 else f"{first}-{replaced[-1].group_id}"
        summary_message = HumanMessage(
            f"Summary of {cited}: {summary}", id=first, additional_kwargs={"agemem_summary": True}
        )
        dropped = {str(message.id) for group in replaced for message in group.messages}
        kept = []
        for message in self.messages:
            if str(message.id) == first:
                kept.append(summary_message)
            elif str(message.id) not in dropped:
                kept.append(message)
        self.messages = kept
        return f"replaced {cited} ({sum(len(group.messages) for group in replaced)} messages) with summary {first}"

    def filter(self, tokens: Sequence[str]) -> str:
        chosen = self._resolve(tokens)
        groups = message_groups(self.messages)
        removed = [groups[i] for i in chosen]
        dropped = {str(message.id) for group in removed for message in group.messages}
        self.messages = [message for message in self.messages if str(message.id) not in dropped]
        return f"removed {', '.join(group.group_id for group in removed)} ({len(dropped)} messages)"

    def updates(self, original: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``add_messages`` updates turning ``original`` into the edited context."""
        now = {str(message.id): message for message in self.messages}
        removals = [RemoveMessage(id=str(message.id)) for message in original if str(message.id) not in now]
        before = {str(message.id): message for message in original}
        replacements = [message for message in self.messages if before.get(str(message.id)) is not message]
        return [*removals, *replacements]


# -- the graph's steps ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AgeMemConfig:
    """Budgets of an AgeMem graph (defaults chosen so the embedded 135M model stays tractable on CPU)."""

    max_turns_per_message: int = 2  # assistant turns after each arriving message: one tool turn, then a text reply
    max_stage_turns: int = 32  # assistant turns per stage in total
    turn_tokens: int = 256  # generation limit of each turn (a few tool calls or a short answer)
    max_context_tokens: int | None = None  # oldest whole groups are dropped above this; None = never
    force_answer: bool = True  # in the answer stage, one tool-free call when the turns ran out without a text reply

    def __post_init__(self) -> None:
        for name in ("max_turns_per_message", "max_stage_turns", "turn_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        budget = self.max_context_tokens
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise ValueError(f"max_context_tokens must be a positive integer or None, got {budget!r}")


def _rendered(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The context as the model reads it: user messages and tool replies prefixed ``[gN]``."""
    rendered: list[BaseMessage] = []
    for group in message_groups(messages):
        for message in group.messages:
            if isinstance(message, ToolMessage):
                rendered.append(message.model_copy(update={"content": f"[{group.group_id}] {message.text}"}))
            elif isinstance(message, HumanMessage):
                rendered.append(HumanMessage(f"[{group.group_id}] {message.text}", id=message.id))
            else:
                rendered.append(message)
    return rendered


def _context_map(messages: Sequence[BaseMessage]) -> str:
    groups = message_groups(messages)
    if not groups:
        return "none"
    return " · ".join(
        f"{group.group_id} {group.kind} ({sum(len(m.text.split()) for m in group.messages)} words)" for group in groups
    )


def _with_call_ids(reply: BaseMessage, group_id: str) -> AIMessage:
    """The reply as group ``group_id``; every tool call (valid or not) gets an id a reply can cite."""
    if not isinstance(reply, AIMessage):
        reply = AIMessage(content=reply.content)
    number = iter(range(1, 1_000_000))
    tool_calls = [{**call, "id": call.get("id") or f"call_{group_id}_{next(number)}"} for call in reply.tool_calls]
    invalid = [{**call, "id": call.get("id") or f"call_{group_id}_{next(number)}"} for call in reply.invalid_tool_calls]
    return reply.model_copy(update={"id": group_id, "tool_calls": tool_calls, "invalid_tool_calls": invalid})


class _AgeMemSteps:
    """Node functions; model calls have sync and async twins, tool work runs in a thread when async."""

    def __init__(self, model: BaseChatModel, store: BaseStore, embeddings: Embeddings | None, config: AgeMemConfig,
                 tokenizer: Any, namespace_root: str):
        self.model = model
        self.tool_model = model.bind_tools(agemem_tools()).bind(max_tokens=config.turn_tokens)
        self.answer_model = model.bind(max_tokens=config.turn_tokens)
        self.store = store
        self.embeddings = embeddings
        self.config = config
        self.tokenizer = tokenizer
        self._codec: TokenCodec | None = None
        self.namespace_root = namespace_root

    @property
    def codec(self) -> TokenCodec:
        # Resolved on first use: a LocalChatModel's tokenizer comes with its weights.
        if self._codec is None:
            self._codec = resolve_tokenizer(self.tokenizer, self.model)
        return self._codec

    def memory(self, runtime: Runtime[Any]) -> LongTermMemory:
        return LongTermMemory(self.store, (self.namespace_root, _user_id(runtime)), self.embeddings)

    # start_stage ------------------------------------------------------------------------------
    def start_stage(self, state: AgeMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        _user_id(runtime)  # a missing context fails here, before any model call
        stage, incoming = state.get("stage"), state.get("incoming", [])
        if stage not in STAGES:
            raise ValueError(f"input 'stage' must be one of {list(STAGES)}, got {stage!r}")
        if not isinstance(incoming, list) or not all(isinstance(text, str) and text.strip() for text in incoming):
            raise ValueError(f"input 'incoming' must be a list of non-empty strings (the messages that arrive), got {incoming!r}")
        messages = [] if state.get("reset_context") else list(state.get("messages", []))
        updates: list[BaseMessage] = []
        if state.get("reset_context") and state.get("messages"):
            updates.append(RemoveMessage(id=REMOVE_ALL_MESSAGES))
        next_group = 1 + max((_group_number(group.group_id) for group in message_groups(messages) if _is_ours(group.messages[0])), default=0)
        if not all(_is_ours(message) for message in messages):
            # Messages from elsewhere get group ids; ids change, so the whole list is rewritten in order.
            renamed = []
            for group in message_groups(messages):
                group_id = group.group_id if _is_ours(group.messages[0]) else f"g{next_group}"
                next_group += 0 if _is_ours(group.messages[0]) else 1
                renamed.append(group.messages[0].model_copy(update={"id": group_id}))
                renamed.extend(m.model_copy(update={"id": f"{group_id}-r{i}"}) for i, m in enumerate(group.messages[1:], 1))
            updates = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *renamed]
        return {
            "messages": updates, "incoming": list(incoming), "reset_context": False, "next_group": next_group,
            "stage_turns": 0, "message_turns": 0, "tool_calls": {}, "usage": dict(NO_USAGE), "context_tokens": 0,
            "overflow_trims": 0, "response": "", "stop_reason": "replied",
        }

    # deliver ----------------------------------------------------------------------------------
    @staticmethod
    def deliver(state: AgeMemState) -> dict[str, Any]:
        group_id = f"g{state['next_group']}"
        return {
            "messages": [HumanMessage(state["incoming"][0], id=group_id)],
            "incoming": state["incoming"][1:],
            "next_group": state["next_group"] + 1,
            "message_turns": 0,
        }

    # agent ------------------------------------------------------------------------------------
    def _count(self, system: str, messages: Sequence[BaseMessage]) -> int:
        texts = [system, *(message.text + "".join(str(c["args"]) for c in getattr(message, "tool_calls", [])) for message in messages)]
        return sum(len(ids) + _TOKENS_PER_MESSAGE for ids in self.codec.encode_batch(texts))

    def _prompt(self, state: AgeMemState) -> tuple[list[BaseMessage], list[BaseMessage], int]:
        """The prompt, the removals that fit it into the budget, and how many groups they drop."""
        messages = list(state["messages"])
        instruction = STAGE_INSTRUCTIONS[state["stage"]]
        removals: list[BaseMessage] = []
        trims = 0
        if self.config.max_context_tokens is not None:
            groups = message_groups(messages)
            # The newest group (what just arrived, or the last tool results) always stays.
            while len(groups) > 1 and self._count(SYSTEM_PROMPT.format(instruction=instruction, groups=_context_map(messages)),
                                                  _rendered(messages)) > self.config.max_context_tokens:
                dropped = groups.pop(0)
                removals.extend(RemoveMessage(id=str(message.id)) for message in dropped.messages)
                messages = messages[len(dropped.messages):]
                trims += 1
        system = SystemMessage(SYSTEM_PROMPT.format(instruction=instruction, groups=_context_map(messages)))
        return [system, *_rendered(messages)], removals, trims

    def _after_call(self, state: AgeMemState, reply: BaseMessage, removals: list[BaseMessage], trims: int) -> dict[str, Any]:
        group_id = f"g{state['next_group']}"
        message = _with_call_ids(reply, group_id)
        reported = getattr(reply, "usage_metadata", None) or {}
        return {
            "messages": [*removals, message],
            "next_group": state["next_group"] + 1,
            "stage_turns": state["stage_turns"] + 1,
            "message_turns": state["message_turns"] + 1,
            "usage": add_usage(state["usage"], reply),
            "context_tokens": reported.get("input_tokens", 0),
            "overflow_trims": state["overflow_trims"] + trims,
        }

    def agent(self, state: AgeMemState) -> dict[str, Any]:
        prompt, removals, trims = self._prompt(state)
        reply = call_model(self.tool_model, prompt, f"AgeMem {state['stage']} turn", self.model)
        return self._after_call(state, reply, removals, trims)

    async def aagent(self, state: AgeMemState) -> dict[str, Any]:
        prompt, removals, trims = await asyncio.to_thread(self._prompt, state)
        reply = await acall_model(self.tool_model, prompt, f"AgeMem {state['stage']} turn", self.model)
        return self._after_call(state, reply, removals, trims)

    # force_answer -----------------------------------------------------------------------------
    def _force_prompt(self, state: AgeMemState) -> tuple[HumanMessage, list[BaseMessage]]:
        request = HumanMessage(FORCE_ANSWER_PROMPT, id=f"g{state['next_group']}")
        instruction = STAGE_INSTRUCTIONS["answer"]
        messages = [*state["messages"], request]
        system = SystemMessage(SYSTEM_PROMPT.format(instruction=instruction, groups=_context_map(messages)))
        return request, [system, *_rendered(messages)]

    def _after_force(self, state: AgeMemState, request: HumanMessage, reply: BaseMessage) -> dict[str, Any]:
        group_id = f"g{state['next_group'] + 1}"
        reported = getattr(reply, "usage_metadata", None) or {}
        # Without tools bound, the reply is text: any tool-call fields would be unanswerable here.
        message = AIMessage(content=reply.content, id=group_id, usage_metadata=reported or None,
                            response_metadata=getattr(reply, "response_metadata", {}))
        return {
            "messages": [request, message],
            "next_group": state["next_group"] + 2,
            "usage": add_usage(state["usage"], reply),
            "context_tokens": reported.get("input_tokens", 0),
        }

    def force_answer(self, state: AgeMemState) -> dict[str, Any]:
        request, prompt = self._force_prompt(state)
        return self._after_force(state, request, call_model(self.answer_model, prompt, "AgeMem forced answer", self.model))

    async def aforce_answer(self, state: AgeMemState) -> dict[str, Any]:
        request, prompt = self._force_prompt(state)
        return self._after_force(state, request, await acall_model(self.answer_model, prompt, "AgeMem forced answer", self.model))

    # tools ------------------------------------------------------------------------------------
    def tools(self, state: AgeMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        original = list(state["messages"])
        call_message = original[-1]
        assert isinstance(call_message, AIMessage), "the tools step follows an assistant turn"
        memory = self.memory(runtime)
        edit = _ContextEdit(original, str(call_message.id))
        counts = dict(state.get("tool_calls", {}))
        replies: list[ToolMessage] = []
        for call in call_message.tool_calls:
            counts[call["name"]] = counts.get(call["name"], 0) + 1
            try:
                content, status = self._run_tool(call["name"], call["args"], memory, edit), "success"
            except _ToolError as error:
                content, status = f"error: {error}", "error"
            replies.append(ToolMessage(content, tool_call_id=call["id"], name=call["name"], status=status))
        for call in call_message.invalid_tool_calls:
            counts["invalid"] = counts.get("invalid", 0) + 1
            reason = call.get("error") or "the call could not be parsed"
            replies.append(ToolMessage(
                f"error: your call to {call.get('name') or 'a tool'} could not be used ({reason}); "
                f"arguments were {call.get('args')!r}. Call a tool with a JSON object of its arguments.",
                tool_call_id=call["id"], name=call.get("name") or "unknown", status="error",
            ))
        for number, reply in enumerate(replies, 1):
            reply.id = f"{call_message.id}-r{number}"
        return {"messages": [*edit.updates(original), *replies], "tool_calls": counts}

    async def atools(self, state: AgeMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.tools, state, runtime)

    @staticmethod
    def _args(name: str, args: Any) -> BaseModel:
        schema = TOOL_ARGS.get(name)
        if schema is None:
            raise _ToolError(f"there is no tool {name!r}; the tools are: {', '.join(TOOL_ARGS)}")
        try:
            return schema.model_validate(args if isinstance(args, dict) else {})
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors())
            expected = ", ".join(schema.model_fields)
            raise _ToolError(f"bad arguments for {name} ({problems}); it takes: {expected}") from None

    def _run_tool(self, name: str, raw_args: Any, memory: LongTermMemory, edit: _ContextEdit) -> str:
        args = self._args(name, raw_args)
        if isinstance(args, AddMemoryArgs):
            return f"added {memory.add(args.content.strip(), [tag.strip() for tag in args.tags if tag.strip()])}"
        if isinstance(args, (UpdateMemoryArgs, DeleteMemoryArgs)):
            memory_id = _memory_id(args.memory_id)
            if memory_id is None or memory.get(memory_id) is None:
                existing = ", ".join(item.key for item in memory.items()) or "none yet"
                raise _ToolError(f"no memory item {args.memory_id!r}; the items are: {existing}")
            if isinstance(args, UpdateMemoryArgs):
                memory.update(memory_id, args.content.strip())
                return f"updated {memory_id}"
            memory.delete(memory_id)
            return f"deleted {memory_id}"
        if isinstance(args, RetrieveMemoryArgs):
            hits = memory.search(args.query, args.k)
            if not hits:
                return "long-term memory is empty"
            lines = []
            for memory_id, value, score in hits:
                tags = f" [{', '.join(value.get('tags', []))}]" if value.get("tags") else ""
                shown = f" (score {score:.2f})" if score is not None else ""
                lines.append(f"{memory_id}{shown}: {value.get('content', '')}{tags}")
            return "\n".join(lines)
        if isinstance(args, SummarizeContextArgs):
            return edit.summarize(args.group_ids, args.summary.strip())
        return edit.filter(args.group_ids)

    # routing ----------------------------------------------------------------------------------
    def _more_or_end(self, state: AgeMemState) -> str:
        if state.get("incoming"):
            return "deliver"
        return "force_answer" if self._needs_forced_answer(state) else END

    def _needs_forced_answer(self, state: AgeMemState) -> bool:
        last = state["messages"][-1] if state.get("messages") else None
        ended_on_tools = isinstance(last, ToolMessage) or (isinstance(last, AIMessage) and (last.tool_calls or last.invalid_tool_calls))
        return self.config.force_answer and state["stage"] == "answer" and bool(ended_on_tools)

    def after_start(self, state: AgeMemState) -> str:
        return "deliver" if state.get("incoming") else END

    def after_deliver(self, state: AgeMemState) -> str:
        return "agent" if state["stage_turns"] < self.config.max_stage_turns else self._more_or_end(state)

    def after_agent(self, state: AgeMemState) -> str:
        last = state["messages"][-1]
        return "tools" if last.tool_calls or last.invalid_tool_calls else self._more_or_end(state)

    def after_tools(self, state: AgeMemState) -> str:
        if state["message_turns"] < self.config.max_turns_per_message and state["stage_turns"] < self.config.max_stage_turns:
            return "agent"
        return self._more_or_end(state)

    @staticmethod
    def finish(state: AgeMemState) -> dict[str, Any]:
        """A stage ends "replied" when its last message is a text-only assistant reply."""
        last = state["messages"][-1] if state.get("messages") else None
        replied = isinstance(last, AIMessage) and not (last.tool_calls or last.invalid_tool_calls)
        return {"response": last.text if replied else "", "stop_reason": "replied" if replied else "turn_limit"}


class AgeMemGraph(CompiledStateGraph):
    """A compiled AgeMem stage graph that sizes its recursion limit from the stage's content.

    A stage takes one step per arriving message and two per assistant turn; the limit is
    raised to cover that bound (a larger limit set by the caller is kept), so a stage can
    never fail with ``GraphRecursionError``.
    """

    agemem_config: AgeMemConfig
    agemem_namespace_root: str

    def _prepare_run(self, input: Any, config: RunnableConfig | None) -> RunnableConfig:
        config = dict(config or {})
        incoming = input.get("incoming", []) if isinstance(input, dict) else []
        arrivals = len(incoming) if isinstance(incoming, list) else 0
        turns = min(self.agemem_config.max_stage_turns, max(1, arrivals) * self.agemem_config.max_turns_per_message)
        needed = arrivals + 2 * turns + 10
        given = config.get("recursion_limit")
        config["recursion_limit"] = max(needed, given) if isinstance(given, int) and given > 0 else needed
        return config

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        return super().stream(input, self._prepare_run(input, config), **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        async for chunk in super().astream(input, self._prepare_run(input, config), **kwargs):
            yield chunk


def _local_context_budget(model: BaseChatModel, turn_tokens: int, cap: int) -> int | None:
    """A LocalChatModel's window minus the turn's generation, at most ``cap``; ``None`` for others."""
    from ..agents.local_model import LocalChatModel

    window = model.context_window if isinstance(model, LocalChatModel) else None  # read without loading the weights
    if window is None:
        return None
    return max(1, min(cap, window - turn_tokens))


def build_agemem_graph(
    model: BaseChatModel,
    *,
    store: BaseStore | None = None,
    embeddings: Embeddings | None = None,
    max_turns_per_message: int = 2,
    max_stage_turns: int = 32,
    turn_tokens: int = 256,
    max_context_tokens: int | None = None,
    tokenizer: Any = None,
    force_answer: bool = True,
    namespace_root: str = DEFAULT_NAMESPACE_ROOT,
    checkpointer: Any = None,
    name: str = "agemem",
) -> AgeMemGraph:
    """Build the AgeMem tool loop (six memory tools) as a compiled graph that runs one stage.

    Args:
        model: a LangChain chat model with ``bind_tools`` (``load_chat_model("smollm2-135m")``,
            ``ChatOpenAI`` on ``vllm serve --enable-auto-tool-choice``, ...).
        store: long-term memory, any LangGraph ``BaseStore``; default an ``InMemoryStore``
            with an embedding index on ``content``. Stores without an index are searched by
            embedding the namespace's items on each ``retrieve_memory``.
        embeddings: any LangChain ``Embeddings`` for the default store and for unindexed
            stores; default the embedded all-MiniLM-L6-v2, loaded on first search.
        max_turns_per_message: assistant turns after each arriving message (default 2: one
            tool turn and a text reply; chosen for the embedded 135M model on CPU, the
            AgeMem paper sets none).
        max_stage_turns: assistant turns per stage (default 32).
        turn_tokens: generation limit of each turn (default 256).
        max_context_tokens: when the rendered context (counted with ``tokenizer``) exceeds
            this, the oldest whole groups are dropped before the call and counted in
            ``overflow_trims`` (AgeMem penalizes overflow); ``None`` never drops.
        tokenizer: for ``max_context_tokens``; default the model's own (local backends).
        force_answer: in the answer stage, when the turns run out on a tool turn, make one
            tool-free call asking for the answer.
        namespace_root: first label of the long-term namespace ``(namespace_root, user_id)``.
        checkpointer: any LangGraph checkpointer (``None``: none, or the parent's when nested).
        name: graph name.

    Returns:
        A compiled graph. Input :class:`AgeMemInput` (``stage``, ``incoming``, optional
        ``messages`` / ``reset_context``); run it with ``context={"user_id": ...}``.
        Output :class:`AgeMemOutput`.

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> graph = build_agemem_graph(load_chat_model("smollm2-135m"))   # doctest: +SKIP
        >>> stage = graph.invoke({"stage": "build", "incoming": ["Ann lives in Oslo."]},   # doctest: +SKIP
        ...                      context={"user_id": "alice"})
        >>> sorted(stage["tool_calls"])   # doctest: +SKIP
        ['add_memory']
    """
    if not hasattr(model, "bind_tools"):
        raise TypeError(f"AgeMem needs a chat model with bind_tools, got {type(model).__name__}")
    if not isinstance(namespace_root, str) or not namespace_root or "." in namespace_root:
        raise ValueError(f"namespace_root must be a non-empty label without '.', got {namespace_root!r}")
    config = AgeMemConfig(max_turns_per_message=max_turns_per_message, max_stage_turns=max_stage_turns,
                          turn_tokens=turn_tokens, max_context_tokens=max_context_tokens, force_answer=force_answer)
    if max_context_tokens is not None and tokenizer is None and getattr(type(model), "tokenizer", None) is None:
        resolve_tokenizer(None, model)  # no tokenizer to count the context with: fail now, with how to pass one
    if store is None:
        store = default_agemem_store(embeddings)
    elif not isinstance(store, BaseStore):
        raise TypeError(f"store must be a LangGraph BaseStore, got {type(store).__name__}")
    steps = _AgeMemSteps(model, store, embeddings, config, tokenizer, namespace_root)
    builder = StateGraph(AgeMemState, context_schema=AgeMemContext, input_schema=AgeMemInput, output_schema=AgeMemOutput)
    builder.add_node("start_stage", RunnableCallable(steps.start_stage, trace=False))
    builder.add_node("deliver", RunnableCallable(steps.deliver, trace=False))
    builder.add_node("agent", RunnableCallable(steps.agent, steps.aagent, trace=False))
    builder.add_node("tools", RunnableCallable(steps.tools, steps.atools, trace=False))
    builder.add_node("force_answer", RunnableCallable(steps.force_answer, steps.aforce_answer, trace=False))
    builder.add_node("finish", RunnableCallable(steps.finish, trace=False))
    builder.add_edge(START, "start_stage")
    ends = {END: "finish"}
    builder.add_conditional_edges("start_stage", steps.after_start, {"deliver": "deliver", **ends})
    builder.add_conditional_edges("deliver", steps.after_deliver, {"agent": "agent", "deliver": "deliver", "force_answer": "force_answer", **ends})
    builder.add_conditional_edges("agent", steps.after_agent, {"tools": "tools", "deliver": "deliver", "force_answer": "force_answer", **ends})
    builder.add_conditional_edges("tools", steps.after_tools, {"agent": "agent", "deliver": "deliver", "force_answer": "force_answer", **ends})
    builder.add_edge("force_answer", "finish")
    builder.add_edge("finish", END)
    compiled = builder.compile(checkpointer=checkpointer, store=store, name=name)
    graph = AgeMemGraph(**{k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"})
    graph.agemem_config = config
    graph.agemem_namespace_root = namespace_root
    return graph


# -- the three-stage protocol ---------------------------------------------------------------------


@dataclass
class AgeMemProtocolResult:
    """One AgeMem rollout: the answer and what each stage did."""

    response: str  # the answer stage's final text
    answer: str | None  # the last \\boxed{} content, else the stripped response, else None
    usage: TokenUsage
    stage_turns: dict[str, int]
    tool_calls: dict[str, int]  # summed over stages
    context_tokens: int  # input tokens of the last model call
    overflow_trims: int
    stop_reasons: dict[str, str]
    transcripts: dict[str, list[BaseMessage]] = field(default_factory=dict)  # each stage's final context


def _answer_of(response: str) -> str | None:
    boxed = last_boxed_content(response)
    if boxed is not None:
        return boxed.strip()
    return response.strip() or None


def _combine(stages: dict[str, dict[str, Any]]) -> AgeMemProtocolResult:
    usage: TokenUsage = dict(NO_USAGE)  # type: ignore[assignment]
    counts: dict[str, int] = {}
    for output in stages.values():
        for key in usage:
            usage[key] += output["usage"][key]  # type: ignore[literal-required]
        for tool, count in output["tool_calls"].items():
            counts[tool] = counts.get(tool, 0) + count
    final = stages["answer"]
    return AgeMemProtocolResult(
        response=final["response"],
        answer=_answer_of(final["response"]),
        usage=usage,
        stage_turns={stage: output["stage_turns"] for stage, output in stages.items()},
        tool_calls=counts,
        context_tokens=final["context_tokens"],
        overflow_trims=sum(output["overflow_trims"] for output in stages.values()),
        stop_reasons={stage: output["stop_reason"] for stage, output in stages.items()},
        transcripts={stage: list(output["messages"]) for stage, output in stages.items()},
    )


def _stage_inputs(stage1: Sequence[str], stage2: Sequence[str], question: str) -> list[tuple[Stage, dict[str, Any]]]:
    for name, texts in (("stage1", stage1), ("stage2", stage2)):
        if isinstance(texts, str) or not all(isinstance(text, str) and text.strip() for text in texts):
            raise ValueError(f"{name} must be a list of non-empty strings (messages that arrive), got {texts!r}")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be a non-empty string, got {question!r}")
    return [
        ("build", {"stage": "build", "incoming": list(stage1), "messages": [], "reset_context": True}),
        ("distract", {"stage": "distract", "incoming": list(stage2), "messages": [], "reset_context": True}),
        ("answer", {"stage": "answer", "incoming": [question]}),
    ]


def run_agemem_protocol(
    graph: AgeMemGraph,
    *,
    stage1: Sequence[str],
    stage2: Sequence[str],
    question: str,
    context: Mapping[str, Any],
    config: RunnableConfig | None = None,
) -> AgeMemProtocolResult:
    """Run AgeMem's three-stage rollout with a graph from :func:`build_agemem_graph`.

    (1) ``stage1`` arrives message by message into an empty context (long-term memory is
    built); (2) the context is reset, ``stage2`` (distractors) arrives; (3) ``question``
    arrives in stage 2's context and the model answers. Long-term memory (the store
    namespace of ``context["user_id"]``) persists across stages. The transcript is
    carried here, so the graph needs no checkpointer.

    Example:
        >>> result = run_agemem_protocol(graph, stage1=["Ann lives in Oslo."],   # doctest: +SKIP
        ...     stage2=["Unrelated prose."], question="Where does Ann live?", context={"user_id": "u1"})
        >>> result.answer   # doctest: +SKIP
        'Oslo'
    """
    stages: dict[str, dict[str, Any]] = {}
    for stage, payload in _stage_inputs(stage1, stage2, question):
        if stage == "answer":
            payload["messages"] = stages["distract"]["messages"]
        stages[stage] = graph.invoke(payload, config, context=dict(context))
    return _combine(stages)


async def arun_agemem_protocol(
    graph: AgeMemGraph,
    *,
    stage1: Sequence[str],
    stage2: Sequence[str],
    question: str,
    context: Mapping[str, Any],
    config: RunnableConfig | None = None,
) -> AgeMemProtocolResult:
    """Async twin of :func:`run_agemem_protocol`."""
    stages: dict[str, dict[str, Any]] = {}
    for stage, payload in _stage_inputs(stage1, stage2, question):
        if stage == "answer":
            payload["messages"] = stages["distract"]["messages"]
        stages[stage] = await graph.ainvoke(payload, config, context=dict(context))
    return _combine(stages)


# -- the QA graph for the comparison harness ------------------------------------------------------


class AgeMemQAInput(QuestionInput, total=False):
    """The package contract plus optional raw turns (LoCoMo) and distractors."""

    turns: list[dict[str, Any]]  # LoCoMo's sample.meta["turns"]: one stage-1 message per session
    distractors: list[str]  # stage-2 messages (default: essay prose)


class AgeMemQAOutput(AnswerOutput, total=False):
    """AnswerOutput plus what the rollout did."""

    stage_turns: dict[str, int]  # assistant turns per stage: build, distract, answer
    tool_calls: dict[str, int]  # calls by tool name over all stages
    memory_item_count: int  # long-term items when the question was answered
    memory_items: list[str]  # their contents (for AgeMem's memory reward)
    context_tokens: int  # input tokens of the last model call
    overflow_trims: int
    stop_reasons: dict[str, str]


class AgeMemQAState(AgeMemQAOutput, total=False):
    document: str
    turns: list[dict[str, Any]]
    distractors: list[str]


def locomo_session_messages(turns: Sequence[Mapping[str, Any]]) -> list[str]:
    """LoCoMo turns as one message per session, headed by its date, in order of arrival.

    >>> print(locomo_session_messages([{"speaker": "Ann", "text": "Hi!", "session": 1, "date_time": "8 May"},
    ...                                {"speaker": "Bo", "text": "Hey.", "session": 2}])[1])
    Session 2:
    Bo: Hey.
    """
    sessions: dict[Any, list[str]] = {}
    headers: dict[Any, str] = {}
    for index, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or not isinstance(turn.get("text"), str) or not isinstance(turn.get("speaker"), str):
            raise TypeError(f"input 'turns'[{index}] must be a dict with string 'speaker' and 'text' (LoCoMo turns), got {turn!r}")
        session = turn.get("session")
        if session not in sessions:
            date = turn.get("date_time")
            headers[session] = f"Session {session} ({date}):" if date else f"Session {session}:"
            sessions[session] = []
        caption = turn.get("blip_caption")
        sessions[session].append(f"{turn['speaker']}: {turn['text']}" + (f" [shares {caption}]" if caption else ""))
    return ["\n".join([headers[session], *lines]) for session, lines in sessions.items()]


def essay_distractors(seed_text: str, messages: int, sentences: int) -> list[str]:
    """``messages`` blocks of ``sentences`` consecutive essay sentences, starting where ``seed_text`` hashes.

    >>> len(essay_distractors("Where is Ann?", 2, 3)), essay_distractors("q", 1, 2) == essay_distractors("q", 1, 2)
    (2, True)
    """
    from ..evals.essays import essay_sentences, essay_slice

    start = int(hashlib.sha256(seed_text.encode()).hexdigest(), 16) % len(essay_sentences())
    return [" ".join(essay_slice(start + i * sentences, sentences)) for i in range(messages)]


class _AgeMemQASteps:
    def __init__(self, agent: AgeMemGraph, model: BaseChatModel, tokenizer: Any, chunk_tokens: int,
                 distractor_messages: int, distractor_sentences: int):
        self.agent = agent
        self.model = model
        self.tokenizer = tokenizer
        self.chunk_tokens = chunk_tokens
        self.distractor_messages = distractor_messages
        self.distractor_sentences = distractor_sentences
        self._codec: TokenCodec | None = None

    def _stages(self, state: AgeMemQAState) -> tuple[str, list[str], list[str]]:
        question, document = validated_inputs(state)
        turns = state.get("turns")
        if turns:
            if not isinstance(turns, list):
                raise ValueError(f"input 'turns' must be a list of LoCoMo turn dicts, got {type(turns).__name__}")
            stage1 = locomo_session_messages(turns)
        else:
            if self._codec is None:
                self._codec = resolve_tokenizer(self.tokenizer, self.model)
            stage1 = chunk_text(document, self._codec, self.chunk_tokens)
        distractors = state.get("distractors")
        if distractors is None:
            distractors = essay_distractors(question, self.distractor_messages, self.distractor_sentences)
        elif not isinstance(distractors, list) or not all(isinstance(text, str) and text.strip() for text in distractors):
            raise ValueError(f"input 'distractors' must be a list of non-empty strings, got {distractors!r}")
        return question, stage1, list(distractors)

    @staticmethod
    def _context(runtime: Runtime[Any]) -> tuple[dict[str, Any], bool]:
        """The run's context, or a fresh per-run user (whose memory is cleared afterwards)."""
        context = runtime.context
        user_id = context.get("user_id") if isinstance(context, Mapping) else getattr(context, "user_id", None)
        if user_id is None:
            return {"user_id": f"qa-{uuid.uuid4().hex}"}, True
        return {"user_id": user_id}, False

    def _output(self, question: str, result: AgeMemProtocolResult, memory: LongTermMemory, temporary: bool) -> dict[str, Any]:
        items = [str(item.value.get("content", "")) for item in memory.items()]
        if temporary:
            memory.clear()
        return {
            "question": question, "answer": result.answer, "response": result.response, "usage": result.usage,
            "stage_turns": result.stage_turns, "tool_calls": result.tool_calls, "memory_item_count": len(items),
            "memory_items": items, "context_tokens": result.context_tokens, "overflow_trims": result.overflow_trims,
            "stop_reasons": result.stop_reasons, "document": "",
        }

    def _memory(self, context: dict[str, Any]) -> LongTermMemory:
        return LongTermMemory(self.agent.store, (self.agent.agemem_namespace_root, context["user_id"]))

    def run(self, state: AgeMemQAState, runtime: Runtime[Any]) -> dict[str, Any]:
        question, stage1, stage2 = self._stages(state)
        context, temporary = self._context(runtime)
        result = run_agemem_protocol(self.agent, stage1=stage1, stage2=stage2, question=question, context=context)
        return self._output(question, result, self._memory(context), temporary)

    async def arun(self, state: AgeMemQAState, runtime: Runtime[Any]) -> dict[str, Any]:
        question, stage1, stage2 = await asyncio.to_thread(self._stages, state)
        context, temporary = self._context(runtime)
        result = await arun_agemem_protocol(self.agent, stage1=stage1, stage2=stage2, question=question, context=context)
        return await asyncio.to_thread(self._output, question, result, self._memory(context), temporary)


# A CPU prefill of a few thousand tokens takes seconds for a 135M model; the whole 8K
# window would make every turn of a LoCoMo rollout several times slower.
LOCAL_CONTEXT_TOKENS = 4096


def build_agemem_qa_graph(
    model: BaseChatModel,
    *,
    store: BaseStore | None = None,
    embeddings: Embeddings | None = None,
    tokenizer: Any = None,
    chunk_tokens: int = 512,
    distractor_messages: int = 2,
    distractor_sentences: int = 12,
    max_turns_per_message: int = 2,
    max_stage_turns: int = 32,
    turn_tokens: int = 256,
    max_context_tokens: int | None = None,
    force_answer: bool = True,
    name: str = "agemem_qa",
) -> CompiledStateGraph:
    """AgeMem's three-stage rollout as a question-answering graph with the package contract.

    Stage 1 receives the document: with ``turns`` (LoCoMo's ``sample.meta["turns"]``) one
    message per session (LoCoMo: ~27), otherwise ``chunk_tokens``-token chunks. Stage 2
    receives ``distractors`` or, by default, ``distractor_messages`` blocks of
    ``distractor_sentences`` essay sentences (:mod:`~langgraph_memagent.evals.essays`,
    related prose the question does not need). Stage 3 receives the question.

    Long-term memory lives under the run context's ``user_id`` when one is given (it
    persists); otherwise under a fresh per-run id that is cleared after the answer, so
    questions never see each other's memory.

    Args:
        model: a chat model with ``bind_tools``.
        store, embeddings, max_turns_per_message, max_stage_turns, turn_tokens,
            force_answer: as in :func:`build_agemem_graph` (defaults chosen for the
            embedded 135M model on CPU; the AgeMem paper gives none).
        tokenizer: cuts the document into stage-1 chunks (not needed with ``turns``) and
            counts the context; default the model's own (local backends).
        chunk_tokens: tokens per stage-1 message for plain documents (default 512).
        distractor_messages, distractor_sentences: the default stage-2 content.
        max_context_tokens: context budget (see :func:`build_agemem_graph`); default for a
            ``LocalChatModel`` its window minus ``turn_tokens``, at most 4096; unlimited
            for other models.
        name: graph name.

    Returns:
        A compiled graph. Input ``{"question", "document"}`` plus optional ``turns`` and
        ``distractors``; output ``answer``, ``response``, ``usage``, ``question``,
        ``stage_turns``, ``tool_calls``, ``memory_item_count``, ``memory_items``,
        ``context_tokens``, ``overflow_trims``, ``stop_reasons``.

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> graph = build_agemem_qa_graph(load_chat_model("smollm2-135m"))   # doctest: +SKIP
        >>> result = graph.invoke({"question": "Where does Ann live?",         # doctest: +SKIP
        ...                        "document": "Ann lives in Oslo. Bo lives in Rome."})
        >>> sorted(result["stage_turns"])   # doctest: +SKIP
        ['answer', 'build', 'distract']
    """
    for option, value in (("chunk_tokens", chunk_tokens), ("distractor_sentences", distractor_sentences)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{option} must be a positive integer, got {value!r}")
    if not isinstance(distractor_messages, int) or isinstance(distractor_messages, bool) or distractor_messages < 0:
        raise ValueError(f"distractor_messages must be a non-negative integer, got {distractor_messages!r}")
    if max_context_tokens is None:
        max_context_tokens = _local_context_budget(model, turn_tokens, LOCAL_CONTEXT_TOKENS)
    agent = build_agemem_graph(
        model, store=store, embeddings=embeddings, max_turns_per_message=max_turns_per_message,
        max_stage_turns=max_stage_turns, turn_tokens=turn_tokens, max_context_tokens=max_context_tokens,
        tokenizer=tokenizer, force_answer=force_answer, checkpointer=False, name=f"{name}_stage",
    )
    steps = _AgeMemQASteps(agent, model, tokenizer, chunk_tokens, distractor_messages, distractor_sentences)
    builder = StateGraph(AgeMemQAState, context_schema=AgeMemContext, input_schema=AgeMemQAInput, output_schema=AgeMemQAOutput)
    builder.add_node("rollout", RunnableCallable(steps.run, steps.arun, trace=False))
    builder.add_edge(START, "rollout")
    builder.add_edge("rollout", END)
    return builder.compile(name=name)
