"""InfMem as a LangGraph state machine: MemAgent's loop with PreThink, Retrieve and Write, and an early stop.

InfMem (Wang et al., 2026, arXiv 2602.02704) reads a document chunk by chunk like MemAgent, but
before each memory write it thinks: a PreThink call sees the question, its retrieval history and
the memory (not the chunk) and answers ``STOP`` or a ``retrievesearch`` call with a query and a
``top_k``; a call retrieves passages of the document; the Write call then compresses the
retrieved passages, the chunk and the old memory into the new memory, which overwrites the old.
Three ``STOP`` in a row end the reading early and the answer comes from the memory.

Graph: ``chunk_document -> (prethink -> [retrieve ->] update_memory)* -> answer``; each decision
is its own streamed step, and the state says where the early stop fired (``early_stop_chunk``).

Prompts, parsing and counters are the reference code's evaluation loop, the one its released
model is measured with (``UCMP13753/InfMem``, ``taskutils/memory_eval/utils/infmem.py``; the
reference notes with line numbers are in ``experiments/2026-12-04_infmem/reference_notes.md``).
Where this graph differs, on purpose:

- Retrieval searches the document **read so far** (chunks before the current one), with the
  package's embeddings (the embedded MiniLM or any LangChain ``Embeddings``); the reference
  builds a BM25 index over the whole document, unread chunks included, before reading.
- No ``<think>`` block: the embedded SmolLM2 has no thinking mode. The reference's
  "``STOP`` anywhere in the reply" rule stays.
- ``top_k`` is clamped to ``1..max_top_k`` (default 4: the reference's retriever at the paper's
  time took 4 passages whatever the call asked) and the history shown to PreThink is the last
  ``history_queries`` queries (ours: the prompt stays bounded at any length).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from ..agents.calls import acall_model, add_usage, call_model, positive_int
from ..agents.compiled_graph import node
from ..agents.constrained import decision_grammar
from ..agents.loading import context_window
from ..agents.prompts import FinalPromptStyle, fill_template
from ..agents.tokenizers import TokenCodec, chunk_text, resolve_tokenizer
from ..agents.users import UserContext
from ..baselines.embeddings import resolve_embeddings
from ..baselines.rag import top_k_by_cosine
from .memagent import (
    CHAT_MARKUP_TOKENS,
    MemAgentConfig,
    MemAgentGraph,
    MemAgentInput,
    MemAgentOutput,
    MemAgentState,
    MemAgentSteps,
    chunk_key,
    chunks_namespace,
)

UNITS_NAMESPACE = ("infmem", "units")
TOOL_NAME = "retrievesearch"
CALL_PREFIX = f"✿FUNCTION✿: {TOOL_NAME}\n✿ARGS✿: "  # Qwen-Agent's text form of a call (reference EVAL L505-541)
STOP = "STOP"
HISTORY_QUERY_TOKENS = 32  # ours: a past query as PreThink sees it (queries are a few words; this bounds the prompt)

# Qwen-Agent's function-calling system prompt as the reference renders it for PreThink (EVAL L374-434,
# Qwen-Agent 2f7415f), with the tool's description and top_k range made true of this graph.
TOOL_SYSTEM_PROMPT = """# Tools

## You have access to the following tools:

### retrievesearch

retrievesearch: Search over the context chunks read so far. Parameters: {parameters} Format the arguments as a JSON object.

## Insert the following command in your reply when you need to call N tools in parallel:

✿FUNCTION✿: The name of tool 1, should be one of [retrievesearch]
✿ARGS✿: The input of tool 1
✿FUNCTION✿: The name of tool 2
✿ARGS✿: The input of tool 2
...
✿FUNCTION✿: The name of tool N
✿ARGS✿: The input of tool N
✿RESULT✿: The result of tool 1
✿RESULT✿: The result of tool 2
...
✿RESULT✿: The result of tool N
✿RETURN✿: Reply based on tool results. Images need to be rendered as ![](url)"""

# TEMPLATE_CALL_OR_ANSWER, reference EVAL L29-70, verbatim (typos included).
PRETHINK_TEMPLATE = """
You are a Retrieval Planner.  

Your ONLY task is to decide whether to perform another retrieval using `retrievesearch`, or STOP retrieving.

You MUST NOT answer the QUESTION.  
Another model will use MEMORY to answer later.

Guidelines:
- Retrieval is cheap. Unless MEMORY clearly contains all essential information, you are encouraged to retrieve.
- You may retrieve multiple times. At each step, refine your search direction.
- Avoid repeating any previous queries in RETRIEVAL_HISTORY (unless meaningfully refined).

When deciding whether to retrieve again:
1. Break the QUESTION into specific sub-questions or information needs.
2. Compare these needs with what MEMORY already contains.
3. Identify which facts are still missing, uncertain, or incomplete.
4. If something important is missing, design a NEW search query focused only on that missing information.
   - You may explore related clues hinted in MEMORY.
   - Queries should be concise, specific, and actionable.
5. If MEMORY already contains all necessary information, choose to STOP.

If you choose retrieval, you MUST output a function call to `retrievesearch` with:
- a new `query` (different from RETRIEVAL_HISTORY unless refined),
- and a `top_k` suited to your confidence (small: focused; large: broad exploration).
- In early retrieval steps, you may exlore more documents.
- In later steps, focus on refining MEMORY.


ORIGINAL QUESTION:
{prompt}

<retrieval_history>
{retrieval_history}
</retrieval_history>



CURRENT MEMORY:
{memory}

"""

# TEMPLATE_RETREIVE_RECURRENT, reference EVAL L74-98, verbatim (typos included).
WRITE_TEMPLATE = """You are presented with a problem, a section of an article that may contain the answer to the problem, and a previous memory. Please read the provided section carefully and update the memory with the new information that helps to answer the problem.

the given section have two parts. One is reetrieved chunk, which are retrieved by given question. another is the recurrent chunk which are given recurrently. Both chunks might contain useful information, the retrieved chunk might have higher chance.



<problem>
{prompt}
</problem>

<retrieved_chunk>
{retrieve}
</retrieved_chunk>

<recurrent_chunk>
{chunk}
</recurrent_chunk>

<memory>
{memory}
</memory>


Updated memory:
"""

# The final answer: TEMPLATE_FINAL_BOXED (reference RL L630-641) and TEMPLATE_FINAL (EVAL L146-157), verbatim;
# they differ only in how the answer is asked for.
_FINAL_TEMPLATE = """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory and <how>.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
"""
FINAL_TEMPLATES: dict[str, str] = {
    "boxed": _FINAL_TEMPLATE.replace("<how>", "put the answer in \\boxed{{}}"),
    "answer_is": _FINAL_TEMPLATE.replace("<how>", 'format your response as follows "Therefore, the answer is (insert answer here)"'),
}

_CALL = re.compile(r"✿FUNCTION✿:\s*([^\n]*?)\s*\n\s*✿ARGS✿:\s*(.*?)(?=✿FUNCTION✿|✿RESULT✿|✿RETURN✿|\Z)", re.DOTALL)
Decision = Literal["stop", "retrieve", "none"]


@dataclass(frozen=True)
class InfMemConfig(MemAgentConfig):
    """InfMem's budgets on top of MemAgent's (defaults: the reference's evaluation loop, 8K-window sizes where it has none)."""

    prethink_tokens: int = 1024  # generation limit of a PreThink decision (reference: RECURRENT_MAX_NEW, 1024)
    unit_tokens: int = 500  # tokens of a retrievable passage (reference: RETRIEVE_CHUNK_SIZE, 500)
    default_top_k: int = 8  # top_k of a call that names none (reference: 8)
    max_top_k: int = 4  # most passages a call retrieves (reference at the paper's time: always 4)
    early_stop_after: int = 3  # consecutive STOP decisions that end the reading (reference: EARLY_STOP, 3)
    history_queries: int = 16  # past queries shown to PreThink (ours: the reference shows all)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("prethink_tokens", "unit_tokens", "default_top_k", "max_top_k", "early_stop_after", "history_queries"):
            positive_int(name, getattr(self, name))


class InfMemOutput(MemAgentOutput, total=False):
    """What a run returns: MemAgent's output plus InfMem's decisions."""

    retrieval_history: list[dict[str, Any]]  # every retrievesearch call: query, top_k and the chunk it came before
    retrievals: int  # how many calls retrieved (the length of retrieval_history)
    early_stop_chunk: int | None  # chunks read when the early stop fired; None when every chunk was read


class InfMemState(InfMemOutput, MemAgentState, total=False):
    stop_streak: int  # consecutive decisions that count toward the early stop
    decision: Decision  # the last PreThink decision
    retrieved: str  # passages for the next write ("" when none)
    units_indexed: int  # chunks whose passages are searchable


def _units_namespace(state: Any) -> tuple[str, ...]:
    return (state["document_owner"], *UNITS_NAMESPACE, state["document_id"])


def tool_parameters(config: InfMemConfig) -> dict[str, Any]:
    """The JSON schema of a ``retrievesearch`` call's arguments (the reference's, with this graph's ``top_k`` range)."""
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Concise search query focusing on key entities / concepts."},
            "top_k": {"type": "integer", "description": f"Number of chunks to retrieve (1-{config.max_top_k}).", "minimum": 1, "maximum": config.max_top_k},
        },
        "required": ["query", "top_k"],
    }


def parse_decision(reply: str, question: str, config: InfMemConfig) -> tuple[Decision, str, int]:
    """``(decision, query, top_k)`` from a PreThink reply, by the reference's rules (EVAL L437-541, L1072-1087):
    ``STOP`` anywhere stops; else the last ``retrievesearch`` call retrieves, its arguments falling back to the
    question and ``default_top_k`` when they do not parse; else nothing happens.

    >>> parse_decision('✿FUNCTION✿: retrievesearch\\n✿ARGS✿: {"query": "tidy-cat", "top_k": 9}', "q?", InfMemConfig())
    ('retrieve', 'tidy-cat', 4)
    >>> parse_decision("Memory has it. STOP", "q?", InfMemConfig())[0], parse_decision("hmm", "q?", InfMemConfig())[0]
    ('stop', 'none')
    """
    if STOP in reply:
        return "stop", "", 0
    calls = [args for name, args in _CALL.findall(reply) if name.strip() == TOOL_NAME]
    if not calls:
        return "none", "", 0
    text = calls[-1].strip()
    try:
        arguments = json.loads(text[: text.rfind("}") + 1])  # the reference cuts what follows the last brace
    except ValueError:
        arguments = {}
    arguments = arguments if isinstance(arguments, dict) else {}
    query = arguments.get("query")
    query = query.strip() if isinstance(query, str) and query.strip() else question
    top_k = arguments.get("top_k")
    top_k = top_k if isinstance(top_k, int) and not isinstance(top_k, bool) else config.default_top_k
    return "retrieve", query, min(max(top_k, 1), config.max_top_k)


class _InfMemSteps(MemAgentSteps):
    """MemAgent's chunking and answer plumbing, with InfMem's prompts, decisions and passages."""

    config: InfMemConfig

    def __init__(self, model: BaseChatModel, codec: TokenCodec, config: InfMemConfig, own_store: BaseStore, embeddings: Any):
        super().__init__(model, codec, config, own_store)
        if not (embeddings is None or isinstance(embeddings, (Embeddings, str, Path))):
            resolve_embeddings(embeddings)  # names the wrong type now
        self._embeddings_spec, self._embeddings = embeddings, None
        self.system = SystemMessage(TOOL_SYSTEM_PROMPT.replace("{parameters}", json.dumps(tool_parameters(config))))
        prethink: dict[str, Any] = {"max_tokens": config.prethink_tokens}
        if config.constrained_answer:  # a grammar-decoding backend: every decision parses
            count = lambda text: len(codec.encode_batch([text])[0])  # noqa: E731
            prethink["grammar"] = decision_grammar(STOP, CALL_PREFIX, tool_parameters(config), config.prethink_tokens, count)
        self.prethink_model = model.bind(**prethink)

    @property
    def embeddings(self) -> Embeddings:
        """Retrieval's embeddings, loaded at the first passage (a served graph's import stays cheap)."""
        if self._embeddings is None:
            self._embeddings = resolve_embeddings(self._embeddings_spec)
        return self._embeddings

    async def aembeddings(self) -> Embeddings:
        """:attr:`embeddings`, loaded off the event loop."""
        return self._embeddings or await asyncio.to_thread(lambda: self.embeddings)

    @staticmethod
    def _start(where: dict[str, str], num_chunks: int) -> dict[str, Any]:
        start = MemAgentSteps._start(where, num_chunks)
        return {**start, "retrieval_history": [], "retrievals": 0, "early_stop_chunk": None, "stop_streak": 0, "decision": "none", "retrieved": "",
                "units_indexed": 0}

    # prethink ---------------------------------------------------------------------
    def _history_text(self, state: InfMemState) -> str:
        """The reference's retrieval history (EVAL L985-991): its last ``history_queries`` calls, each query cut to
        ``HISTORY_QUERY_TOKENS`` tokens, so the PreThink prompt is bounded at any length."""
        history = state["retrieval_history"][-self.config.history_queries :]
        queries = self.codec.decode_batch([ids[:HISTORY_QUERY_TOKENS] for ids in self.codec.encode_batch([c["query"] for c in history])]) if history else []
        first = len(state["retrieval_history"]) - len(history)
        lines = [f"Current retrieval step: {state['chunks_read'] + 1}  Maximum allowed retrieval steps: {state['num_chunks']}"]
        lines += [f"Step {first + i + 1}: query={query!r}, top_k={call['top_k']}" for i, (query, call) in enumerate(zip(queries, history))]
        return "\n".join(lines)

    def _prethink_messages(self, state: InfMemState) -> list[BaseMessage]:
        text = fill_template(PRETHINK_TEMPLATE, prompt=state["question"], retrieval_history=self._history_text(state), memory=state["memory"])
        return [self.system, HumanMessage(text)]

    def _after_prethink(self, state: InfMemState, reply: BaseMessage) -> dict[str, Any]:
        decision, query, top_k = parse_decision(reply.text, state["question"], self.config)
        # The reference's counter (EVAL L1028-1068): a call resets it, a STOP adds one, a reply with neither restarts it at one.
        streak = state["stop_streak"] + 1 if decision == "stop" else 0 if decision == "retrieve" else 1
        update: dict[str, Any] = {"decision": decision, "stop_streak": streak, "usage": add_usage(state["usage"], reply)}
        if decision == "retrieve":
            update["retrieval_history"] = [*state["retrieval_history"], {"query": query, "top_k": top_k, "chunk": state["chunks_read"]}]
            update["retrievals"] = state["retrievals"] + 1
        if streak >= self.config.early_stop_after:
            update["early_stop_chunk"] = state["chunks_read"]
        return update

    def prethink(self, state: InfMemState) -> dict[str, Any]:
        reply = call_model(self.prethink_model, self._prethink_messages(state), f"PreThink before chunk {state['chunks_read']}", self.model)
        return self._after_prethink(state, reply)

    async def aprethink(self, state: InfMemState) -> dict[str, Any]:
        reply = await acall_model(self.prethink_model, self._prethink_messages(state), f"PreThink before chunk {state['chunks_read']}", self.model)
        return self._after_prethink(state, reply)

    # retrieve ---------------------------------------------------------------------
    def _unit_puts(self, state: InfMemState, index: int, vectors: list[list[float]], units: list[str]) -> list[PutOp]:
        namespace = _units_namespace(state)
        return [
            PutOp(namespace, f"{chunk_key(index)}-{i:04d}", {"text": unit, "vector": vector, "chunk": index}, index=False)
            for i, (unit, vector) in enumerate(zip(units, vectors))
        ]

    def _passages(self, state: InfMemState, items: list[Any], query_vector: list[float]) -> dict[str, Any]:
        if not items:  # nothing read yet: the write sees no passages
            return {"retrieved": ""}
        chosen, scores = top_k_by_cosine(query_vector, [item.value["vector"] for item in items], state["retrieval_history"][-1]["top_k"])
        ranked = [items[index] for index, _ in sorted(zip(chosen, scores), key=lambda pair: -pair[1])]  # best first, as the reference ranks
        return {"retrieved": "\n\n".join(f"[Retrieved #{rank}] {item.value['text']}" for rank, item in enumerate(ranked, 1))}

    def _units_per_chunk(self) -> int:
        """An upper bound on a chunk's passages (a chunk re-tokenized can run a few tokens over its budget)."""
        return -(-self.config.chunk_tokens // self.config.unit_tokens) + 1

    def _limit(self, state: InfMemState) -> int:
        """Enough search results for every passage of the chunks read so far."""
        return max(1, state["units_indexed"]) * self._units_per_chunk()

    def retrieve(self, state: InfMemState, store: BaseStore | None) -> dict[str, Any]:
        found = self._store(store).search(_units_namespace(state), limit=self._limit(state))
        items = [item for item in found if item.value["chunk"] < state["chunks_read"]]
        query_vector = self.embeddings.embed_query(state["retrieval_history"][-1]["query"]) if items else []
        return self._passages(state, items, query_vector)

    async def aretrieve(self, state: InfMemState, store: BaseStore | None) -> dict[str, Any]:
        found = await self._store(store).asearch(_units_namespace(state), limit=self._limit(state))
        items = [item for item in found if item.value["chunk"] < state["chunks_read"]]
        query_vector = await (await self.aembeddings()).aembed_query(state["retrieval_history"][-1]["query"]) if items else []
        return self._passages(state, items, query_vector)

    # update_memory ----------------------------------------------------------------
    def _write_messages(self, state: InfMemState, item: Any) -> list[BaseMessage]:
        chunk = self._chunk(state, item)
        text = fill_template(WRITE_TEMPLATE, prompt=state["question"], retrieve=state["retrieved"], chunk=chunk, memory=state["memory"])
        return [HumanMessage(text)]

    def _after_write(self, state: InfMemState, reply: BaseMessage) -> dict[str, Any]:
        return {**self._after_memory(state, reply), "retrieved": "", "units_indexed": state["chunks_read"] + 1}

    def update_memory(self, state: InfMemState, store: BaseStore | None) -> dict[str, Any]:
        store = self._store(store)
        item = store.get(chunks_namespace(state), chunk_key(state["chunks_read"]))
        reply = call_model(self.memory_model, self._write_messages(state, item), f"memory update for chunk {state['chunks_read']}", self.model)
        # The chunk just read becomes searchable for the next PreThink.
        units = chunk_text(item.value["text"], self.codec, self.config.unit_tokens)
        store.batch(self._unit_puts(state, state["chunks_read"], self.embeddings.embed_documents(units), units))
        return self._after_write(state, reply)

    async def aupdate_memory(self, state: InfMemState, store: BaseStore | None) -> dict[str, Any]:
        store = self._store(store)
        item = await store.aget(chunks_namespace(state), chunk_key(state["chunks_read"]))
        messages = self._write_messages(state, item)
        reply = await acall_model(self.memory_model, messages, f"memory update for chunk {state['chunks_read']}", self.model)
        units = await asyncio.to_thread(chunk_text, item.value["text"], self.codec, self.config.unit_tokens)
        vectors = await (await self.aembeddings()).aembed_documents(units)
        await store.abatch(self._unit_puts(state, state["chunks_read"], vectors, units))
        return self._after_write(state, reply)

    # answer -----------------------------------------------------------------------
    def _answer_messages(self, state: InfMemState) -> list[BaseMessage]:
        return [HumanMessage(fill_template(FINAL_TEMPLATES[self.config.final_prompt], prompt=state["question"], memory=state["memory"]))]

    def _after_answer(self, state: InfMemState, reply: BaseMessage) -> tuple[dict[str, Any], list[PutOp]]:
        update, deletes = super()._after_answer(state, reply)
        units = _units_namespace(state)
        deletes += [PutOp(units, f"{chunk_key(c)}-{i:04d}", None) for c in range(state["units_indexed"]) for i in range(self._units_per_chunk())]
        return update, deletes


def _after_chunking(state: InfMemState) -> Literal["prethink", "answer"]:
    return "prethink" if state["chunks_read"] < state["num_chunks"] else "answer"


def _after_prethink(state: InfMemState) -> Literal["retrieve", "update_memory", "answer"]:
    if state.get("early_stop_chunk") is not None:
        return "answer"
    return "retrieve" if state["decision"] == "retrieve" else "update_memory"


class InfMemGraph(MemAgentGraph):
    """A compiled InfMem graph: MemAgent's recursion sizing, resume and synchronous checkpoints, three steps a chunk.

    A run resumed after its store was lost gets its chunks back from the checkpoint (as MemAgent's)
    and the passages of the chunks it had read, embedded again, so retrieval finds what it found before.
    """

    graph_attributes = (*MemAgentGraph.graph_attributes, "infmem_steps")
    infmem_steps: _InfMemSteps
    steps_per_chunk = 3

    def _restore_chunks(self, values: dict[str, Any], config: Any) -> None:
        super()._restore_chunks(values, config)
        read, store, steps = values.get("units_indexed", 0), self.store, self.infmem_steps
        if not read or store is None or store.get(_units_namespace(values), f"{chunk_key(0)}-{0:04d}") is not None:
            return
        for index in range(read):
            item = store.get(chunks_namespace(values), chunk_key(index))
            if item is None:  # the chunks are gone too: the next step names the missing chunk
                return
            units = chunk_text(item.value["text"], steps.codec, steps.config.unit_tokens)
            store.batch(steps._unit_puts(values, index, steps.embeddings.embed_documents(units), units))


def _check_window(config: InfMemConfig, codec: TokenCodec, window: int | None, system: str) -> None:
    """Refuse budgets whose write, PreThink or answer call cannot fit the model's window (unknown window: no check)."""
    if window is None:
        return

    def tokens(text: str) -> int:
        return len(codec.encode_batch([text])[0]) + CHAT_MARKUP_TOKENS

    retrieved = config.max_top_k * (config.unit_tokens + 8)  # "[Retrieved #k] " and the blank line per passage
    write = tokens(fill_template(WRITE_TEMPLATE, prompt="", retrieve="", chunk="", memory="")) + config.chunk_tokens + retrieved + 2 * config.memory_tokens
    history = config.history_queries * (HISTORY_QUERY_TOKENS + 24)  # "Step N: query='...', top_k=K" around each query
    prethink = tokens(system) + tokens(PRETHINK_TEMPLATE) + history + config.memory_tokens + config.prethink_tokens
    answer = tokens(FINAL_TEMPLATES[config.final_prompt]) + config.memory_tokens + config.answer_tokens
    for what, need in (("a memory write (chunk, max_top_k passages, memory, reply)", write), ("a PreThink call (history, memory, reply)", prethink), ("the answer", answer)):
        if need > window:
            raise ValueError(f"{what} needs up to {need} tokens, more than the model's {window}-token window; lower the budgets")


def build_infmem_graph(
    model: BaseChatModel,
    *,
    chunk_tokens: int = 5000,
    memory_tokens: int = 1024,
    answer_tokens: int = 1024,
    prethink_tokens: int = 1024,
    unit_tokens: int = 500,
    max_top_k: int = 4,
    early_stop_after: int = 3,
    history_queries: int = 16,
    embeddings: Embeddings | str | Path | None = None,
    tokenizer: Any = None,
    final_prompt: FinalPromptStyle = "boxed",
    constrained_answer: bool | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    name: str = "infmem",
) -> InfMemGraph:
    """Build InfMem (PreThink -> Retrieve -> Write per chunk, early stop, answer) as a compiled LangGraph graph.

    Defaults are the reference code's evaluation loop (arXiv 2602.02704; ``UCMP13753/InfMem``):
    5000-token chunks, 1024-token replies, 500-token passages, 4 passages a retrieval, three
    ``STOP`` in a row to stop early. Those budgets need a long window (the paper's Qwen3 has
    32K and more); for the embedded 8K SmolLM2 pass smaller ones, e.g. ``chunk_tokens=1000,
    memory_tokens=128, answer_tokens=64, prethink_tokens=64, unit_tokens=250``.

    Args:
        model: any LangChain chat model.
        chunk_tokens: document tokens per chunk, as in :func:`~langgraph_memagent.build_memagent_graph`.
        memory_tokens: generation limit of a write, the only bound on the memory.
        answer_tokens: generation limit of the final answer.
        prethink_tokens: generation limit of a PreThink decision.
        unit_tokens: tokens of a retrievable passage of the chunks already read.
        max_top_k: most passages one retrieval returns (a call's ``top_k`` is clamped to it).
        early_stop_after: consecutive ``STOP`` decisions that end the reading.
        history_queries: past queries shown to PreThink.
        embeddings: retrieval's embeddings: a LangChain ``Embeddings``, a sentence-transformers
            model directory, or ``None`` for the embedded all-MiniLM-L6-v2.
        tokenizer: for exact chunking; defaults to the model's own (hosted models need one).
        final_prompt: ``"boxed"`` (the reference's RL prompt) or ``"answer_is"`` (its evaluation prompt).
        constrained_answer: decode PreThink decisions and the final answer under grammars, so a
            small model's decisions always parse; ``None``: where the model decodes grammars.
        checkpointer: any LangGraph checkpointer; enables resuming, as in :func:`~langgraph_memagent.build_memagent_graph`.
        store: where a run's chunks and passages live (default: an in-memory store; the parent's when nested and it has one).
        name: graph name (shown in traces and LangGraph servers).

    Returns:
        A compiled graph. Input ``{"question", "document"}``; output MemAgent's plus
        ``retrieval_history`` (every call's query, ``top_k`` and chunk) and ``early_stop_chunk``.

    Example:
        >>> from langgraph_memagent import build_infmem_graph, load_chat_model   # doctest: +SKIP
        >>> graph = build_infmem_graph(load_chat_model("smollm2-135m"), chunk_tokens=1000, memory_tokens=128,  # doctest: +SKIP
        ...                            answer_tokens=64, prethink_tokens=64, unit_tokens=250)
        >>> result = graph.invoke({"question": "What is the magic number?", "document": text})  # doctest: +SKIP
        >>> result["answer"], result["early_stop_chunk"], len(result["retrieval_history"])    # doctest: +SKIP
    """
    config = InfMemConfig(
        chunk_tokens, memory_tokens, answer_tokens, final_prompt, constrained_answer,
        prethink_tokens=prethink_tokens, unit_tokens=unit_tokens, max_top_k=max_top_k,
        early_stop_after=early_stop_after, history_queries=history_queries,
    )
    decodes_grammars = bool(getattr(model, "decodes_grammars", False))
    if config.constrained_answer and not decodes_grammars:
        raise ValueError(f"constrained_answer=True needs a model that decodes grammars (LocalChatModel, VLLMEngineChatModel); {type(model).__name__} does not")
    if config.constrained_answer is None:
        config = replace(config, constrained_answer=decodes_grammars)
    codec = resolve_tokenizer(tokenizer, model)
    own_store = store if store is not None else InMemoryStore()
    steps = _InfMemSteps(model, codec, config, own_store, embeddings)
    _check_window(config, codec, context_window(model), steps.system.text)
    builder = StateGraph(InfMemState, context_schema=UserContext, input_schema=MemAgentInput, output_schema=InfMemOutput)
    builder.add_node("chunk_document", node(steps.chunk_document, steps.achunk_document))
    builder.add_node("prethink", node(steps.prethink, steps.aprethink))
    builder.add_node("retrieve", node(steps.retrieve, steps.aretrieve))
    builder.add_node("update_memory", node(steps.update_memory, steps.aupdate_memory))
    builder.add_node("answer", node(steps.answer, steps.aanswer))
    builder.add_edge(START, "chunk_document")
    builder.add_conditional_edges("chunk_document", _after_chunking, ["prethink", "answer"])
    builder.add_conditional_edges("prethink", _after_prethink, ["retrieve", "update_memory", "answer"])
    builder.add_edge("retrieve", "update_memory")
    builder.add_conditional_edges("update_memory", _after_chunking, ["prethink", "answer"])
    builder.add_edge("answer", END)
    compiled = builder.compile(checkpointer=checkpointer, store=own_store, name=name)
    return InfMemGraph.from_compiled(compiled, memagent_config=config, memagent_codec=codec, infmem_steps=steps)


__all__ = ["InfMemConfig", "InfMemGraph", "build_infmem_graph", "parse_decision"]
