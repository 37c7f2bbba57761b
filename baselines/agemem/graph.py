"""One AgeMem stage as a LangGraph graph: content arrives message by message, the model takes tool-calling turns."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
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
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from pydantic import BaseModel, ValidationError

from ...agents.calls import NO_USAGE, TokenUsage, acall_model, add_usage, call_model, positive_int
from ...agents.compiled_graph import RecursionSizedGraph, node
from ...agents.loading import context_window, prompt_budget
from ...agents.tokenizers import TokenCodec, resolve_tokenizer
from ..sumer_prompts import SubmitAnswerArgs
from .context import (
    TOKENS_PER_MESSAGE,
    ContextEdit,
    ToolError,
    context_map,
    group_number,
    is_ours,
    message_groups,
    rendered_context,
    with_call_ids,
)
from .store import DEFAULT_NAMESPACE_ROOT, LongTermMemory, agemem_namespace, default_agemem_store, parse_memory_id
from .tools import (
    ANSWER_MODES,
    FORCE_ANSWER_PROMPT,
    FORCE_SUBMIT_PROMPT,
    RETRIEVE_REPLIES,
    STAGE_INSTRUCTIONS,
    STAGES,
    SUBMIT_ANSWER_INSTRUCTION,
    SUBMIT_TOOL,
    SYSTEM_PROMPT,
    TOOL_ARGS,
    WRITE_MODES,
    AddMemoryArgs,
    DeleteMemoryArgs,
    RetrieveMemoryArgs,
    Stage,
    SummarizeContextArgs,
    UpdateMemoryArgs,
    agemem_tools,
    line_choice_tools,
    span_choice_submit_tool,
    submit_answer_tool,
)


# -- state and context ----------------------------------------------------------------------------


class AgeMemContext(TypedDict, total=False):
    """The run's context: whose long-term memory this is (namespace ``(user_id, root)``, see :func:`agemem_namespace`)."""

    user_id: str  # the user (a served run's signed-in user needs none, and may name no other)
    episode: str  # a memory of its own within the user's, e.g. one question's (namespace ``(user_id, root, episode)``)


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
    response: str  # the last assistant text of the stage, or its submitted answer ("" when it ended on a tool turn)
    stage_turns: int  # assistant turns (model calls) in this stage
    tool_calls: dict[str, int]  # calls by tool name; "invalid" counts unparsable ones
    usage: TokenUsage
    context_tokens: int  # input tokens of the stage's last model call, as the model reported
    overflow_trims: int  # groups dropped because the context exceeded max_context_tokens
    stop_reason: Literal["replied", "submitted", "turn_limit"]
    arrivals: int  # messages delivered so far in this stage
    # Every tool call of the stage: stage, arrival (messages delivered before it), tool, status,
    # and the texts it touched (added, replaced, deleted, retrieved, or the characters it freed).
    operations: list[dict[str, Any]]


class AgeMemState(AgeMemOutput, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    incoming: list[str]
    reset_context: bool
    next_group: int
    message_turns: int  # turns since the last arrival


# -- the graph's steps ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AgeMemConfig:
    """Budgets of an AgeMem graph (defaults chosen so the embedded 135M model stays tractable on CPU)."""

    max_turns_per_message: int = 2  # assistant turns after each arriving message: one tool turn, then a text reply
    max_stage_turns: int = 32  # assistant turns per stage in total
    turn_tokens: int = 256  # generation limit of each turn (a few tool calls or a short answer)
    max_context_tokens: int | None = None  # oldest whole groups are dropped above this; None = never
    force_answer: bool = True  # in the answer stage, one tool-free call when the turns ran out without a text reply
    first_turn_tool_choice: str = "auto"  # the first turn after each message: "auto" (paper: the model decides) or "required"
    write_mode: str = "free"  # stage 1's first turn after each message: "free" (paper) or "line" (a forced add_memory of one of its lines)
    answer_mode: str = "free"  # stage 3: "free" (paper), "retrieve" (a forced retrieve_memory call first) or "retrieve-submit" (then a forced submit_answer)
    retrieve_reply: str = "scored"  # a retrieve_memory reply: "scored" (up to k items with ids and scores) or "best" (the best item's text alone)

    def __post_init__(self) -> None:
        for name in ("max_turns_per_message", "max_stage_turns", "turn_tokens"):
            positive_int(name, getattr(self, name))
        positive_int("max_context_tokens", self.max_context_tokens, optional=True)
        if self.first_turn_tool_choice not in ("auto", "required"):
            raise ValueError(f"first_turn_tool_choice must be 'auto' or 'required', got {self.first_turn_tool_choice!r}")
        if self.write_mode not in WRITE_MODES:
            raise ValueError(f"write_mode must be one of {list(WRITE_MODES)}, got {self.write_mode!r}")
        if self.answer_mode not in ANSWER_MODES:
            raise ValueError(f"answer_mode must be one of {list(ANSWER_MODES)}, got {self.answer_mode!r}")
        if self.retrieve_reply not in RETRIEVE_REPLIES:
            raise ValueError(f"retrieve_reply must be one of {list(RETRIEVE_REPLIES)}, got {self.retrieve_reply!r}")


class _AgeMemSteps:
    """Node functions; model calls have sync and async twins, tool work runs in a thread when async."""

    def __init__(self, model: BaseChatModel, store: BaseStore, embeddings: Embeddings | None, config: AgeMemConfig,
                 tokenizer: Any, namespace_root: str):
        self.model = model
        self.config = config
        self.tool_model = model.bind_tools(agemem_tools()).bind(max_tokens=config.turn_tokens)
        # A small model left to choose never called a memory tool (0 items in 16 of 16 LoCoMo
        # questions): with "required" the first turn after each message must be a call.
        self.first_turn_model = (
            model.bind_tools(agemem_tools(), tool_choice="required").bind(max_tokens=config.turn_tokens)
            if config.first_turn_tool_choice == "required" else self.tool_model
        )
        self.retrieve_model = (
            model.bind_tools(agemem_tools(), tool_choice={"type": "function", "function": {"name": "retrieve_memory"}}).bind(
                max_tokens=config.turn_tokens)
            if config.answer_mode != "free" else None
        )
        self.submits = config.answer_mode in ("retrieve-submit", "retrieve-extract")
        # "retrieve-submit" binds its tool once; "retrieve-extract" binds one per call, its enum being that call's spans.
        self.submit_model = self._bind_submit(submit_answer_tool()) if config.answer_mode == "retrieve-submit" else None
        self.answer_model = model.bind(max_tokens=config.turn_tokens)
        self.force_prompt = FORCE_SUBMIT_PROMPT if self.submits else FORCE_ANSWER_PROMPT
        self.instructions = {**STAGE_INSTRUCTIONS, **({"answer": SUBMIT_ANSWER_INSTRUCTION} if self.submits else {})}
        self.store = store
        self.embeddings = embeddings
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
        return LongTermMemory(self.store, agemem_namespace(runtime, self.namespace_root), self.embeddings)

    # start_stage ------------------------------------------------------------------------------
    def start_stage(self, state: AgeMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        agemem_namespace(runtime, self.namespace_root)  # a missing context fails here, before any model call
        stage, incoming = state.get("stage"), state.get("incoming", [])
        if stage not in STAGES:
            raise ValueError(f"input 'stage' must be one of {list(STAGES)}, got {stage!r}")
        if not isinstance(incoming, list) or not all(isinstance(text, str) and text.strip() for text in incoming):
            raise ValueError(f"input 'incoming' must be a list of non-empty strings (the messages that arrive), got {incoming!r}")
        messages = [] if state.get("reset_context") else list(state.get("messages", []))
        updates: list[BaseMessage] = []
        if state.get("reset_context") and state.get("messages"):
            updates.append(RemoveMessage(id=REMOVE_ALL_MESSAGES))
        next_group = 1 + max((group_number(group.group_id) for group in message_groups(messages) if is_ours(group.messages[0])), default=0)
        if not all(is_ours(message) for message in messages):
            # Messages from elsewhere get group ids; ids change, so the whole list is rewritten in order.
            renamed = []
            for group in message_groups(messages):
                group_id = group.group_id if is_ours(group.messages[0]) else f"g{next_group}"
                next_group += 0 if is_ours(group.messages[0]) else 1
                renamed.append(group.messages[0].model_copy(update={"id": group_id}))
                renamed.extend(m.model_copy(update={"id": f"{group_id}-r{i}"}) for i, m in enumerate(group.messages[1:], 1))
            updates = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *renamed]
        return {
            "messages": updates, "incoming": list(incoming), "reset_context": False, "next_group": next_group,
            "stage_turns": 0, "message_turns": 0, "tool_calls": {}, "usage": dict(NO_USAGE), "context_tokens": 0,
            "overflow_trims": 0, "response": "", "stop_reason": "replied", "arrivals": 0, "operations": [],
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
            "arrivals": state.get("arrivals", 0) + 1,
        }

    # agent ------------------------------------------------------------------------------------
    def _count(self, system: str, messages: Sequence[BaseMessage]) -> int:
        texts = [system, *(message.text + "".join(str(c["args"]) for c in getattr(message, "tool_calls", [])) for message in messages)]
        return sum(len(ids) + TOKENS_PER_MESSAGE for ids in self.codec.encode_batch(texts))

    def _prompt(self, state: AgeMemState) -> tuple[list[BaseMessage], list[BaseMessage], int]:
        """The prompt, the removals that fit it into the budget, and how many groups they drop."""
        messages = list(state["messages"])
        instruction = self.instructions[state["stage"]]
        removals: list[BaseMessage] = []
        trims = 0
        if self.config.max_context_tokens is not None:
            groups = message_groups(messages)
            # The newest group (what just arrived, or the last tool results) always stays.
            while len(groups) > 1 and self._count(SYSTEM_PROMPT.format(instruction=instruction, groups=context_map(messages)),
                                                  rendered_context(messages)) > self.config.max_context_tokens:
                dropped = groups.pop(0)
                removals.extend(RemoveMessage(id=str(message.id)) for message in dropped.messages)
                messages = messages[len(dropped.messages):]
                trims += 1
        system = SystemMessage(SYSTEM_PROMPT.format(instruction=instruction, groups=context_map(messages)))
        return [system, *rendered_context(messages)], removals, trims

    def _after_call(self, state: AgeMemState, reply: BaseMessage, removals: list[BaseMessage], trims: int) -> dict[str, Any]:
        group_id = f"g{state['next_group']}"
        message = with_call_ids(reply, group_id)
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

    def _turn_model(self, state: AgeMemState) -> Any:
        if state["message_turns"] > 0:
            return self._submit_model(state) if self.submits and state["stage"] == "answer" else self.tool_model
        if self.config.write_mode == "line" and state["stage"] == "build":
            # The message just delivered is the last one; its lines are the only contents this call may store.
            tools = line_choice_tools(state["messages"][-1].text)
            return self.model.bind_tools(tools, tool_choice={"type": "function", "function": {"name": "add_memory"}}).bind(
                max_tokens=self.config.turn_tokens)
        if self.retrieve_model is not None and state["stage"] == "answer":
            return self.retrieve_model
        return self.first_turn_model

    def _bind_submit(self, tool: dict[str, Any]) -> Any:
        return self.model.bind_tools([tool], tool_choice="required").bind(max_tokens=self.config.turn_tokens)

    def _submit_model(self, state: AgeMemState) -> Any:
        """The forced ``submit_answer`` call; under "retrieve-extract" its answer is a span of stage 3's tool replies."""
        if self.submit_model is not None:
            return self.submit_model
        question_at = max(i for i, message in enumerate(state["messages"]) if isinstance(message, HumanMessage))
        replies = [message.text for message in state["messages"][question_at:] if isinstance(message, ToolMessage)]
        return self._bind_submit(span_choice_submit_tool("\n".join(replies)))

    def _force_model(self, state: AgeMemState) -> Any:
        return self._submit_model(state) if self.submits else self.answer_model

    def agent(self, state: AgeMemState) -> dict[str, Any]:
        prompt, removals, trims = self._prompt(state)
        reply = call_model(self._turn_model(state), prompt, f"AgeMem {state['stage']} turn", self.model)
        return self._after_call(state, reply, removals, trims)

    async def aagent(self, state: AgeMemState) -> dict[str, Any]:
        prompt, removals, trims = await asyncio.to_thread(self._prompt, state)
        reply = await acall_model(self._turn_model(state), prompt, f"AgeMem {state['stage']} turn", self.model)
        return self._after_call(state, reply, removals, trims)

    # force_answer -----------------------------------------------------------------------------
    def _force_prompt(self, state: AgeMemState) -> tuple[HumanMessage, list[BaseMessage]]:
        request = HumanMessage(self.force_prompt, id=f"g{state['next_group']}")
        instruction = self.instructions["answer"]
        messages = [*state["messages"], request]
        system = SystemMessage(SYSTEM_PROMPT.format(instruction=instruction, groups=context_map(messages)))
        return request, [system, *rendered_context(messages)]

    def _after_force(self, state: AgeMemState, request: HumanMessage, reply: BaseMessage) -> dict[str, Any]:
        group_id = f"g{state['next_group'] + 1}"
        reported = getattr(reply, "usage_metadata", None) or {}
        # The reply is text, or under the submitting answer modes the submit_answer call that ends the
        # stage; any other tool-call fields would be unanswerable here.
        submit = [call for call in getattr(reply, "tool_calls", None) or () if call["name"] == SUBMIT_TOOL][:1] if self.submits else []
        message = AIMessage(content=reply.content, tool_calls=submit, id=group_id, usage_metadata=reported or None,
                            response_metadata=getattr(reply, "response_metadata", {}))
        return {
            "messages": [request, message],
            "next_group": state["next_group"] + 2,
            "usage": add_usage(state["usage"], reply),
            "context_tokens": reported.get("input_tokens", 0),
        }

    def force_answer(self, state: AgeMemState) -> dict[str, Any]:
        request, prompt = self._force_prompt(state)
        return self._after_force(state, request, call_model(self._force_model(state), prompt, "AgeMem forced answer", self.model))

    async def aforce_answer(self, state: AgeMemState) -> dict[str, Any]:
        request, prompt = self._force_prompt(state)
        return self._after_force(state, request, await acall_model(self._force_model(state), prompt, "AgeMem forced answer", self.model))

    # tools ------------------------------------------------------------------------------------
    def tools(self, state: AgeMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        original = list(state["messages"])
        call_message = original[-1]
        assert isinstance(call_message, AIMessage), "the tools step follows an assistant turn"
        memory = self.memory(runtime)
        edit = ContextEdit(original, str(call_message.id))
        counts = dict(state.get("tool_calls", {}))
        operations = list(state.get("operations", []))
        replies: list[ToolMessage] = []
        for call in call_message.tool_calls:
            counts[call["name"]] = counts.get(call["name"], 0) + 1
            touched: dict[str, Any] = {}
            try:
                content, status = self._run_tool(call["name"], call["args"], memory, edit, touched), "success"
            except ToolError as error:
                content, status = f"error: {error}", "error"
            operations.append({"stage": state["stage"], "arrival": state.get("arrivals", 0), "tool": call["name"], "status": status, **touched})
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
        return {"messages": [*edit.updates(original), *replies], "tool_calls": counts, "operations": operations}

    async def atools(self, state: AgeMemState, runtime: Runtime[Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.tools, state, runtime)

    @staticmethod
    def _args(name: str, args: Any) -> BaseModel:
        schema = TOOL_ARGS.get(name)
        if schema is None:
            raise ToolError(f"there is no tool {name!r}; the tools are: {', '.join(TOOL_ARGS)}")
        try:
            return schema.model_validate(args if isinstance(args, dict) else {})
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors())
            expected = ", ".join(schema.model_fields)
            raise ToolError(f"bad arguments for {name} ({problems}); it takes: {expected}") from None

    def _run_tool(self, name: str, raw_args: Any, memory: LongTermMemory, edit: ContextEdit, touched: dict[str, Any]) -> str:
        """The tool's reply; ``touched`` receives the texts it changed or returned, for AgeMem's reward."""
        args = self._args(name, raw_args)
        if isinstance(args, AddMemoryArgs):
            touched["content"] = args.content.strip()
            return f"added {memory.add(args.content.strip(), [tag.strip() for tag in args.tags if tag.strip()])}"
        if isinstance(args, (UpdateMemoryArgs, DeleteMemoryArgs)):
            memory_id = parse_memory_id(args.memory_id)
            item = None if memory_id is None else memory.get(memory_id)
            if item is None:
                existing = ", ".join(item.key for item in memory.items()) or "none yet"
                raise ToolError(f"no memory item {args.memory_id!r}; the items are: {existing}")
            touched["previous"] = str(item.get("content", ""))
            if isinstance(args, UpdateMemoryArgs):
                memory.update(memory_id, args.content.strip())
                touched["content"] = args.content.strip()
                return f"updated {memory_id}"
            memory.delete(memory_id)
            return f"deleted {memory_id}"
        if isinstance(args, RetrieveMemoryArgs):
            best_only = self.config.retrieve_reply == "best"
            hits = memory.search(args.query, 1 if best_only else args.k)
            touched["retrieved"] = [str(value.get("content", "")) for _, value, _ in hits]
            if not hits:
                return "long-term memory is empty"
            if best_only:
                return str(hits[0][1].get("content", ""))
            lines = []
            for memory_id, value, score in hits:
                tags = f" [{', '.join(value.get('tags', []))}]" if value.get("tags") else ""
                shown = f" (score {score:.2f})" if score is not None else ""
                lines.append(f"{memory_id}{shown}: {value.get('content', '')}{tags}")
            return "\n".join(lines)
        before = sum(len(message.text) for message in edit.messages)
        reply = edit.summarize(args.group_ids, args.summary.strip()) if isinstance(args, SummarizeContextArgs) else edit.filter(args.group_ids)
        touched["freed_chars"] = before - sum(len(message.text) for message in edit.messages)
        return reply

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
        if submitted_answer(last) is not None:
            return END
        return "tools" if last.tool_calls or last.invalid_tool_calls else self._more_or_end(state)

    def after_tools(self, state: AgeMemState) -> str:
        if state["message_turns"] < self.config.max_turns_per_message and state["stage_turns"] < self.config.max_stage_turns:
            return "agent"
        return self._more_or_end(state)

    @staticmethod
    def finish(state: AgeMemState) -> dict[str, Any]:
        """A stage ends "replied" on a text-only assistant reply, "submitted" on a ``submit_answer`` call."""
        last = state["messages"][-1] if state.get("messages") else None
        submitted = submitted_answer(last)
        if submitted is not None:
            return {"response": submitted, "stop_reason": "submitted"}
        replied = isinstance(last, AIMessage) and not (last.tool_calls or last.invalid_tool_calls)
        return {"response": last.text if replied else "", "stop_reason": "replied" if replied else "turn_limit"}


def submitted_answer(message: Any) -> str | None:
    """The answer of ``message``'s ``submit_answer`` call (stage 3 under ``answer_mode="retrieve-submit"``), else None.

    >>> submitted_answer(AIMessage("", tool_calls=[{"name": "submit_answer", "args": {"answer": " Oslo "}, "id": "c1"}]))
    'Oslo'
    >>> submitted_answer(AIMessage("Oslo")) is None
    True
    """
    calls = [call for call in message.tool_calls if call["name"] == SUBMIT_TOOL] if isinstance(message, AIMessage) else []
    if not calls:
        return None
    try:  # SUMER's schema reads a bare number as the answer's text, as there
        return SubmitAnswerArgs.model_validate({"answer": calls[0]["args"].get("answer")}).answer.strip()
    except ValidationError:
        return ""


class AgeMemGraph(RecursionSizedGraph):
    """A compiled AgeMem stage graph that sizes its recursion limit from the stage's content.

    A stage takes one step per arriving message and two per assistant turn; the limit is
    raised to cover that bound, so a stage can never fail with ``GraphRecursionError``.
    """

    graph_attributes = ("agemem_config", "agemem_namespace_root")
    agemem_config: AgeMemConfig
    agemem_namespace_root: str

    def steps_needed(self, input: Any, config: RunnableConfig) -> int:
        incoming = input.get("incoming", []) if isinstance(input, dict) else []
        arrivals = len(incoming) if isinstance(incoming, list) else 0
        turns = min(self.agemem_config.max_stage_turns, max(1, arrivals) * self.agemem_config.max_turns_per_message)
        return arrivals + 2 * turns + 10


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
    first_turn_tool_choice: str = "auto",
    write_mode: str = "free",
    answer_mode: str = "free",
    retrieve_reply: str = "scored",
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
            ``overflow_trims`` (AgeMem penalizes overflow); ``None`` never drops. Where the
            model's window is known it must leave ``turn_tokens`` for the reply.
        tokenizer: for ``max_context_tokens``; default the model's own (local backends).
        force_answer: in the answer stage, when the turns run out on a tool turn, make one
            tool-free call asking for the answer.
        first_turn_tool_choice: ``"auto"`` (the AgeMem paper: the model decides) or
            ``"required"``: the first turn after each arriving message must call a memory
            tool (decoded under the tools' grammar on the local backends), later turns may reply.
        write_mode: ``"free"`` (the AgeMem paper: the model writes what it stores) or
            ``"line"`` (ours, a writing curriculum for small models): in the build stage the
            first turn after each message is a forced ``add_memory`` whose content is one
            line of that message, verbatim (:func:`.tools.line_choice_tools`), so the model
            learns which line to keep before it learns to write.
        answer_mode: ``"free"`` (the AgeMem paper: the model decides how to answer) or
            ``"retrieve"`` (ours, an answering curriculum for small models): in the answer
            stage the first turn after the question is a forced ``retrieve_memory`` call whose
            query the model writes, so what it learns is to answer from what it retrieved.
            ``"retrieve-submit"`` (ours) follows that call with a forced ``submit_answer`` call
            (SUMER's tool, asking for a short answer), as the stage's later turns and as the
            forced answer: the stage ends ``"submitted"`` with its argument as the response.
            ``"retrieve-extract"`` (ours) narrows that argument to a span of up to five words of
            the stage's tool replies, or yes or no (:func:`.tools.span_choice_submit_tool`).
        retrieve_reply: ``"scored"`` (default): a ``retrieve_memory`` call returns up to its ``k``
            items, one per line with id, score and tags; ``"best"`` (ours, for small models): it
            returns the best item's content alone, so the answer turn reads one short line.
        namespace_root: second label of the long-term namespace ``(user_id, namespace_root)``.
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
                          turn_tokens=turn_tokens, max_context_tokens=max_context_tokens, force_answer=force_answer,
                          first_turn_tool_choice=first_turn_tool_choice, write_mode=write_mode, answer_mode=answer_mode,
                          retrieve_reply=retrieve_reply)
    prompt_budget(context_window(model), max_context_tokens, turn_tokens)  # a prompt and its turn must fit the window
    if max_context_tokens is not None and tokenizer is None and getattr(type(model), "tokenizer", None) is None:
        resolve_tokenizer(None, model)  # no tokenizer to count the context with: fail now, with how to pass one
    if store is None:
        store = default_agemem_store(embeddings)
    elif not isinstance(store, BaseStore):
        raise TypeError(f"store must be a LangGraph BaseStore, got {type(store).__name__}")
    steps = _AgeMemSteps(model, store, embeddings, config, tokenizer, namespace_root)
    builder = StateGraph(AgeMemState, context_schema=AgeMemContext, input_schema=AgeMemInput, output_schema=AgeMemOutput)
    builder.add_node("start_stage", node(steps.start_stage))
    builder.add_node("deliver", node(steps.deliver))
    builder.add_node("agent", node(steps.agent, steps.aagent))
    builder.add_node("tools", node(steps.tools, steps.atools))
    builder.add_node("force_answer", node(steps.force_answer, steps.aforce_answer))
    builder.add_node("finish", node(steps.finish))
    builder.add_edge(START, "start_stage")
    ends = {END: "finish"}
    builder.add_conditional_edges("start_stage", steps.after_start, {"deliver": "deliver", **ends})
    builder.add_conditional_edges("deliver", steps.after_deliver, {"agent": "agent", "deliver": "deliver", "force_answer": "force_answer", **ends})
    builder.add_conditional_edges("agent", steps.after_agent, {"tools": "tools", "deliver": "deliver", "force_answer": "force_answer", **ends})
    builder.add_conditional_edges("tools", steps.after_tools, {"agent": "agent", "deliver": "deliver", "force_answer": "force_answer", **ends})
    builder.add_edge("force_answer", "finish")
    builder.add_edge("finish", END)
    compiled = builder.compile(checkpointer=checkpointer, store=store, name=name)
    return AgeMemGraph.from_compiled(compiled, agemem_config=config, agemem_namespace_root=namespace_root)
