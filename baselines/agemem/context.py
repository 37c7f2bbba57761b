"""Short-term memory: the message list as whole message groups, and the SUMMARY and FILTER edits on them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage


# Template overhead per message when counting context tokens (role markers, separators).
TOKENS_PER_MESSAGE = 4


_GROUP_ID = re.compile(r"^g(\d+)$")


_REPLY_ID = re.compile(r"^(g\d+)-r\d+$")


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


def is_ours(message: BaseMessage) -> bool:
    pattern = _REPLY_ID if isinstance(message, ToolMessage) else _GROUP_ID
    return isinstance(message.id, str) and bool(pattern.match(message.id))


def group_number(group_id: str) -> int:
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


# -- the tool executor ----------------------------------------------------------------------------


class ToolError(ValueError):
    """A tool call the model got wrong; its message becomes the tool reply."""


class ContextEdit:
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
                    raise ToolError(
                        f"{group_id} is a tool reply inside group {members[group_id]}; an assistant message and its "
                        f"tool replies can only be summarized or filtered together: cite {members[group_id]}"
                    )
                if group_id == self.pending_group:
                    raise ToolError(f"{group_id} is the group of this very tool call; it cannot be summarized or filtered yet")
                if group_id not in position:
                    raise ToolError(f"no context group {group_id!r}; the groups are: {known}")
            if span:
                low, high = sorted(position[group_id] for group_id in cited)
                chosen.extend(range(low, high + 1))
            else:
                chosen.append(position[cited[0]])
        pending = position.get(self.pending_group)
        if pending is not None and pending in chosen:
            raise ToolError(f"the span includes {self.pending_group}, the group of this very tool call")
        return sorted(set(chosen))

    def summarize(self, tokens: Sequence[str], summary: str) -> str:
        chosen = self._resolve(tokens)
        groups = message_groups(self.messages)
        gaps = [groups[i].group_id for i in range(chosen[0], chosen[-1] + 1) if i not in chosen]
        if gaps:
            raise ToolError(
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


def rendered_context(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
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


def context_map(messages: Sequence[BaseMessage]) -> str:
    groups = message_groups(messages)
    if not groups:
        return "none"
    return " · ".join(
        f"{group.group_id} {group.kind} ({sum(len(m.text.split()) for m in group.messages)} words)" for group in groups
    )


def with_call_ids(reply: BaseMessage, group_id: str) -> AIMessage:
    """The reply as group ``group_id``; every tool call (valid or not) gets an id a reply can cite."""
    if not isinstance(reply, AIMessage):
        reply = AIMessage(content=reply.content)
    number = iter(range(1, 1_000_000))
    tool_calls = [{**call, "id": call.get("id") or f"call_{group_id}_{next(number)}"} for call in reply.tool_calls]
    invalid = [{**call, "id": call.get("id") or f"call_{group_id}_{next(number)}"} for call in reply.invalid_tool_calls]
    return reply.model_copy(update={"id": group_id, "tool_calls": tool_calls, "invalid_tool_calls": invalid})
