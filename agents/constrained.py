r"""Grammar-constrained decoding for the local engine, with llguidance.

A :class:`TokenConstraint` follows one generation: before each token it masks the logits to
the tokens its grammar allows, after it consumes the token chosen. The engine keeps one per
constrained row, so rows of a batch follow their own grammars and unconstrained rows cost
nothing.

Grammars are llguidance's Lark dialect, whose ``%json {schema}`` rule is a JSON Schema:

- :func:`forced_call_grammar`: the rest of a forced tool call after
  :func:`~.tool_calling.forced_reply_prefix`: the tool's name (for ``"required"``),
  arguments that validate against its parameters' schema, and the closing tag;
- :func:`auto_call_grammar`: free text, or calls once the reply opens ``<tool_call>``;
- :func:`json_reply_grammar`: one JSON value under a schema (``response_format``).

>>> tools = [{"type": "function", "function": {"name": "search", "parameters": {
...     "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
>>> print(forced_call_grammar(tools, {"type": "function", "function": {"name": "search"}}, max_tokens=128))
start: " " args_0 "}\n</tool_call>"
args_0: %json {"type": "object", "properties": {"query": {"type": "string", "maxLength": 96}}, "required": ["query"], "additionalProperties": false, "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# Limits a forced call's arguments get where their schema sets none (ours: the embedded model,
# forced to call, looped inside one string until its token limit cut the call).
MAX_STRING_CHARS = 160
MAX_ARRAY_ITEMS = 16
# Calls one reply may make (SUMER's cap per turn), each with at least this many tokens.
MAX_CALLS = 5
CALL_TOKENS = 128
# Tokens of a forced call besides its string values: the tool name, keys, punctuation, closing tag, EOS.
CALL_OVERHEAD_TOKENS = 32
# JSON written as json.dumps writes it (the tool prompt's own example), with no other whitespace.
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _lark_string(text: str) -> str:
    """``text`` as a Lark string literal."""
    return json.dumps(text)


def _bounded(schema: Any, max_string: int) -> Any:
    """``schema`` with closed objects and length limits where it sets none.

    A forced call has to close within the call's token limit: objects take only their
    declared properties (as OpenAI's strict mode does), strings at most ``max_string``
    characters and arrays ``MAX_ARRAY_ITEMS`` items.
    """
    if isinstance(schema, list):
        return [_bounded(item, max_string) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: _bounded(value, max_string) for key, value in schema.items()}
    if schema.get("type") == "object" or "properties" in schema:
        bounded.setdefault("additionalProperties", False)
    if schema.get("type") == "string" and "enum" not in schema and "const" not in schema:
        bounded.setdefault("maxLength", max_string)
    if schema.get("type") == "array":
        bounded.setdefault("maxItems", MAX_ARRAY_ITEMS)
    return bounded


def _string_fields(schema: Any) -> int:
    if isinstance(schema, list):
        return sum(map(_string_fields, schema))
    if not isinstance(schema, dict):
        return 0
    return int(schema.get("type") == "string") + sum(_string_fields(value) for value in schema.values())


# A call in the tool prompt's Hermes format, after its opening tag (auto) or inside the forced prefix.
_OPENING = "<tool_call>"
_CALL_HEAD = '\n{"name": "'
_CLOSING = _lark_string("}\n</tool_call>")


def forced_call_grammar(tools: Sequence[dict[str, Any]], tool_choice: Any, max_tokens: int) -> str:
    """The Lark grammar of a reply forced to call a tool, from after ``forced_reply_prefix(tool_choice)``.

    ``tools`` are OpenAI tool schemas; ``tool_choice`` is ``"required"`` (calls of any of
    them, one per line: as many as :func:`_call_count` fits in ``max_tokens``) or
    ``{"function": {"name": ...}}`` (one call of that tool). The arguments follow the tool's
    schema, closed and bounded by :func:`_bounded`, then the closing tag ends the call.
    Strings share what each call's tokens leave after ``CALL_OVERHEAD_TOKENS``, so a call of
    ASCII text closes within the limit (a token holds at least one byte).
    """
    names = [tool["function"]["name"] for tool in tools]
    if tool_choice == "required":  # the prefix ends with the name's opening quote
        calls = _call_count(max_tokens)
        return "\n".join([f"start: named_call{_more_calls(calls)}", *_call_rules(tools, max_tokens // calls)])
    name = tool_choice["function"]["name"]
    if name not in names:
        raise ValueError(f"tool_choice names {name!r}, which is not among the bound tools {names}")
    index = names.index(name)  # the prefix ends with '"arguments":'
    return "\n".join([f'start: " " args_{index} {_CLOSING}', _arguments_rule(index, tools[index], max_tokens)])


def auto_call_grammar(tools: Sequence[dict[str, Any]], max_tokens: int) -> str:
    r"""The Lark grammar of a reply that may call tools (``tool_choice="auto"``).

    Text is free, except that it never writes a call outside the ``<tool_call>`` tag (no
    ``{"name"``) nor a tool's reply (``<tool_response``). Once the reply opens
    ``<tool_call>`` each call is one of ``tools`` with arguments that follow its schema (as in
    :func:`forced_call_grammar`), and calls may follow one another, one per line, until the
    reply ends.

    Every call that opens must close within ``max_tokens``: the text before the first call
    takes at most half of them, and the rest is shared by the calls that fit
    (:func:`_call_count`), whose strings are bounded accordingly.

    >>> tools = [{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]
    >>> print("\n".join(auto_call_grammar(tools, max_tokens=512).splitlines()[:4]))
    start: FREE | opening call ("\n<tool_call>" call){0,1}
    FREE: /(?s:.*)/ & ~/(?s:.*)(<tool_call>|<tool_response|\{\s*"name")(?s:.*)/
    opening[lazy, max_tokens=256]: FREE "<tool_call>"
    call: "\n{\"name\": \"" named_call
    """
    preamble = max_tokens // 2
    calls = _call_count(max_tokens - preamble)
    # No call outside the tag, and no tool reply: the parser drops everything from
    # "<tool_response" on, and after a call the embedded model wrote such lines before its next
    # call (AgeMem on LoCoMo), which was then lost. The text before a call is bounded in tokens
    # (llguidance's max_tokens): a bound in characters made its lexer run out of expressions.
    return "\n".join([
        f"start: FREE | opening call{_more_calls(calls)}",
        'FREE: /(?s:.*)/ & ~/(?s:.*)(<tool_call>|<tool_response|\\{\\s*"name")(?s:.*)/',
        f"opening[lazy, max_tokens={preamble}]: FREE {_lark_string(_OPENING)}",
        *_call_rules(tools, (max_tokens - preamble) // calls),
    ])


def _call_count(max_tokens: int) -> int:
    """How many calls one reply may make in ``max_tokens``: ``CALL_TOKENS`` each, 1 to ``MAX_CALLS``."""
    return max(1, min(MAX_CALLS, max_tokens // CALL_TOKENS))


def _more_calls(calls: int) -> str:
    """The grammar of up to ``calls - 1`` further calls, one per line."""
    return f" ({_lark_string(chr(10) + _OPENING)} call){{0,{calls - 1}}}" if calls > 1 else ""


def _call_rules(tools: Sequence[dict[str, Any]], max_tokens: int) -> list[str]:
    """The rules ``call`` (after the opening tag) and ``named_call`` (from the name's opening quote: any tool's name, its arguments, the closing tag)."""
    after_name = '", "arguments": '
    calls = [f"{_lark_string(tool['function']['name'] + after_name)} args_{index} {_CLOSING}" for index, tool in enumerate(tools)]
    arguments = [_arguments_rule(index, tool, max_tokens) for index, tool in enumerate(tools)]
    return [f"call: {_lark_string(_CALL_HEAD)} named_call", "named_call: " + " | ".join(calls), *arguments]


def _arguments_rule(index: int, tool: dict[str, Any], max_tokens: int) -> str:
    """The rule ``args_<index>``: the tool's arguments as bounded JSON, its strings sharing what the call leaves."""
    return f"args_{index}: {_json_rule(tool['function'].get('parameters') or {'type': 'object', 'properties': {}}, max_tokens)}"


def _json_rule(schema: dict[str, Any], max_tokens: int) -> str:
    """``%json`` of ``schema`` bounded by :func:`_bounded`, its strings sharing what ``max_tokens`` leaves."""
    max_string = min(MAX_STRING_CHARS, max((max_tokens - CALL_OVERHEAD_TOKENS) // max(_string_fields(schema), 1), 1))
    return f"%json {json.dumps({**_bounded(schema, max_string), 'x-guidance': _JSON_STYLE})}"


def json_reply_grammar(schema: dict[str, Any], max_tokens: int) -> str:
    """The Lark grammar of a reply that is one JSON value under ``schema`` (bounded as a forced call's arguments), then ends.

    >>> print(json_reply_grammar({"type": "object", "properties": {"city": {"type": "string"}}}, max_tokens=64))
    start: %json {"type": "object", "properties": {"city": {"type": "string", "maxLength": 32}}, "additionalProperties": false, "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}}
    """
    return f"start: {_json_rule(schema, max_tokens)}"


class GrammarTokenizer:
    """llguidance's view of a transformers tokenizer, built once per engine (about 0.3 s)."""

    def __init__(self, tokenizer: Any, vocab_size: int):
        import llguidance.hf

        self.ll_tokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size)

    def constraint(self, grammar: str, end_tokens: Sequence[int]) -> TokenConstraint:
        """A fresh constraint following ``grammar`` (a Lark grammar), then one of ``end_tokens``;
        a bad grammar raises ``ValueError``."""
        import llguidance

        matcher = llguidance.LLMatcher(self.ll_tokenizer, llguidance.LLMatcher.grammar_from_lark(grammar))
        if matcher.is_error():
            raise ValueError(f"invalid grammar: {matcher.get_error()}")
        return TokenConstraint(matcher, tuple(end_tokens))


class TokenConstraint:
    """One row's grammar state: which tokens may come next.

    Once the grammar is complete only an end-of-sequence token may follow, so the reply
    ends the way the model ends every reply (a trainer learns to emit it).
    """

    def __init__(self, matcher: Any, end_tokens: tuple[int, ...]):
        self.matcher, self.end_tokens = matcher, end_tokens

    @property
    def finished(self) -> bool:
        """Whether the grammar is complete: nothing but an end token may follow."""
        return self.matcher.is_stopped()

    def advance(self, token: int) -> None:
        """Consume the token chosen; a token the mask did not allow is a bug, so it raises."""
        if self.finished and token in self.end_tokens:
            return
        if not self.matcher.consume_token(token):
            raise RuntimeError(f"token {token} broke the grammar: {self.matcher.get_error()}")


def mask_logits(logits: Any, constraints: Sequence[TokenConstraint | None]) -> Any:
    """``logits`` (rows, vocabulary) with what each row's constraint forbids set to -inf.

    A masked copy when a row is constrained; ``logits`` itself, untouched, when none is.
    """
    rows = [index for index, constraint in enumerate(constraints) if constraint is not None]
    if not rows:
        return logits
    import llguidance.torch

    bitmask = llguidance.torch.allocate_token_bitmask(len(rows), logits.shape[-1])
    for slot, row in enumerate(rows):
        if not constraints[row].finished:
            llguidance.torch.fill_next_token_bitmask(constraints[row].matcher, bitmask, slot)
    masked, constrained = logits.clone(), logits[rows]
    llguidance.torch.apply_token_bitmask_inplace(constrained, bitmask)
    for slot, row in enumerate(rows):
        if constraints[row].finished:  # only an end token may follow a complete grammar
            ends = list(constraints[row].end_tokens)
            kept = constrained[slot, ends].clone()
            constrained[slot] = float("-inf")
            constrained[slot, ends] = kept
    masked[rows] = constrained
    return masked


__all__ = ["GrammarTokenizer", "TokenConstraint", "auto_call_grammar", "forced_call_grammar", "json_reply_grammar", "mask_logits"]
