"""AgeMem's three-stage rollout (build memory; reset, distractors; question) and its question-answering graph."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from ...agents.answers import last_boxed_content
from ...agents.calls import NO_USAGE, AnswerOutput, QuestionInput, TokenUsage, positive_int, validated_inputs
from ...agents.compiled_graph import RecursionSizedGraph, node
from ...agents.loading import context_window, prompt_budget
from ...agents.tokenizers import TokenCodec, chunk_text, resolve_tokenizer
from ...agents.users import field_of
from .graph import AgeMemContext, AgeMemGraph, build_agemem_graph
from .store import LongTermMemory, agemem_namespace
from .tools import Stage


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
    operations: list[dict[str, Any]] = field(default_factory=list)  # every tool call of every stage, in order
    arrivals: dict[str, int] = field(default_factory=dict)  # messages delivered per stage


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
    final = stages[next(reversed(stages))]
    response = final["response"] if "answer" in stages else ""  # a build stage's text is not an answer
    return AgeMemProtocolResult(
        response=response,
        answer=_answer_of(response),
        usage=usage,
        stage_turns={stage: output["stage_turns"] for stage, output in stages.items()},
        tool_calls=counts,
        context_tokens=final["context_tokens"],
        overflow_trims=sum(output["overflow_trims"] for output in stages.values()),
        stop_reasons={stage: output["stop_reason"] for stage, output in stages.items()},
        transcripts={stage: list(output["messages"]) for stage, output in stages.items()},
        operations=[operation for output in stages.values() for operation in output.get("operations", [])],
        arrivals={stage: output.get("arrivals", 0) for stage, output in stages.items()},
    )


def _stage_inputs(stage1: Sequence[str], stage2: Sequence[str], question: str, build_only: bool = False) -> list[tuple[Stage, dict[str, Any]]]:
    for name, texts in (("stage1", stage1), ("stage2", stage2)):
        if isinstance(texts, str) or not all(isinstance(text, str) and text.strip() for text in texts):
            raise ValueError(f"{name} must be a list of non-empty strings (messages that arrive), got {texts!r}")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be a non-empty string, got {question!r}")
    build: tuple[Stage, dict[str, Any]] = ("build", {"stage": "build", "incoming": list(stage1), "messages": [], "reset_context": True})
    if build_only:
        return [build]
    # Nothing arriving in stage 1 means the memory was given (the QA graph's ``memory``): no build stage to run.
    return [
        *([build] if stage1 else []),
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
    build_only: bool = False,
) -> AgeMemProtocolResult:
    """Run AgeMem's three-stage rollout with a graph from :func:`build_agemem_graph`.

    (1) ``stage1`` arrives message by message into an empty context (long-term memory is
    built); (2) the context is reset, ``stage2`` (distractors) arrives; (3) ``question``
    arrives in stage 2's context and the model answers. Long-term memory (the store
    namespace of ``context["user_id"]``) persists across stages. The transcript is
    carried here, so the graph needs no checkpointer. ``build_only`` runs stage 1 alone (no
    distractors, no question, no answer): a writing curriculum's rollout. An empty ``stage1``
    skips stage 1: the memory already holds what it would have stored.

    Example:
        >>> result = run_agemem_protocol(graph, stage1=["Ann lives in Oslo."],   # doctest: +SKIP
        ...     stage2=["Unrelated prose."], question="Where does Ann live?", context={"user_id": "u1"})
        >>> result.answer   # doctest: +SKIP
        'Oslo'
    """
    stages: dict[str, dict[str, Any]] = {}
    for stage, payload in _stage_inputs(stage1, stage2, question, build_only):
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
    build_only: bool = False,
) -> AgeMemProtocolResult:
    """Async twin of :func:`run_agemem_protocol`."""
    stages: dict[str, dict[str, Any]] = {}
    for stage, payload in _stage_inputs(stage1, stage2, question, build_only):
        if stage == "answer":
            payload["messages"] = stages["distract"]["messages"]
        stages[stage] = await graph.ainvoke(payload, config, context=dict(context))
    return _combine(stages)


# -- the QA graph for the comparison harness ------------------------------------------------------


class AgeMemQAInput(QuestionInput, total=False):
    """The package contract plus optional raw turns (LoCoMo) and distractors."""

    turns: list[dict[str, Any]]  # LoCoMo's sample.meta["turns"]: one stage-1 message per session
    distractors: list[str]  # stage-2 messages (default: essay prose)
    memory: list[str]  # items long-term memory holds from the start; given, they replace stage 1


class AgeMemQAOutput(AnswerOutput, total=False):
    """AnswerOutput plus what the rollout did."""

    stage_turns: dict[str, int]  # assistant turns per stage: build, distract, answer
    tool_calls: dict[str, int]  # calls by tool name over all stages
    memory_item_count: int  # long-term items when the question was answered
    memory_items: list[str]  # their contents (for AgeMem's memory reward)
    context_tokens: int  # input tokens of the last model call
    overflow_trims: int
    stop_reasons: dict[str, str]
    memory_operations: list[dict[str, Any]]  # every tool call: stage, arrival, tool, status, texts touched
    arrivals: dict[str, int]  # messages delivered per stage
    context_chars: dict[str, int]  # characters of each stage's final context
    final_context: str  # the answer stage's final context, as text


class AgeMemQAState(AgeMemQAOutput, total=False):
    document: str
    turns: list[dict[str, Any]]
    distractors: list[str]
    memory: list[str]


def locomo_turn_line(turn: Mapping[str, Any]) -> str:
    """One LoCoMo turn as the line AgeMem reads: speaker, text and any shared image's caption.

    >>> locomo_turn_line({"speaker": "Ann", "text": "Look!", "blip_caption": "a dog"})
    'Ann: Look! [shares a dog]'
    """
    caption = turn.get("blip_caption")
    return f"{turn['speaker']}: {turn['text']}" + (f" [shares {caption}]" if caption else "")


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
        sessions[session].append(locomo_turn_line(turn))
    return ["\n".join([headers[session], *lines]) for session, lines in sessions.items()]


def essay_distractors(seed_text: str, messages: int, sentences: int) -> list[str]:
    """``messages`` blocks of ``sentences`` consecutive essay sentences, starting where ``seed_text`` hashes.

    >>> len(essay_distractors("Where is Ann?", 2, 3)), essay_distractors("q", 1, 2) == essay_distractors("q", 1, 2)
    (2, True)
    """
    from ...agents.essays import essay_sentences, essay_slice

    start = int(hashlib.sha256(seed_text.encode()).hexdigest(), 16) % len(essay_sentences())
    return [" ".join(essay_slice(start + i * sentences, sentences)) for i in range(messages)]


class _AgeMemQASteps:
    def __init__(self, agent: AgeMemGraph, model: BaseChatModel, tokenizer: Any, chunk_tokens: int,
                 distractor_messages: int, distractor_sentences: int, build_only: bool):
        self.agent = agent
        self.build_only = build_only
        self.model = model
        self.tokenizer = tokenizer
        self.chunk_tokens = chunk_tokens
        self.distractor_messages = distractor_messages
        self.distractor_sentences = distractor_sentences
        self._codec: TokenCodec | None = None

    def _stages(self, state: AgeMemQAState) -> tuple[str, list[str], list[str], list[str]]:
        """The question, stage 1's and stage 2's messages, and the items memory holds from the start."""
        question, document = validated_inputs(state)
        turns, memory = state.get("turns"), state.get("memory")
        if memory is not None:
            if not isinstance(memory, list) or not memory or not all(isinstance(item, str) and item.strip() for item in memory):
                raise ValueError(f"input 'memory' must be a non-empty list of non-empty strings (items memory holds), got {memory!r}")
            if self.build_only:
                raise ValueError("input 'memory' replaces stage 1, and this graph runs stage 1 alone (build_only): give one or the other")
            stage1 = []
        elif turns:
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
        return question, stage1, list(distractors), list(memory or [])

    @staticmethod
    def _context(runtime: Runtime[Any]) -> tuple[dict[str, Any], bool]:
        """The user's memory when the context names the user, else a fresh episode's (cleared afterwards)."""
        context = runtime.context
        user_id = field_of(context, "user_id")
        if user_id is None:
            return {"episode": f"qa-{uuid.uuid4().hex}"}, True
        return {"user_id": user_id}, False

    def _output(self, question: str, result: AgeMemProtocolResult, memory: LongTermMemory, temporary: bool) -> dict[str, Any]:
        items = [str(item.value.get("content", "")) for item in memory.items()]
        if temporary:
            memory.clear()
        return {
            "question": question, "answer": result.answer, "response": result.response, "usage": result.usage,
            "stage_turns": result.stage_turns, "tool_calls": result.tool_calls, "memory_item_count": len(items),
            "memory_items": items, "context_tokens": result.context_tokens, "overflow_trims": result.overflow_trims,
            "stop_reasons": result.stop_reasons, "document": "", "memory_operations": result.operations,
            "arrivals": result.arrivals, "final_context": "\n".join(message.text for message in result.transcripts.get("answer", [])),
            "context_chars": {stage: sum(len(message.text) for message in messages) for stage, messages in result.transcripts.items()},
        }

    def _given_memory(self, runtime: Runtime[Any], context: dict[str, Any], items: list[str]) -> LongTermMemory:
        """The long-term memory the stages will use (as the stage graph finds it), holding ``items``."""
        namespace = agemem_namespace(runtime.override(context=context), self.agent.agemem_namespace_root)
        memory = LongTermMemory(self.agent.store, namespace)
        memory.add_many(items)
        return memory

    def run(self, state: AgeMemQAState, runtime: Runtime[Any]) -> dict[str, Any]:
        question, stage1, stage2, items = self._stages(state)
        context, temporary = self._context(runtime)
        memory = self._given_memory(runtime, context, items)
        result = run_agemem_protocol(self.agent, stage1=stage1, stage2=stage2, question=question, context=context, build_only=self.build_only)
        return self._output(question, result, memory, temporary)

    async def arun(self, state: AgeMemQAState, runtime: Runtime[Any]) -> dict[str, Any]:
        question, stage1, stage2, items = await asyncio.to_thread(self._stages, state)
        context, temporary = self._context(runtime)
        memory = await asyncio.to_thread(self._given_memory, runtime, context, items)
        result = await arun_agemem_protocol(self.agent, stage1=stage1, stage2=stage2, question=question, context=context,
                                            build_only=self.build_only)
        return await asyncio.to_thread(self._output, question, result, memory, temporary)


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
    first_turn_tool_choice: str = "auto",
    write_mode: str = "free",
    answer_mode: str = "free",
    retrieve_reply: str = "scored",
    build_only: bool = False,
    name: str = "agemem_qa",
) -> CompiledStateGraph:
    """AgeMem's three-stage rollout as a question-answering graph with the package contract.

    Stage 1 receives the document: with ``turns`` (LoCoMo's ``sample.meta["turns"]``) one
    message per session (LoCoMo: ~27), otherwise ``chunk_tokens``-token chunks; with
    ``memory`` (a list of items) long-term memory holds those items from the start and
    stage 1 is skipped, so the answer is measured from a known memory. Stage 2
    receives ``distractors`` or, by default, ``distractor_messages`` blocks of
    ``distractor_sentences`` essay sentences (:mod:`~langgraph_memagent.agents.essays`,
    related prose the question does not need). Stage 3 receives the question.

    Long-term memory lives under the run context's ``user_id`` when one is given (it
    persists); otherwise under a fresh per-run id that is cleared after the answer, so
    questions never see each other's memory.

    Args:
        model: a chat model with ``bind_tools``.
        store: as in :func:`build_agemem_graph`.
        embeddings: as in :func:`build_agemem_graph`.
        max_turns_per_message: as in :func:`build_agemem_graph`.
        max_stage_turns: as in :func:`build_agemem_graph`.
        turn_tokens: as in :func:`build_agemem_graph`.
        force_answer: as in :func:`build_agemem_graph`.
        first_turn_tool_choice: as in :func:`build_agemem_graph`.
        write_mode: as in :func:`build_agemem_graph`.
        answer_mode: as in :func:`build_agemem_graph`.
        retrieve_reply: as in :func:`build_agemem_graph` (the defaults of these are chosen for the
            embedded 135M model on CPU; the AgeMem paper gives none).
        tokenizer: cuts the document into stage-1 chunks (not needed with ``turns``) and
            counts the context; default the model's own (local backends).
        chunk_tokens: tokens per stage-1 message for plain documents (default 512).
        distractor_messages: the default stage-2 content: messages.
        distractor_sentences: the default stage-2 content: sentences per message.
        max_context_tokens: context budget (see :func:`build_agemem_graph`); default for a
            model run in this process (``LocalChatModel``, ``vllm-engine:``) its window minus
            ``turn_tokens``, at most 4096; for a served model whose window is known (its
            LangChain profile: ``vllm:`` models read it from the server, others from
            ``compare --context-window``) that window minus
            ``turn_tokens``, counted with ``tokenizer``; unlimited otherwise. A budget that
            leaves no room for the turn is refused.
        build_only: run stage 1 alone, with no distractors and no question, so the output has no
            answer (ours: the rollout of a memory-writing curriculum, scored by what it stored).
        name: graph name.

    Returns:
        A compiled graph. Input ``{"question", "document"}`` plus optional ``turns``,
        ``distractors`` and ``memory``; output ``answer``, ``response``, ``usage``, ``question``,
        ``stage_turns``, ``tool_calls``, ``memory_item_count``, ``memory_items``,
        ``context_tokens``, ``overflow_trims``, ``stop_reasons``, and for AgeMem's reward
        ``memory_operations``, ``arrivals``, ``context_chars`` and ``final_context``.

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> graph = build_agemem_qa_graph(load_chat_model("smollm2-135m"))   # doctest: +SKIP
        >>> result = graph.invoke({"question": "Where does Ann live?",         # doctest: +SKIP
        ...                        "document": "Ann lives in Oslo. Bo lives in Rome."})
        >>> sorted(result["stage_turns"])   # doctest: +SKIP
        ['answer', 'build', 'distract']
    """
    for option, value in (("chunk_tokens", chunk_tokens), ("distractor_sentences", distractor_sentences)):
        positive_int(option, value)
    positive_int("distractor_messages", distractor_messages, minimum=0)
    # The CPU cap is for models this process runs (they carry a tokenizer); a served model's known window is its own bound.
    runs_here = getattr(model, "tokenizer", None) is not None
    max_context_tokens = prompt_budget(context_window(model), max_context_tokens, turn_tokens, cap=LOCAL_CONTEXT_TOKENS if runs_here else None)
    agent = build_agemem_graph(
        model, store=store, embeddings=embeddings, max_turns_per_message=max_turns_per_message,
        max_stage_turns=max_stage_turns, turn_tokens=turn_tokens, max_context_tokens=max_context_tokens,
        tokenizer=tokenizer, force_answer=force_answer, first_turn_tool_choice=first_turn_tool_choice, write_mode=write_mode,
        answer_mode=answer_mode, retrieve_reply=retrieve_reply, checkpointer=False,
        name=f"{name}_stage",
    )
    steps = _AgeMemQASteps(agent, model, tokenizer, chunk_tokens, distractor_messages, distractor_sentences, build_only)
    builder = StateGraph(AgeMemQAState, context_schema=AgeMemContext, input_schema=AgeMemQAInput, output_schema=AgeMemQAOutput)
    builder.add_node("rollout", node(steps.run, steps.arun))
    builder.add_edge(START, "rollout")
    builder.add_edge("rollout", END)
    return RecursionSizedGraph.from_compiled(builder.compile(name=name))
