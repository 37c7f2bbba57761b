r"""Tool calling for local chat models: render tools and transcripts, parse tool calls from text.

A local transformers model sees tools only as text in its prompt and answers with text;
this module is both directions of that translation, for any tokenizer.

Rendering (:func:`render_chat_prompt`):

- If the tokenizer's chat template uses ``tools`` (Qwen2.5/3, Hermes, Llama 3.1, ...), the
  template renders them, and the transcript goes in as OpenAI-style dicts: assistant
  ``tool_calls`` and ``role="tool"`` replies with ``tool_call_id`` and ``name``.
- Otherwise (SmolLM2-135M-Instruct's template knows only roles and content) the tools go
  into the system message as the Hermes/Qwen2.5 tool prompt (:func:`tool_system_prompt`),
  merged with an existing system message. Calls the model made are rendered as
  ``<tool_call>`` blocks after its text, tool replies as a user turn of
  ``<tool_response name="...">`` blocks (consecutive replies share one turn).

Parsing (:func:`parse_tool_calls`) reads ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
blocks and, when tools are bound, a bare or fenced JSON call (small models often drop the
tags). Whatever cannot be a valid call becomes an ``invalid_tool_calls`` entry with a
readable error; the markup never stays in the reply's text.

``tool_choice`` (OpenAI's values, see :func:`normalize_tool_choice`):

- ``None`` / ``"auto"``: tools are offered, the model decides.
- ``"none"``: tools are not offered; call markup the model writes anyway is reported
  as invalid calls, never as calls.
- ``"required"`` (alias ``"any"``, or ``True``) and a tool name: the assistant's reply is
  started with ``<tool_call>\n{"name": "`` (or with the named tool's opening up to its
  arguments), so the model can only continue a call. This prefill is part of the prompt
  (the recorded prompt token ids include it) and of the parsed text. It needs the Hermes
  ``<tool_call>`` format: a native template with another format refuses these values
  rather than ignoring them.

:meth:`ToolTurn.grammar` is what the reply must follow: the rest of a forced call, or with
``"auto"`` free text until the model opens a ``<tool_call>``, then valid calls. The local
engine decodes under it (:mod:`.constrained`), so every call it writes is valid.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    InvalidToolCall,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.messages.tool import tool_call as make_tool_call
from langchain_core.utils.function_calling import convert_to_openai_tool

from .constrained import Count, auto_call_grammar, forced_call_grammar
from .tokenizers import encode_text


ToolChoice = Literal["auto", "none", "required"] | dict[str, Any]
"""A normalized tool choice: a mode, or ``{"type": "function", "function": {"name": ...}}``."""

ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "chat": "user"}
"""LangChain message types to chat-template roles."""

# The Qwen2.5 tool prompt (Hermes format), the one small open models are most often tuned on.
_TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
_TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
_EXPECTED_FORMAT = 'expected <tool_call>{"name": <tool name>, "arguments": {<argument>: <value>, ...}}</tool_call>'

# An unclosed block ends where the next one starts, or at the end of the text.
_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_OPEN_TAG = "<tool_call>"
_SPACE = re.compile(r"\s*")
_AFTER_CALL = re.compile(r"\s*(?:</tool_call>|(?=<tool_call>)|\Z)")
_JSON_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_MAX_BARE_JSON_ATTEMPTS = 200  # '{' positions tried when looking for untagged JSON calls


@dataclass(frozen=True)
class ParsedReply:
    """A model's reply split into its text and its tool calls.

    ``content`` is the text outside any call; ``tool_calls`` are LangChain ``ToolCall`` dicts
    (``name``, ``args``, ``id``); ``invalid_tool_calls`` are ``InvalidToolCall`` dicts whose
    ``args`` is the call's raw text as the model wrote it and ``error`` says what is wrong.
    """

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    invalid_tool_calls: list[InvalidToolCall] = field(default_factory=list)


@dataclass(frozen=True)
class ChatPrompt:
    """A rendered prompt; ``reply_prefix`` is its tail that starts the assistant's reply (forced calls).

    ``message_spans``: where ``text`` holds message text that contains special-token strings
    (start, end), so :func:`encode_chat_prompt` reads it as plain characters.
    """

    text: str
    reply_prefix: str = ""
    message_spans: tuple[tuple[int, int], ...] = ()


def special_token_strings(tokenizer: Any) -> list[str]:
    """The strings a tokenizer turns into special (control) tokens, e.g. ``<|im_start|>``."""
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    return sorted({*tokenizer.all_special_tokens, *(token.content for token in added.values() if token.special)})


def encode_chat_prompt(tokenizer: Any, prompt: ChatPrompt) -> list[int]:
    """Token ids of a rendered prompt: the template's markup yields control tokens, message text never.

    Documents, questions, memories and tool results are data: a document holding
    ``<|im_end|><|im_start|>assistant`` is read as those characters, not as a new turn. Without
    such text (the usual case) this is exactly ``tokenizer(prompt.text)``.
    """

    def encode(text: str, plain: bool) -> list[int]:
        return encode_text(tokenizer, [text], plain=plain)[0] if text else []

    ids, position = [], 0
    for start, end in prompt.message_spans:
        ids += encode(prompt.text[position:start], False) + encode(prompt.text[start:end], True)
        position = end
    return ids + encode(prompt.text[position:], False)


# Parsing --------------------------------------------------------------------------------


def parse_tool_calls(
    text: str, tool_names: Collection[str] | None = None, *, bare_json: bool = True, id_seed: str = ""
) -> ParsedReply:
    """Split a model's text into content, valid tool calls and invalid ones. Never raises.

    ``tool_names`` are the bound tools (``None``: any name is accepted); a call to another
    name is invalid. With ``bare_json`` a JSON object with ``"name"`` and ``"arguments"``
    (bare or in a fenced block) counts as a call when the text has no ``<tool_call>`` block.
    Trailing commas and single quotes are repaired only where that is unambiguous
    (Python literal syntax); other malformed JSON makes the call invalid. Text from a
    ``<tool_response`` the model writes itself onward is dropped: it is imagining the
    tool's answer. Ids are ``call_<n>_<hash>``: ``n`` the call's index in the reply, the
    hash of ``id_seed`` (e.g. the prompt) and the call's text, so they are reproducible
    and unique across the turns of a conversation.

    >>> reply = parse_tool_calls(
    ...     'Let me look.\\n<tool_call>\\n{"name": "search", "arguments": {"query": "cats"}}\\n</tool_call>',
    ...     ["search"])
    >>> reply.content
    'Let me look.'
    >>> [(call["name"], call["args"]) for call in reply.tool_calls]
    [('search', {'query': 'cats'})]
    >>> reply.tool_calls[0]["id"].startswith("call_0_")
    True
    >>> bad = parse_tool_calls('<tool_call>{"name": "search", "arguments": {"query": }}</tool_call>', ["search"])
    >>> bad.tool_calls, bad.invalid_tool_calls[0]["name"], bad.content
    ([], 'search', '')
    >>> bad.invalid_tool_calls[0]["error"].split(" (")[0]
    'the tool call is not valid JSON'
    >>> parse_tool_calls('{"name": "search", "arguments": {"query": "dogs"}}', ["search"]).tool_calls[0]["args"]
    {'query': 'dogs'}
    >>> parse_tool_calls("<tool_call>{'name': 'search', 'arguments': {'query': 'x',},}</tool_call>").tool_calls[0]["args"]
    {'query': 'x'}
    """
    blocks = _call_blocks(text)
    response_start = _first_outside(text, "<tool_response", [span for _, span, _ in blocks])
    if response_start >= 0:
        text = text[:response_start]
        blocks = [block for block in blocks if block[1][1] <= response_start]
    calls: list[tuple[str, Any, str | None]] = []  # (raw text, parsed value, JSON error)
    spans: list[tuple[int, int]] = []
    for raw, span, parsed in blocks:
        value, error = parsed if parsed is not None else _load_json(raw)
        calls.append((raw, value, error))
        spans.append(span)
    if not calls and bare_json:
        for raw, value, span in _bare_json_calls(text):
            calls.append((raw, value, None))
            spans.append(span)
    valid: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for index, (raw, value, json_error) in enumerate(calls):
        digest = hashlib.sha1("\x1f".join((id_seed, str(index), raw)).encode()).hexdigest()[:10]
        call_id = f"call_{index}_{digest}"
        if json_error is not None:
            name = re.search(r"""["']name["']\s*:\s*["']([^"']+)["']""", raw)
            error = f"the tool call is not valid JSON ({json_error}); {_EXPECTED_FORMAT}"
            invalid.append(invalid_tool_call(name=name.group(1) if name else None, args=raw, id=call_id, error=error))
            continue
        name, args, error = _check_call(value, tool_names)
        if error is None:
            valid.append(make_tool_call(name=name, args=args, id=call_id))
        else:
            invalid.append(invalid_tool_call(name=name, args=raw, id=call_id, error=error))
    return ParsedReply(_outside(text, spans), valid, invalid)


def _call_blocks(text: str) -> list[tuple[str, tuple[int, int], tuple[Any, None] | None]]:
    """Each ``<tool_call>`` block's raw call text, span, and its JSON value (with no error) where it was read whole.

    A block runs to its closing tag, the next block or the end. When its body is one JSON
    value followed by one of those, the block ends after that value: tag text inside a JSON
    string, which a call's grammar allows, stays part of the argument.
    """
    blocks, position = [], text.find(_OPEN_TAG)
    while position >= 0:
        body = _SPACE.match(text, position + len(_OPEN_TAG)).end()
        try:
            value, end = _JSON_DECODER.raw_decode(text, body)
        except (ValueError, RecursionError):
            end = -1
        after = _AFTER_CALL.match(text, end) if end >= 0 else None
        if after is not None:
            blocks.append((text[body:end], (position, after.end()), (value, None)))
            stop = after.end()
        else:
            block = _CALL_BLOCK.match(text, position)
            blocks.append((_strip_fence(block.group(1).strip()), block.span(), None))
            stop = max(block.end(), position + len(_OPEN_TAG))
        position = text.find(_OPEN_TAG, stop)
    return blocks


def _first_outside(text: str, needle: str, spans: list[tuple[int, int]]) -> int:
    """The first index of ``needle`` in ``text`` outside every span, else -1."""
    position = text.find(needle)
    while position >= 0 and any(begin <= position < end for begin, end in spans):
        position = text.find(needle, position + 1)
    return position


def _strip_fence(raw: str) -> str:
    fenced = _FENCE.fullmatch(raw)
    return fenced.group(1).strip() if fenced else raw


def _strict_json(raw: str) -> tuple[Any, str | None]:
    try:
        return json.loads(raw), None
    except json.JSONDecodeError as error:
        return None, f"{error.msg} at line {error.lineno} column {error.colno}"
    except (ValueError, RecursionError) as error:  # e.g. integers past Python's digit limit, deep nesting
        return None, str(error) or type(error).__name__


def _load_json(raw: str) -> tuple[Any, str | None]:
    """The JSON value of ``raw`` and ``None``, or ``None`` and the JSON parser's error."""
    value, first_error = _strict_json(raw)
    if first_error is None:
        return value, None
    value, error = _strict_json(_without_trailing_commas(raw))
    if error is None:
        return value, None
    # Single quotes are Python syntax: literal_eval evaluates literals only (safe), and a
    # result that is not plain JSON data (sets, bytes, complex numbers) is refused.
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, first_error
    return (value, None) if _is_json_data(value) else (None, first_error)


def _without_trailing_commas(raw: str) -> str:
    """``raw`` without commas right before a closing bracket, leaving string contents alone."""
    pieces = re.split(r'("(?:[^"\\]|\\.)*")', raw)
    return "".join(piece if i % 2 else _TRAILING_COMMA.sub(r"\1", piece) for i, piece in enumerate(pieces))


def _is_json_data(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json_data(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_is_json_data(item) for item in value)
    return value is None or isinstance(value, (str, bool, int, float))


def _call_fields(value: Any) -> tuple[Any, Any, bool]:
    """(name, arguments, has an arguments key) of a call object, in OpenAI or Hermes shape."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]  # {"type": "function", "function": {...}}
    if not isinstance(value, dict):
        return None, None, False
    for key in ("arguments", "parameters"):  # Llama 3.1 templates say "parameters"
        if key in value:
            return value.get("name"), value[key], True
    return value.get("name"), {}, False


def _check_call(value: Any, tool_names: Collection[str] | None) -> tuple[str | None, dict[str, Any], str | None]:
    """(name, arguments, None) for a valid call, else (name or None, {}, error)."""
    if not isinstance(value, dict):
        return None, {}, f"a tool call must be a JSON object, got {type(value).__name__}; {_EXPECTED_FORMAT}"
    name, args, _ = _call_fields(value)
    if not isinstance(name, str) or not name:
        return None, {}, f'the tool call has no "name" string; {_EXPECTED_FORMAT}'
    if tool_names is not None and name not in tool_names:
        available = ", ".join(sorted(tool_names)) or "none (tool_choice is 'none')"
        return name, {}, f"unknown tool {name!r}; available tools: {available}"
    if isinstance(args, str):  # OpenAI style: the arguments as a JSON string
        args, error = _strict_json(args) if args.strip() else ({}, None)
        if error is not None:
            return name, {}, f"the arguments of {name!r} are not valid JSON ({error}); expected a JSON object"
    if not isinstance(args, dict):
        shown = json.dumps(args, ensure_ascii=False)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        return name, {}, f"the arguments of {name!r} must be a JSON object, got {type(args).__name__}: {shown}"
    return name, args, None


def _bare_json_calls(text: str) -> list[tuple[str, Any, tuple[int, int]]]:
    """Call-shaped JSON (with "name" and "arguments") in fenced blocks or bare in the text."""
    found = []
    for fence in _FENCE.finditer(text):
        value, error = _load_json(fence.group(1).strip())
        items = value if isinstance(value, list) else [value]
        if error is None and items and all(_is_call_shaped(item) for item in items):
            found += [(json.dumps(item, ensure_ascii=False), item, fence.span()) for item in items]
    if found:
        return found
    decoder = json.JSONDecoder()
    position, attempts = text.find("{"), 0
    # Each attempt may read to the end of the text: bound them, so parsing stays linear-ish
    # even on pathological output (a reply is at most max_tokens long anyway).
    while position >= 0 and attempts < _MAX_BARE_JSON_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            if error.pos >= len(text.rstrip()):
                break  # unterminated: every later object would run into the same end
            position = text.find("{", position + 1)
            continue
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if _is_call_shaped(value):
            found.append((text[position:end], value, (position, end)))
        position = text.find("{", end)
    return found


def _is_call_shaped(value: Any) -> bool:
    name, _, has_arguments = _call_fields(value)
    return isinstance(name, str) and has_arguments


def _outside(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, start = [], 0
    for begin, end in spans:
        pieces.append(text[start:begin])
        start = end
    pieces.append(text[start:])
    content = "".join(pieces).replace("</tool_call>", "")
    return re.sub(r"\n{3,}", "\n\n", content).strip()


# Tool choice ----------------------------------------------------------------------------


def tool_names(tools: Sequence[dict[str, Any]]) -> list[str]:
    """The names of OpenAI-format tool schemas."""
    return [tool["function"]["name"] for tool in tools]


def normalize_tool_choice(tool_choice: Any, names: Collection[str]) -> ToolChoice | None:
    """OpenAI/LangChain ``tool_choice`` values as ``"auto"``, ``"none"``, ``"required"`` or a named tool.

    ``None``/``"auto"`` give ``None`` (the default: the model decides); ``"any"`` and
    ``True`` mean ``"required"``; a bound tool's name or ``{"type": "function",
    "function": {"name": ...}}`` force that tool.

    >>> normalize_tool_choice("any", ["search"])
    'required'
    >>> normalize_tool_choice("search", ["search"])
    {'type': 'function', 'function': {'name': 'search'}}
    >>> normalize_tool_choice("lookup", ["search"])
    Traceback (most recent call last):
    ...
    ValueError: tool_choice must be 'auto', 'none', 'required'/'any' or a bound tool's name ['search'], got 'lookup'
    """
    if tool_choice is None or tool_choice == "auto":
        return None
    if tool_choice in ("any", "required", True):
        return "required"
    if tool_choice == "none":
        return "none"
    name = tool_choice
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name", tool_choice.get("name"))
    if isinstance(name, str) and name in names:
        return {"type": "function", "function": {"name": name}}
    raise ValueError(
        f"tool_choice must be 'auto', 'none', 'required'/'any' or a bound tool's name {sorted(names)}, got {tool_choice!r}"
    )


def forced_reply_prefix(tool_choice: ToolChoice | None) -> str:
    r"""The start of the assistant's reply that makes a forced tool choice happen.

    >>> forced_reply_prefix("required")
    '<tool_call>\n{"name": "'
    >>> forced_reply_prefix({"type": "function", "function": {"name": "search"}})
    '<tool_call>\n{"name": "search", "arguments":'
    >>> forced_reply_prefix(None)
    ''
    """
    if tool_choice == "required":
        return '<tool_call>\n{"name": "'
    if isinstance(tool_choice, dict):
        return f'<tool_call>\n{{"name": {json.dumps(tool_choice["function"]["name"])}, "arguments":'
    return ""


# Rendering ------------------------------------------------------------------------------


def tool_system_prompt(tools: Sequence[dict[str, Any]]) -> str:
    """The Hermes/Qwen2.5 tool prompt: the tools' JSON schemas and the ``<tool_call>`` format.

    >>> print(tool_system_prompt([{"type": "function", "function": {"name": "now", "parameters": {}}}]))
    # Tools
    <BLANKLINE>
    You may call one or more functions to assist with the user query.
    <BLANKLINE>
    You are provided with function signatures within <tools></tools> XML tags:
    <tools>
    {"type": "function", "function": {"name": "now", "parameters": {}}}
    </tools>
    <BLANKLINE>
    For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
    <tool_call>
    {"name": <function-name>, "arguments": <args-json-object>}
    </tool_call>
    """
    return _TOOLS_INTRO + "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools) + _TOOLS_OUTRO


def render_tool_call(name: str, args: dict[str, Any]) -> str:
    """One call in the Hermes format the tool prompt asks for.

    >>> print(render_tool_call("search", {"query": "cats"}))
    <tool_call>
    {"name": "search", "arguments": {"query": "cats"}}
    </tool_call>
    """
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args}, ensure_ascii=False)}\n</tool_call>"


def render_tool_response(name: str | None, content: str) -> str:
    """One tool reply as the model reads it.

    >>> print(render_tool_response("search", "3 hits"))
    <tool_response name="search">
    3 hits
    </tool_response>
    """
    opening = f"<tool_response name={json.dumps(name, ensure_ascii=False)}>" if name else "<tool_response>"
    return f"{opening}\n{content}\n</tool_response>"


def template_supports_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template (its tool-use variant if it has one) renders ``tools``."""
    try:
        template = tokenizer.get_chat_template(None, tools=[{}])
    except ValueError:  # no chat template at all
        return False
    return re.search(r"\btools\b", template) is not None


def render_chat_prompt(
    tokenizer: Any,
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: ToolChoice | None = None,
) -> ChatPrompt:
    """The exact prompt text for ``messages`` (and OpenAI-format ``tools``), ending with the generation prompt.

    Without tools and tool messages this is exactly ``apply_chat_template(..., tokenize=False)``
    of the role/content dicts. ``tool_choice="none"`` leaves the tools out; a forced choice
    appends :func:`forced_reply_prefix`.

    >>> from langchain_core.messages import HumanMessage
    >>> from transformers import AutoTokenizer                                      # doctest: +SKIP
    >>> tokenizer = AutoTokenizer.from_pretrained(model_dir)                         # doctest: +SKIP
    >>> prompt = render_chat_prompt(tokenizer, [HumanMessage("Weather in Paris?")], tools=[weather_tool])  # doctest: +SKIP
    >>> "<tools>" in prompt.text                                                     # doctest: +SKIP
    True
    """
    offered = list(tools or []) if tool_choice != "none" else []
    prefix = forced_reply_prefix(tool_choice) if offered else ""
    if not template_supports_tools(tokenizer):
        text, spans = _render(tokenizer, _hermes_chat(messages, offered))
        return ChatPrompt(text + prefix, prefix, spans)
    if prefix and "<tool_call>" not in tokenizer.get_chat_template(None, tools=offered):
        raise ValueError(
            f"tool_choice={tool_choice!r} cannot be enforced: this chat template's tool calls are not "
            "Hermes <tool_call> blocks; use tool_choice='auto'"
        )
    text, spans = _render(tokenizer, _native_chat(messages), tools=offered or None)
    return ChatPrompt(text + prefix, prefix, spans)


# A private-use character pair marks where a message's text goes in the rendered template.
_SLOT = "\ue000{}\ue001"
_SLOTS = re.compile("\ue000(\\d+)\ue001")


def _render(tokenizer: Any, chat: list[dict[str, Any]], **template_options: Any) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The template's text for ``chat`` and the spans of message texts that hold special-token strings.

    Those messages are rendered once more with a slot in place of their text: what lies
    between slots is the template's own markup, so the spans are exact.
    """
    text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False, **template_options)
    specials = special_token_strings(tokenizer)
    risky = {i for i, entry in enumerate(chat) if isinstance(entry.get("content"), str) and any(s in entry["content"] for s in specials)}
    if not risky:
        return text, ()
    slotted = [dict(entry, content=_SLOT.format(i)) if i in risky else entry for i, entry in enumerate(chat)]
    skeleton = tokenizer.apply_chat_template(slotted, add_generation_prompt=True, tokenize=False, **template_options)
    rebuilt, spans = "", []
    for index, part in enumerate(_SLOTS.split(skeleton)):
        if index % 2:
            content = chat[int(part)]["content"]
            spans.append((len(rebuilt), len(rebuilt) + len(content)))
            part = content
        rebuilt += part
    if rebuilt != text:
        raise ValueError(
            "this chat template changes the text of a message holding special-token strings "
            f"({', '.join(s for s in specials if any(s in chat[i]['content'] for i in risky))}); "
            "it cannot be kept apart from the template's control tokens: remove those strings from the input"
        )
    return text, tuple(spans)


@dataclass(frozen=True)
class ToolTurn:
    """One call's prompt text and how to read the reply to it (shared by the local backends).

    ``tool_names`` is ``None`` when no tools were bound (the reply is plain text), else the
    names a call may use (empty with ``tool_choice="none"``: every call is then invalid).
    ``tools`` are the tools offered (none with ``tool_choice="none"``) and ``choice`` the
    normalized ``tool_choice``, for backends that constrain decoding (:meth:`grammar`).
    """

    prompt: ChatPrompt
    tool_names: tuple[str, ...] | None = None
    tools: tuple[dict[str, Any], ...] = ()
    choice: ToolChoice | None = None

    def grammar(self, max_tokens: int, count: Count = len) -> str | None:
        """What the reply must follow within ``max_tokens`` (``count``: the model's token counter); ``None`` when it is free (no tools offered).

        The rest of a forced call (:func:`.constrained.forced_call_grammar`) when the prompt
        ends with its prefix, else text that may open calls (:func:`.constrained.auto_call_grammar`).
        """
        if not self.tools:
            return None
        if self.prompt.reply_prefix:
            return forced_call_grammar(self.tools, self.choice, max_tokens, count)
        return auto_call_grammar(self.tools, max_tokens, count)

    def read(self, completion: str) -> ParsedReply:
        """The reply's text and tool calls; call ids hash the prompt, so a repeated call in a later turn gets a new id.

        A call that repeats an earlier call of the same reply word for word is made once: forced to
        call, the embedded model wrote its one call again and again until its token limit (LangChain's
        standard tool-calling tests, 5 identical calls where 1 was asked for).
        """
        if self.tool_names is None:
            return ParsedReply(completion)
        id_seed = hashlib.sha1(self.prompt.text.encode()).hexdigest()
        reply = parse_tool_calls(self.prompt.reply_prefix + completion, self.tool_names, bare_json=bool(self.tool_names), id_seed=id_seed)
        seen: set[str] = set()
        unique = [call for call in reply.tool_calls if not (_call_key(call) in seen or seen.add(_call_key(call)))]
        return ParsedReply(reply.content, unique, reply.invalid_tool_calls)


def _call_key(call: ToolCall) -> str:
    return json.dumps([call["name"], call["args"]], sort_keys=True)


def prepare_turn(tokenizer: Any, messages: Sequence[BaseMessage], call_options: dict[str, Any]) -> ToolTurn:
    """Render ``messages`` with the ``tools``/``tool_choice`` of ``call_options`` (what ``bind_tools`` bound).

    >>> from langchain_core.messages import HumanMessage
    >>> turn = prepare_turn(tokenizer, [HumanMessage("Weather in Paris?")], {"tools": [weather_tool]})  # doctest: +SKIP
    >>> turn.read('<tool_call>{"name": "weather", "arguments": {"city": "Paris"}}</tool_call>').tool_calls  # doctest: +SKIP
    [{'name': 'weather', 'args': {'city': 'Paris'}, 'id': 'call_...', 'type': 'tool_call'}]
    """
    tools = [convert_to_openai_tool(tool) for tool in call_options.get("tools") or []]
    names = tool_names(tools)
    choice = normalize_tool_choice(call_options.get("tool_choice"), names)
    prompt = render_chat_prompt(tokenizer, messages, tools=tools, tool_choice=choice)
    if not tools:
        return ToolTurn(prompt)
    if choice == "none":
        return ToolTurn(prompt, ())
    return ToolTurn(prompt, tuple(names), tuple(tools), choice)


def bind_local_tools(model: Any, tools: Sequence[Any], tool_choice: Any, **kwargs: Any) -> Any:
    """``model.bind(tools=..., tool_choice=...)`` with the tools as OpenAI schemas and the choice checked.

    The ``bind_tools`` of the local backends: any LangChain tool, function, pydantic
    model or schema; ``tool_choice`` as :func:`normalize_tool_choice`.
    """
    schemas = [convert_to_openai_tool(tool) for tool in tools]
    choice = normalize_tool_choice(tool_choice, tool_names(schemas))
    if choice is not None:
        kwargs["tool_choice"] = choice
    return model.bind(tools=schemas, **kwargs)


def _call_names(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """Tool call id -> tool name, from every call (valid or not) in the transcript."""
    names = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in [*message.tool_calls, *message.invalid_tool_calls]:
                if call.get("id") and call.get("name"):
                    names[call["id"]] = call["name"]
    return names


def _native_chat(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """OpenAI-style dicts for a template that renders tool calls and tool replies itself.

    Invalid calls are left out: their text cannot be expressed in the template's format,
    and the tool reply that reports the error still follows.
    """
    names = _call_names(messages)
    chat = []
    for message in messages:
        entry: dict[str, Any] = {"role": ROLES.get(message.type, message.type), "content": message.text}
        if isinstance(message, AIMessage) and message.tool_calls:
            entry["tool_calls"] = [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["args"]}}
                for call in message.tool_calls
            ]
        elif isinstance(message, ToolMessage):
            entry["tool_call_id"] = message.tool_call_id
            name = message.name or names.get(message.tool_call_id)
            if name:
                entry["name"] = name
        chat.append(entry)
    return chat


def _hermes_chat(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Role/content dicts for a template without tool support (see the module docstring)."""
    names = _call_names(messages)
    chat: list[dict[str, str]] = []
    previous_was_tool = False
    for message in messages:
        if isinstance(message, ToolMessage):
            reply = render_tool_response(message.name or names.get(message.tool_call_id), message.text)
            if previous_was_tool:  # consecutive tool replies share one user turn
                chat[-1]["content"] += "\n" + reply
            else:
                chat.append({"role": "user", "content": reply})
            previous_was_tool = True
            continue
        previous_was_tool = False
        content = message.text
        if isinstance(message, AIMessage):
            blocks = [render_tool_call(call["name"], call["args"]) for call in message.tool_calls]
            # An invalid call is shown as the model wrote it, so the error reply after it makes sense.
            blocks += [f"<tool_call>\n{call['args']}\n</tool_call>" for call in message.invalid_tool_calls]
            content = "\n".join(part for part in [content, *blocks] if part)
        chat.append({"role": ROLES.get(message.type, message.type), "content": content})
    if tools:
        if chat and chat[0]["role"] == "system":
            chat[0]["content"] = f"{chat[0]['content']}\n\n{tool_system_prompt(tools)}"
        else:
            chat.insert(0, {"role": "system", "content": tool_system_prompt(tools)})
    return chat
