"""SUMER-style search over raw memory: a tool loop that searches a bank of raw messages and answers.

SUMER ("Search in Uncompressed Memory via Experience Replay") keeps every raw message of a
conversation as one memory item and lets the policy search it with two tools until it
submits an answer. The defaults and episode rules are the paper's: tools ``search_memory`` (semantic or keyword, filters by
speaker and session, each hit with the 2 messages before and after it) and
``submit_answer``; at most 5 tool calls per turn; the episode ends on ``submit_answer``,
after 20 assistant turns, when the context window is exceeded, or on a turn without any
tool call (that turn's text is then the answer).

Graph: ``ingest -> agent -> tools -> agent -> ... -> [force_answer]``.

* ``ingest`` puts the conversation's turns (``turns`` input, one raw message per item) or
  the document's chunks into the :class:`~langgraph_memagent.baselines.memory_bank.MemoryBank`
  and clears them from the state, so checkpoints never carry the document. Ingestion is
  idempotent: many questions about one conversation embed it once.
* ``agent`` makes one assistant turn with both tools bound.
* ``tools`` answers every tool call of that turn with exactly one ``ToolMessage``, so the
  transcript stays valid for OpenAI-format APIs: calls beyond ``max_parallel_calls`` are
  kept in the assistant message but answered with a "not executed" error reply (the model
  learns about the cap and what it said stays what it said); malformed calls
  (``invalid_tool_calls``) and invalid arguments get a readable error reply the model can
  act on.
* ``force_answer`` (only when the turn cap or the context window ended the episode without
  an answer, and ``force_answer=True``) makes one tool-free call: a single user message with
  the question and the search results found so far (oldest dropped first when they would
  not fit), asking for a ``\\boxed{}`` answer, as DSPy's ReAct extracts an answer when its
  iteration cap is hit; or, with ``forced_answer_call="submit"``, asking for a ``submit_answer``
  call (the only tool bound, its call required), whose argument is the answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from typing import Annotated, Any, Literal, Sequence, get_args

from langchain_core.embeddings import Embeddings
from typing_extensions import TypedDict
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from pydantic import ValidationError

from ..agents.answers import extract_answer
from ..agents.calls import NO_USAGE, AnswerOutput, QuestionInput, acall_model, add_usage, call_model, positive_int
from ..agents.compiled_graph import RecursionSizedGraph, node
from ..agents.loading import context_window, prompt_budget
from ..agents.prompts import FinalPromptStyle
from ..agents.tokenizers import TokenCodec, encode_long, optional_tokenizer
from ..agents.users import UserContext, owner_label
from .memory_bank import SUMER_CONTEXT, MemoryBank
from .memory_index import MemoryGroup
from .sumer_prompts import (
    SEARCH_TOOL,
    SUBMIT_TOOL,
    QueryStyle,
    SearchMemoryArgs,
    SearchMode,
    SubmitAnswerArgs,
    forced_answer_template,
    sumer_system_prompt,
    sumer_tools,
)


ToolChoice = Literal["auto", "required"]
ForcedAnswerCall = Literal["text", "submit"]
SearchReply = Literal["echo", "plain"]
AnswerRule = Literal["none", "yes-no"]  # the keys of ANSWER_RULES
StopReason = Literal["submitted", "turn_limit", "context_overflow", "no_tool_call"]

# Without a tokenizer, text is counted at this many characters per token until the model
# reports usage (a common rule of thumb for English with BPE tokenizers).
CHARS_PER_TOKEN = 4
# The update when even the bare forced-answer prompt exceeds the window: no call, no answer.
_NO_ROOM: dict[str, Any] = {"answer": None, "forced_answer": False}
# Graph steps outside the turn loop: input, ingest, force_answer, and slack.
_FIXED_STEPS = 5


class SearchRecord(TypedDict):
    """One executed search: what was asked and the message ids of the hits (best first)."""

    mode: SearchMode
    query: str | list[str]
    speaker: str | None
    session: int | None
    k: int
    hits: list[str]


class SumerInput(QuestionInput, total=False):
    """The package contract plus, optionally, the conversation's raw turns and its id.

    ``turns``: message dicts as ``evals.loaders.load_locomo`` puts in ``sample.meta["turns"]``
    (``text`` and optional ``speaker``, ``session``, ``date_time``, ``dia_id``,
    ``blip_caption``). Without them the document is chunked into the bank.
    ``conversation_id``: the bank's id for the conversation (default: a hash of the content).
    ``found``: search replies given before the episode (e.g. a reading curriculum's evidence),
    shown to the forced answer ahead of the episode's own results.
    """

    turns: list[dict[str, Any]]
    conversation_id: str
    found: list[str]


class SumerOutput(AnswerOutput, total=False):
    """What a run returns: the shared contract plus how the search went."""

    conversation_id: str
    turns_used: int  # assistant turns of the tool loop (the forced answer call is not one)
    tool_calls: int  # tool calls executed (dropped and malformed ones are not)
    rejected_tool_calls: int  # calls that parsed but were not run: bad arguments, unknown tool, over the per-turn cap
    invalid_tool_calls: int  # calls that did not parse (the model got an error reply)
    stop_reason: StopReason
    forced_answer: bool  # True when the answer came from the tool-free final call
    searches: list[SearchRecord]


class SumerState(SumerOutput, total=False):
    document: str  # input only; cleared by ingest
    turns: list[dict[str, Any]]  # input only; cleared by ingest
    found: list[str]  # search replies given with the input, for the forced answer
    messages: Annotated[list[AnyMessage], add_messages]
    source: str  # "a conversation" or "a document", for the forced answer's prompt
    context_tokens: int  # the next prompt's size so far (counted, or reported by the model)


def conversation_key(turns: Sequence[dict[str, Any]] | None, document: str, *, chunk_tokens: int) -> str:
    """A stable bank id for a conversation (from its turns) or a document (and how it is chunked).

    The same content always gets the same id, so asking many questions ingests it once.

    >>> conversation_key([{"speaker": "Ann", "text": "Hi"}], "ignored", chunk_tokens=200)
    'conv-585c37c60ba82cb4895b'
    >>> conversation_key(None, "A document.", chunk_tokens=200) != conversation_key(None, "A document.", chunk_tokens=100)
    True
    """
    if turns:
        content = json.dumps(list(turns), sort_keys=True, ensure_ascii=False, default=str)
        prefix = "conv"
    else:
        content = json.dumps([document, chunk_tokens], ensure_ascii=False)
        prefix = "doc"
    return f"{prefix}-{hashlib.sha256(content.encode('utf-8')).hexdigest()[:20]}"


def _overview(turns: Sequence[dict[str, Any]]) -> str:
    """A few facts the model needs to filter well: who speaks, how many sessions, which dates."""
    speakers = sorted({str(turn["speaker"]) for turn in turns if turn.get("speaker")})
    sessions = sorted({turn["session"] for turn in turns if isinstance(turn.get("session"), int)})
    dates = [turn["date_time"] for turn in turns if turn.get("date_time")]
    lines = []
    if speakers:
        lines.append(f"Speakers: {', '.join(speakers)}.")
    if sessions:
        lines.append(f"Sessions: {sessions[0]} to {sessions[-1]}" + (f" ({dates[0]} to {dates[-1]})." if dates else "."))
    return "\n\n" + "\n".join(lines) if lines else ""


def _prompt_text(message: BaseMessage) -> str:
    """The text of ``message`` that a prompt carries, tool calls included."""
    calls = getattr(message, "tool_calls", None) or []
    invalid = getattr(message, "invalid_tool_calls", None) or []
    parts = [message.text]
    parts += [json.dumps({"name": call["name"], "arguments": call["args"]}, ensure_ascii=False) for call in calls]
    parts += [str(call.get("args") or "") for call in invalid]
    return "\n".join(part for part in parts if part)


def _validation_message(error: ValidationError) -> str:
    problems = []
    for detail in error.errors():
        where = ".".join(str(part) for part in detail["loc"]) or "arguments"
        problems.append(f"argument {where!r}: {detail['msg']} (got {detail.get('input')!r})")
    return "; ".join(problems)


class _SumerSteps:
    def __init__(
        self,
        model: BaseChatModel,
        bank: MemoryBank,
        codec: TokenCodec | None,
        *,
        max_turns: int,
        max_parallel_calls: int,
        max_context_tokens: int | None,
        force_answer: bool,
        forced_answer_call: ForcedAnswerCall,
        turn_tokens: int,
        answer_tokens: int,
        chunk_tokens: int,
        final_prompt: FinalPromptStyle,
        tool_choice: ToolChoice,
        search_reply: SearchReply,
        query_style: QueryStyle,
        answer_rule: AnswerRule,
    ):
        self.model = model
        self.echo_query = search_reply == "echo"
        self.query_style = query_style
        tools = sumer_tools(bank.context, query_style)
        try:
            self.agent_model = model.bind_tools(tools, tool_choice=tool_choice).bind(max_tokens=turn_tokens)
        except NotImplementedError as error:
            raise TypeError(f"SUMER needs a chat model with tool calling: {type(model).__name__}.bind_tools is not implemented") from error
        if forced_answer_call == "submit":
            self.answer_model = model.bind_tools([tools[1]], tool_choice="required").bind(max_tokens=turn_tokens)
        else:
            self.answer_model = model.bind(max_tokens=answer_tokens)
        self.bank = bank
        self.codec = codec
        self.max_turns = max_turns
        self.max_parallel_calls = max_parallel_calls
        self.max_context_tokens = max_context_tokens
        self.force_answer = force_answer
        self.chunk_tokens = chunk_tokens
        self.final_prompt = final_prompt
        self.tools_tokens = self.count(json.dumps(tools))
        submit = forced_answer_call == "submit"
        self.forced_answer_call = forced_answer_call
        self.forced_template = forced_answer_template(forced_answer_call, answer_rule)
        # A submit call's prompt also carries the submit tool's schema: counted once, here.
        self.forced_tools_tokens = self.count(json.dumps(tools[1])) if submit else 0

    # counting ------------------------------------------------------------------------------
    def count(self, text: str) -> int:
        """Tokens of ``text`` under the tokenizer; an estimate from its length without one."""
        if not text:
            return 0
        if self.codec is not None:
            return len(encode_long(text, self.codec))
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def _overflows(self, context_tokens: int) -> bool:
        return self.max_context_tokens is not None and context_tokens > self.max_context_tokens

    # ingest ----------------------------------------------------------------------------------
    def ingest(self, state: SumerState, runtime: Runtime[Any]) -> dict[str, Any]:
        question, document, turns = state.get("question"), state.get("document"), state.get("turns")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"input 'question' must be a non-empty string, got {question!r}")
        found = state.get("found") or []
        if not isinstance(found, list) or not all(isinstance(text, str) for text in found):
            raise ValueError(f"input 'found' must be a list of strings (search replies), got {found!r:.80}")
        if turns is not None and not isinstance(turns, list):
            raise ValueError(f"input 'turns' must be a list of message dicts, got {type(turns).__name__}")
        if not turns and (not isinstance(document, str) or not document.strip()):
            shown = document if not isinstance(document, str) else document[:40]
            raise ValueError(f"input 'document' must be a non-empty string when no 'turns' are given, got {shown!r}")
        conversation_id = state.get("conversation_id")
        if conversation_id is None:
            conversation_id = conversation_key(turns, document or "", chunk_tokens=self.chunk_tokens)
        elif not isinstance(conversation_id, str) or not conversation_id.strip():
            raise ValueError(f"input 'conversation_id' must be a non-empty string without '.', got {conversation_id!r}")
        owner = owner_label(runtime)
        if turns:
            self.bank.ingest(turns, conversation_id=conversation_id, owner=owner)
            source, items, overview = "a long conversation", "its raw messages", _overview(turns)
        else:
            self.bank.ingest_document(document, conversation_id=conversation_id, owner=owner, chunk_tokens=self.chunk_tokens,
                                      tokenizer=self.codec)
            source, items, overview = "a long document", "its passages (there are no speakers or sessions)", ""
        system = sumer_system_prompt(
            source=source,
            items=items,
            max_parallel_calls=self.max_parallel_calls,
            max_turns=self.max_turns,
            context=self.bank.context,
            overview=overview,
            query_style=self.query_style,
        )
        opening = [SystemMessage(system), HumanMessage(f"Question: {question}")]
        context_tokens = self.tools_tokens + sum(self.count(_prompt_text(message)) for message in opening)
        update: dict[str, Any] = {
            "document": "",
            "turns": [],
            "conversation_id": conversation_id,
            "messages": opening,
            "source": "a conversation" if turns else "a document",
            "context_tokens": context_tokens,
            "usage": NO_USAGE,
            "turns_used": 0,
            "tool_calls": 0,
            "rejected_tool_calls": 0,
            "invalid_tool_calls": 0,
            "searches": [],
            "answer": None,
            "response": "",
            "forced_answer": False,
            "found": found,
        }
        if self._overflows(context_tokens):
            update["stop_reason"] = "context_overflow"
        elif self.max_turns == 0:
            update["stop_reason"] = "turn_limit"  # no search: the forced answer reads ``found`` alone
        return update

    async def aingest(self, state: SumerState, runtime: Runtime[Any]) -> dict[str, Any]:
        # Embedding the conversation is CPU work: keep it off the event loop.
        return await asyncio.to_thread(self.ingest, state, runtime)

    # agent -----------------------------------------------------------------------------------
    def _after_turn(self, state: SumerState, reply: BaseMessage) -> dict[str, Any]:
        reported = reply.usage_metadata or {}
        counted = state["context_tokens"] + self.count(_prompt_text(reply))
        # The next prompt holds this prompt and this reply: their reported size is a floor.
        floor = reported.get("input_tokens", 0) + reported.get("output_tokens", 0)
        update: dict[str, Any] = {
            "messages": [reply],
            "usage": add_usage(state["usage"], reply),
            "turns_used": state["turns_used"] + 1,
            "context_tokens": max(counted, floor),
            "response": reply.text,
        }
        if not reply.tool_calls and not reply.invalid_tool_calls:
            text = reply.text.strip()
            update["stop_reason"] = "no_tool_call"
            update["answer"] = extract_answer(text, self.final_prompt) or text or None
        return update

    def agent(self, state: SumerState) -> dict[str, Any]:
        step = f"SUMER turn {state['turns_used'] + 1}"
        return self._after_turn(state, call_model(self.agent_model, state["messages"], step, self.model))

    async def aagent(self, state: SumerState) -> dict[str, Any]:
        step = f"SUMER turn {state['turns_used'] + 1}"
        return self._after_turn(state, await acall_model(self.agent_model, state["messages"], step, self.model))

    # tools -----------------------------------------------------------------------------------
    def _search(self, args: dict[str, Any], state: SumerState, owner: str) -> tuple[str, SearchRecord | None]:
        try:
            request = SearchMemoryArgs.model_validate(args)
        except ValidationError as error:
            return f"Error: {SEARCH_TOOL} was not run: {_validation_message(error)}. Fix the arguments and call it again.", None
        speaker = request.speaker
        query = request.query if isinstance(request.query, str) else [word for word in request.query if word.strip()]
        try:
            if request.mode == "semantic":
                text = query if isinstance(query, str) else " ".join(query)
                groups = self.bank.semantic_search(
                    text, conversation_id=state["conversation_id"], owner=owner, k=request.k, speaker=speaker, session=request.session
                )
            else:
                groups = self.bank.keyword_search(
                    query, conversation_id=state["conversation_id"], owner=owner, k=request.k, speaker=speaker, session=request.session
                )
        except ValueError as error:
            return f"Error: {SEARCH_TOOL} was not run: {error}", None
        record: SearchRecord = {
            "mode": request.mode,
            "query": query,
            "speaker": speaker,
            "session": request.session,
            "k": request.k,
            "hits": [group.hit.item["message_id"] for group in groups],
        }
        return render_results(request.mode, query, groups, echo_query=self.echo_query), record

    def _submit(self, args: dict[str, Any]) -> tuple[str, str | None]:
        try:
            answer = SubmitAnswerArgs.model_validate(args).answer.strip()
        except ValidationError as error:
            return f"Error: the answer was not accepted: {_validation_message(error)}. Call {SUBMIT_TOOL} again.", None
        if not answer:
            return f"Error: the answer was empty. Call {SUBMIT_TOOL} with a non-empty answer.", None
        return "Answer submitted.", answer

    def tools(self, state: SumerState, runtime: Runtime[Any]) -> dict[str, Any]:
        reply = state["messages"][-1]
        if not isinstance(reply, AIMessage):
            raise TypeError(f"the tools step expects the last message to be the assistant's turn, got {type(reply).__name__}")
        replies: list[BaseMessage] = []
        notes: list[str] = []  # replies to calls without an id, which no tool message can answer

        def reply_to(call_id: str | None, name: str | None, content: str, ok: bool) -> None:
            if call_id:
                replies.append(ToolMessage(content, tool_call_id=call_id, name=name or "unknown", status="success" if ok else "error"))
            else:
                notes.append(f"{name or 'tool call'}: {content}")

        searches = list(state["searches"])
        executed, answer = 0, None
        calls = reply.tool_calls
        for index, call in enumerate(calls):
            ok = False
            if index >= self.max_parallel_calls:
                content = (
                    f"Error: not executed: at most {self.max_parallel_calls} tool calls are run per turn and this turn made "
                    f"{len(calls)}; repeat this call in your next turn if you still need it."
                )
            elif answer is not None:
                content = "Error: not executed: the answer was already submitted in this turn."
            elif call["name"] == SEARCH_TOOL:
                content, record = self._search(call["args"], state, owner_label(runtime))
                if record is not None:
                    searches.append(record)
                    ok = True
            elif call["name"] == SUBMIT_TOOL:
                content, answer = self._submit(call["args"])
                ok = answer is not None
            else:
                content = f"Error: unknown tool {call['name']!r}; the tools are {SEARCH_TOOL!r} and {SUBMIT_TOOL!r}."
            executed += ok
            reply_to(call.get("id"), call["name"], content, ok)
        for call in reply.invalid_tool_calls:
            content = (
                f"Error: your call could not be read: {call.get('error') or 'malformed call'}. "
                f"Call {SEARCH_TOOL} or {SUBMIT_TOOL} again with JSON arguments."
            )
            reply_to(call.get("id"), call.get("name"), content, False)
        # OpenAI-format transcripts need the tool replies right after the assistant turn: notes go last.
        if notes:
            replies.append(HumanMessage("\n".join(notes)))
        context_tokens = state["context_tokens"] + sum(self.count(_prompt_text(message)) for message in replies)
        update: dict[str, Any] = {
            "messages": replies,
            "searches": searches,
            "tool_calls": state["tool_calls"] + executed,
            "rejected_tool_calls": state.get("rejected_tool_calls", 0) + len(calls) - executed,
            "invalid_tool_calls": state["invalid_tool_calls"] + len(reply.invalid_tool_calls),
            "context_tokens": context_tokens,
        }
        if answer is not None:
            update.update(stop_reason="submitted", answer=answer, response=answer)
        elif state["turns_used"] >= self.max_turns:
            update["stop_reason"] = "turn_limit"
        elif self._overflows(context_tokens):
            update["stop_reason"] = "context_overflow"
        return update

    async def atools(self, state: SumerState, runtime: Runtime[Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.tools, state, runtime)

    # forced answer ---------------------------------------------------------------------------
    def _forced_prompt(self, state: SumerState) -> str | None:
        """The tool-free answer prompt with the newest search results that fit; ``None`` if nothing fits."""
        source = state["source"]
        found = state.get("found", []) + [
            m.text for m in state["messages"] if isinstance(m, ToolMessage) and m.name == SEARCH_TOOL and m.status == "success"
        ]
        found = list(dict.fromkeys(found))  # a repeated search adds nothing the first did not
        budget = None
        if self.max_context_tokens is not None:
            bare = self.forced_template.format(source=source, prompt=state["question"], memory="(nothing was found)")
            budget = self.max_context_tokens - self.count(bare) - self.forced_tools_tokens
            if budget < 0:
                return None
        # Newest results first into the budget: the last searches are the most refined.
        kept: list[str] = []
        for text in reversed(found):
            if budget is not None:
                cost = self.count(text + "\n\n")
                if cost > budget:
                    break
                budget -= cost
            kept.insert(0, text)
        memory = "\n\n".join(kept) if kept else "(nothing was found)"
        return self.forced_template.format(source=source, prompt=state["question"], memory=memory)

    def _after_forced(self, state: SumerState, reply: BaseMessage) -> dict[str, Any]:
        update = {"usage": add_usage(state["usage"], reply), "response": reply.text, "forced_answer": True}
        if self.forced_answer_call == "text":
            return {**update, "answer": extract_answer(reply.text, self.final_prompt)}
        # The grammar of a required call admits only submit_answer; a backend without one may still
        # reply in text or with bad arguments, which gives no answer.
        calls = [call for call in reply.tool_calls if call["name"] == SUBMIT_TOOL]
        answer = self._submit(calls[0]["args"])[1] if calls else None
        return {**update, "answer": answer, "response": answer or reply.text}

    def force(self, state: SumerState) -> dict[str, Any]:
        prompt = self._forced_prompt(state)
        if prompt is None:
            return dict(_NO_ROOM)
        return self._after_forced(state, call_model(self.answer_model, [HumanMessage(prompt)], "SUMER forced answer", self.model))

    async def aforce(self, state: SumerState) -> dict[str, Any]:
        prompt = await asyncio.to_thread(self._forced_prompt, state)
        if prompt is None:
            return dict(_NO_ROOM)
        reply = await acall_model(self.answer_model, [HumanMessage(prompt)], "SUMER forced answer", self.model)
        return self._after_forced(state, reply)

    # routing ---------------------------------------------------------------------------------
    def next_step(self, state: SumerState) -> Literal["agent", "tools", "force_answer", "__end__"]:
        stop = state.get("stop_reason")
        if stop is None:
            # An assistant turn with calls goes to the tools; tool replies (or the opening) to the agent.
            return "tools" if isinstance(state["messages"][-1], AIMessage) else "agent"
        if stop in ("turn_limit", "context_overflow") and self.force_answer:
            return "force_answer"
        return END


def render_results(mode: str, query: str | list[str], groups: list[MemoryGroup], *, echo_query: bool = True) -> str:
    """A search's tool reply: each group numbered, its hit line marked with ``>``, or advice when nothing matched.

    The first line names the mode and the query unless ``echo_query`` is false.

    >>> render_results("semantic", "dog name", [])
    "No memories found for semantic search 'dog name'. Try other words or keyword mode."
    >>> render_results("keyword", ["dog"], [], echo_query=False)
    'No memories found. Try other keywords, fewer keywords or semantic mode.'
    """
    shown = query if isinstance(query, str) else " ".join(query)
    searched = f" for {mode} search {shown!r}" if echo_query else ""
    if not groups:
        advice = "Try other keywords, fewer keywords or semantic mode." if mode == "keyword" else "Try other words or keyword mode."
        return f"No memories found{searched}. {advice}"
    blocks = [f"Match {number} of {len(groups)}:\n{group.render()}" for number, group in enumerate(groups, 1)]
    return f"{len(groups)} matches{searched} (the matching line is marked with >):\n\n" + "\n\n".join(blocks)


class SumerGraph(RecursionSizedGraph):
    """A compiled SUMER graph whose recursion limit always covers ``max_turns`` (two steps a turn)."""

    graph_attributes = ("sumer_steps_needed",)
    sumer_steps_needed: int

    def steps_needed(self, input: Any, config: RunnableConfig) -> int:
        return self.sumer_steps_needed


def build_sumer_graph(
    model: BaseChatModel,
    *,
    bank: MemoryBank | None = None,
    store: BaseStore | None = None,
    embeddings: Embeddings | None = None,
    search_context: int | None = None,
    max_turns: int = 20,
    max_parallel_calls: int = 5,
    max_context_tokens: int | None = None,
    force_answer: bool = True,
    forced_answer_call: ForcedAnswerCall = "text",
    tokenizer: Any = None,
    turn_tokens: int = 1024,
    answer_tokens: int = 1024,
    chunk_tokens: int = 200,
    final_prompt: FinalPromptStyle = "boxed",
    tool_choice: ToolChoice = "auto",
    search_reply: SearchReply = "echo",
    query_style: QueryStyle = "free",
    answer_rule: AnswerRule = "none",
    checkpointer: BaseCheckpointSaver | None = None,
    name: str = "sumer",
) -> SumerGraph:
    """Build the SUMER-style search agent (search raw memory with tools, then submit) as a compiled graph.

    Defaults are the SUMER paper's episode rules: at most 20 assistant turns, at most 5
    tool calls per turn, each hit shown with the 2 messages before and after it (the
    bank's ``context=2``).

    Args:
        model: any LangChain chat model that implements ``bind_tools`` (``ChatOpenAI``
            against ``vllm serve --enable-auto-tool-choice``, the embedded local model, ...).
        bank: the memory bank to search; share one between graphs and runs so a
            conversation is embedded once. Default: ``MemoryBank(store, embeddings=embeddings)``.
        store: LangGraph store for the default bank (default: an in-memory store).
        embeddings: LangChain ``Embeddings`` for the default bank (default: the embedded
            all-MiniLM-L6-v2).
        search_context: messages shown before and after each search hit (default: the bank's;
            SUMER: 2); the tool's description and the system prompt say how many.
        max_turns: assistant turns before the episode is cut (SUMER: 20); 0 answers at once
            (the forced answer, over the input's ``found`` replies).
        max_parallel_calls: tool calls run per turn (SUMER: 5); later calls of the same
            turn get a "not executed" tool reply.
        max_context_tokens: prompt budget in tokens; when the next prompt would exceed it
            the episode ends with ``stop_reason="context_overflow"``. Counted with
            ``tokenizer`` (or the model's own), otherwise at 4 characters per token; the
            prompt and completion tokens the model reports are always a floor. Default:
            the model's window minus ``max(turn_tokens, answer_tokens)`` where the window is
            known (local models; a larger budget is refused), else unlimited (servers
            enforce their own window).
        force_answer: when the turn cap or the window ends the episode without an answer,
            make one more call for it (``True``) or return ``answer=None``.
        forced_answer_call: how that call asks: ``"text"`` (tool-free, a ``\\boxed{}`` reply, as
            DSPy's ReAct at its iteration cap) or ``"submit"`` (only ``submit_answer`` bound and its
            call required, limited to ``turn_tokens``; the call's argument is the answer, so a
            small model that names the answer in prose without the box still gives one).
        tokenizer: counts context tokens and chunks documents (default: the model's own,
            for local backends; none for server models).
        turn_tokens: generation limit of one assistant turn.
        answer_tokens: generation limit of the forced answer (MemAgent's 1024).
        chunk_tokens: tokens per memory item when a plain document (no ``turns``) is
            ingested.
        final_prompt: how a text answer is extracted (``"boxed"`` or ``"answer_is"``).
        tool_choice: ``"auto"`` (SUMER: the model may answer in text, which ends the episode)
            or ``"required"`` (every turn calls a tool; on the local backends each call decodes
            under the tools' grammar, so a small model searches and submits instead of chatting).
        search_reply: the first line of a search's reply: ``"echo"`` names the mode and the query
            (ours; the paper does not say), ``"plain"`` gives the number of matches alone. A
            135M policy that writes its query as a guessed answer copies an echoed query into
            its answer instead of reading the matches.
        query_style: what the prompts ask a query to be: ``"free"`` (the SUMER paper) or
            ``"question"`` (ours: the question's own words, in the system prompt's rules and the
            query's description; a 135M policy left free queries with a guessed answer or the
            tool's name).
        answer_rule: a rule the forced answer's prompt adds before the problem: ``"none"`` or
            ``"yes-no"`` (ours: "answer Yes or No" to a yes/no question; untrained, the 135M policy
            rarely says "no", so training had no "no" to reward).
        checkpointer: any LangGraph checkpointer (the document never enters checkpoints).
        name: graph name.

    Returns:
        A compiled graph. Input ``{"question", "document"}`` plus optional ``turns`` (raw
        messages, e.g. LoCoMo's ``sample.meta["turns"]``), ``conversation_id`` and ``found``; output
        ``answer``, ``response``, ``usage``, ``question``, ``conversation_id``,
        ``turns_used``, ``tool_calls``, ``rejected_tool_calls``, ``invalid_tool_calls``, ``stop_reason``, ``forced_answer`` and ``searches``.
        The bank keeps each user's conversations apart: run it with ``context={"user_id": "alice"}``
        (served: the signed-in user; neither: ``"anonymous"``; see :mod:`langgraph_memagent.agents.users`).

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> from langgraph_memagent.evals.loaders import load_locomo
        >>> sample = load_locomo("locomo_conv30.json")[0]                           # doctest: +SKIP
        >>> graph = build_sumer_graph(load_chat_model("smollm2-135m"), max_turns=5)  # doctest: +SKIP
        >>> result = graph.invoke({"question": sample.question, "document": sample.document,  # doctest: +SKIP
        ...                        "turns": sample.meta["turns"]})
        >>> result["stop_reason"], result["turns_used"] <= 5                          # doctest: +SKIP
        ('submitted', True)
    """
    max_turns = positive_int("max_turns", max_turns, minimum=0)
    if search_context is not None:
        search_context = positive_int("search_context", search_context, minimum=0)
    max_parallel_calls = positive_int("max_parallel_calls", max_parallel_calls)
    turn_tokens = positive_int("turn_tokens", turn_tokens)
    answer_tokens = positive_int("answer_tokens", answer_tokens)
    chunk_tokens = positive_int("chunk_tokens", chunk_tokens)
    # The episode ends on context overflow (SUMER): the next turn or forced answer must still fit the window.
    max_context_tokens = prompt_budget(context_window(model), max_context_tokens, max(turn_tokens, answer_tokens))
    for option, value, choices in (
        ("final_prompt", final_prompt, FinalPromptStyle), ("tool_choice", tool_choice, ToolChoice),
        ("forced_answer_call", forced_answer_call, ForcedAnswerCall), ("search_reply", search_reply, SearchReply),
        ("query_style", query_style, QueryStyle), ("answer_rule", answer_rule, AnswerRule),
    ):
        if value not in get_args(choices):
            raise ValueError(f"{option} must be {' or '.join(map(repr, get_args(choices)))}, got {value!r}")
    if not callable(getattr(model, "bind_tools", None)):
        raise TypeError(f"SUMER needs a chat model with tool calling (bind_tools); {type(model).__name__} has none")
    if bank is None:
        bank = MemoryBank(store, embeddings=embeddings, context=SUMER_CONTEXT if search_context is None else search_context)
    elif store is not None or embeddings is not None:
        raise ValueError("pass either bank= or store=/embeddings= (which build the default bank), not both")
    elif search_context not in (None, bank.context):
        raise ValueError(f"search_context={search_context!r} differs from the given bank's context={bank.context}: set it on the bank")
    steps = _SumerSteps(
        model,
        bank,
        optional_tokenizer(tokenizer, model),
        max_turns=max_turns,
        max_parallel_calls=max_parallel_calls,
        max_context_tokens=max_context_tokens,
        force_answer=force_answer,
        forced_answer_call=forced_answer_call,
        turn_tokens=turn_tokens,
        answer_tokens=answer_tokens,
        chunk_tokens=chunk_tokens,
        final_prompt=final_prompt,
        tool_choice=tool_choice,
        search_reply=search_reply,
        query_style=query_style,
        answer_rule=answer_rule,
    )
    builder = StateGraph(SumerState, context_schema=UserContext, input_schema=SumerInput, output_schema=SumerOutput)
    builder.add_node("ingest", node(steps.ingest, steps.aingest))
    builder.add_node("agent", node(steps.agent, steps.aagent))
    builder.add_node("tools", node(steps.tools, steps.atools))
    builder.add_node("force_answer", node(steps.force, steps.aforce))
    builder.add_edge(START, "ingest")
    builder.add_conditional_edges("ingest", steps.next_step, ["agent", "force_answer", END])
    builder.add_conditional_edges("agent", steps.next_step, ["tools", END])
    builder.add_conditional_edges("tools", steps.next_step, ["agent", "force_answer", END])
    builder.add_edge("force_answer", END)
    compiled = builder.compile(checkpointer=checkpointer, name=name)
    return SumerGraph.from_compiled(compiled, sumer_steps_needed=2 * max_turns + _FIXED_STEPS)
