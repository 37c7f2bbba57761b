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
- :func:`json_reply_grammar`: one JSON value under a schema (``response_format``);
- :func:`decision_grammar`: a stop word or a call in a text form (InfMem's PreThink);
- :func:`answer_grammar`: a final answer in the ``\boxed{}`` form the prompt asks for (MemAgent's
  answer on the local backends).

>>> tools = [{"type": "function", "function": {"name": "search", "parameters": {
...     "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
>>> print(forced_call_grammar(tools, {"type": "function", "function": {"name": "search"}}, max_tokens=128))
start: " " args_0 "}\n</tool_call>"
args_0: %json {"type": "object", "properties": {"query": {"type": "string", "maxLength": 99}}, "required": ["query"], "additionalProperties": false, "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}}
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

from .extras import needs_extra

# Limits a forced call's arguments get where their schema sets none (ours: the embedded model,
# forced to call, looped inside one string until its token limit cut the call).
MAX_STRING_CHARS = 160
MAX_ARRAY_ITEMS = 16
# An array gets as many items as leave each this many characters (at least one item).
MIN_ITEM_CHARS = 16
# Digits of an integer whose schema sets no bound.
INTEGER_DIGITS = 9
# Characters a number is counted at: JSON Schema cannot bound its fraction digits, nor can llguidance.
NUMBER_CHARS = 24
# What a value of any type may be in a bounded call: a scalar (an object's keys could not be bounded).
_ANY_SCALAR = [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]
# Calls one reply may make (SUMER's cap per turn), each with at least this many tokens.
MAX_CALLS = 5
CALL_TOKENS = 128
# JSON written as json.dumps writes it (the tool prompt's own example), with no other whitespace.
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
_ITEM_SEPARATOR, _KEY_SEPARATOR = _JSON_STYLE["item_separator"], _JSON_STYLE["key_separator"]
# How many tokens a text takes: a tokenizer's count, or ``len`` (a token holds at least one character).
Count = Callable[[str], int]


def _lark_string(text: str) -> str:
    """``text`` as a Lark string literal."""
    return json.dumps(text)


def _fit(schema: Any, budget: int, count: Count = len) -> Any:
    """``schema`` closed and bounded so that every value it admits takes at most ``budget`` tokens of JSON.

    A forced call has to close within its token limit. ``count`` gives the tokens of the
    schema's fixed text (keys, punctuation, enum values; by default its characters, the most
    a text can take); a string's characters each count as a token, which bounds text
    without escapes. Objects take only their declared properties (as OpenAI's strict mode
    does), and those share what the keys and punctuation leave; an array takes as many items
    as leave each ``MIN_ITEM_CHARS``; strings take at most ``MAX_STRING_CHARS``, integers
    ``INTEGER_DIGITS`` digits. Bounds the schema sets are kept where they fit. Raises
    ``ValueError`` when what the schema requires cannot fit.

    >>> _fit({"type": "array", "items": {"type": "string"}}, 40)
    {'type': 'array', 'items': {'type': 'string', 'maxLength': 16}, 'maxItems': 2}
    """
    schema = {} if schema is True else schema  # JSON Schema's "anything"
    if not isinstance(schema, dict) or "enum" in schema or "const" in schema:
        return schema
    kind = schema.get("type") or ("array" if "items" in schema else "object" if "properties" in schema else None)
    schema = {**schema, "type": kind} if kind else schema
    if isinstance(kind, list):
        schema = {**{key: value for key, value in schema.items() if key != "type"}, "anyOf": [{"type": each} for each in kind]}
    elif kind is None and not any(key in schema for key in ("anyOf", "oneOf", "allOf")):
        schema = {**schema, "anyOf": _ANY_SCALAR}
    fitted = dict(schema)
    if "allOf" in schema:
        fitted["allOf"] = [_fit(branch, budget, count) for branch in schema["allOf"]]
    for key in ("anyOf", "oneOf"):
        if key in schema:  # the branches that fit
            fitted[key] = [branch for branch in (_fit_or_none(branch, budget, count) for branch in schema[key]) if branch is not None]
            if not fitted[key]:
                raise ValueError(f"no branch of {json.dumps(schema)[:80]} fits in {budget} tokens")
    if kind == "string":
        fitted["maxLength"] = min(schema.get("maxLength", MAX_STRING_CHARS), MAX_STRING_CHARS, budget - count('""'))
        if fitted["maxLength"] < schema.get("minLength", 0) or fitted["maxLength"] < 0:
            raise ValueError(f"a string of at least {schema.get('minLength', 0)} characters cannot fit in {budget} tokens")
    elif kind == "integer":
        limit = 10 ** max(min(INTEGER_DIGITS, budget - 1), 1) - 1
        fitted["minimum"], fitted["maximum"] = max(schema.get("minimum", -limit), -limit), min(schema.get("maximum", limit), limit)
    elif kind == "array":
        fitted.update(_fit_items(schema, budget, count))
    elif kind == "object":
        fitted.update(_fit_properties(schema, budget, count))
    if _longest(fitted, count) > budget:
        raise ValueError(f"{json.dumps(schema)[:80]} cannot fit in {budget} tokens")
    return fitted


def _fit_or_none(schema: Any, budget: int, count: Count) -> Any:
    try:
        return _fit(schema, budget, count)
    except ValueError:
        return None


def _fit_items(schema: dict[str, Any], budget: int, count: Count) -> dict[str, Any]:
    """An array's ``items`` and ``maxItems``: as many items as fit (MIN_ITEM_CHARS each), sharing ``budget``."""
    least, brackets, separator = schema.get("minItems", 0), count("[]"), count(_ITEM_SEPARATOR)
    most = min(schema.get("maxItems", MAX_ARRAY_ITEMS), max(least, 1, (budget - brackets + separator) // (MIN_ITEM_CHARS + separator)))
    for items in range(most, max(least, 1) - 1, -1):
        fitted = _fit_or_none(schema.get("items", {}), (budget - brackets - separator * (items - 1)) // items, count)
        if fitted is not None:
            return {"items": fitted, "maxItems": items}
    if least == 0:
        return {"maxItems": 0}
    raise ValueError(f"an array of at least {least} items cannot fit in {budget} tokens")


def _fit_properties(schema: dict[str, Any], budget: int, count: Count) -> dict[str, Any]:
    """An object's ``properties``, closed: after keys and punctuation, each property of fixed
    length takes its length and the others share the rest equally."""
    properties = schema.get("properties", {})
    fixed = {key: _fit(value, budget, count) for key, value in properties.items() if not _variable(value)}
    variable = [key for key in properties if key not in fixed]
    keys = sum(count(json.dumps(key) + _KEY_SEPARATOR) for key in properties)
    left = budget - count("{}") - keys - count(_ITEM_SEPARATOR) * max(len(properties) - 1, 0)
    share = (left - sum(_longest(value, count) for value in fixed.values())) // max(len(variable), 1)
    fitted = {key: fixed[key] if key in fixed else _fit(value, share, count) for key, value in properties.items()}
    return {"properties": fitted, "additionalProperties": False}


def _variable(schema: Any) -> bool:
    """Whether the longest value ``schema`` admits depends on the room it is given."""
    if schema is True:
        return True
    if not isinstance(schema, dict) or "enum" in schema or "const" in schema:
        return False
    kind = schema.get("type")
    if kind in ("boolean", "null", "number", "integer"):
        return False  # an integer without bounds gets INTEGER_DIGITS
    if kind == "object" or "properties" in schema:
        return any(map(_variable, schema.get("properties", {}).values()))
    branches = [branch for key in ("anyOf", "oneOf", "allOf") for branch in schema.get(key, [])]
    return kind is not None or not branches or any(map(_variable, branches))


def _longest(schema: Any, count: Count) -> int:
    """Tokens of the longest JSON value a schema bounded by :func:`_fit` admits, counted as :func:`_fit` counts."""
    if "enum" in schema or "const" in schema:
        return max(count(json.dumps(value)) for value in schema.get("enum", [schema.get("const")]))
    lengths = [_longest(branch, count) for key in ("anyOf", "oneOf") for branch in schema.get(key, [])]
    lengths += [min(_longest(branch, count) for branch in schema["allOf"])] if "allOf" in schema else []
    kind = schema.get("type")
    if kind == "string":
        lengths.append(count('""') + schema["maxLength"])
    elif kind == "integer":
        lengths.append(max(count(str(schema["minimum"])), count(str(schema["maximum"]))))
    elif kind in ("number", "boolean", "null"):
        lengths.append(NUMBER_CHARS if kind == "number" else count("false" if kind == "boolean" else "null"))
    elif kind == "array":
        items = schema["maxItems"]
        lengths.append(count("[]") + items * _longest(schema["items"], count) + count(_ITEM_SEPARATOR) * (items - 1) if items else count("[]"))
    elif kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        members = [count(json.dumps(key) + _KEY_SEPARATOR) + _longest(value, count) for key, value in properties.items()]
        lengths.append(count("{}") + sum(members) + count(_ITEM_SEPARATOR) * max(len(members) - 1, 0))
    return max(lengths)


# A call in the tool prompt's Hermes format, after its opening tag (auto) or inside the forced prefix.
_OPENING = "<tool_call>"
_CALL_HEAD = '\n{"name": "'
_AFTER_NAME = '", "arguments": '
_CALL_TAIL = "}\n</tool_call>"


def forced_call_grammar(tools: Sequence[dict[str, Any]], tool_choice: Any, max_tokens: int, count: Count = len) -> str:
    """The Lark grammar of a reply forced to call a tool, from after ``forced_reply_prefix(tool_choice)``.

    ``tools`` are OpenAI tool schemas; ``tool_choice`` is ``"required"`` (calls of any of
    them, one per line: as many as :func:`_call_count` fits in ``max_tokens``) or
    ``{"function": {"name": ...}}`` (one call of that tool). The arguments follow the tool's
    schema, bounded by :func:`_fit` to what each call's tokens leave after its fixed text and
    the end token, then the closing tag ends the call. ``count`` gives the tokens of a fixed
    text (pass the model's tokenizer; ``len`` is the bound for any tokenization): a call whose
    strings are text without escapes then closes within ``max_tokens``.
    """
    names = [tool["function"]["name"] for tool in tools]
    if tool_choice == "required":  # the prefix ends with the name's opening quote
        calls = _call_count(max_tokens)
        return "\n".join([f"start: named_call{_more_calls(calls)}", *_call_rules(tools, max_tokens // calls, count)])
    name = tool_choice["function"]["name"]
    if name not in names:
        raise ValueError(f"tool_choice names {name!r}, which is not among the bound tools {names}")
    index = names.index(name)  # the prefix ends with '"arguments":'
    arguments = _json_rule(_parameters(tools[index]), max_tokens - count(" " + _CALL_TAIL) - 1, count, f"the arguments of {name!r}")
    return "\n".join([f'start: " " args_{index} {_lark_string(_CALL_TAIL)}', f"args_{index}: {arguments}"])


def auto_call_grammar(tools: Sequence[dict[str, Any]], max_tokens: int, count: Count = len) -> str:
    r"""The Lark grammar of a reply that may call tools (``tool_choice="auto"``).

    Text is free, except that it never writes a call outside the ``<tool_call>`` tag (no
    ``{"name"``) nor a tool's reply (``<tool_response``). Once the reply opens
    ``<tool_call>`` each call is one of ``tools`` with arguments that follow its schema (as in
    :func:`forced_call_grammar`), and calls may follow one another, one per line, until the
    reply ends.

    Every call that opens must close within ``max_tokens``: the text before the first call
    takes at most half of them, and the rest is shared by the calls that fit
    (:func:`_call_count`), whose arguments are bounded accordingly. A tool none of whose calls
    could close is not offered; with none left the reply is text.

    >>> tools = [{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]
    >>> print("\n".join(auto_call_grammar(tools, max_tokens=512).splitlines()[:4]))
    start: FREE | opening call ("\n<tool_call>" call){0,1}
    FREE: /(?s:.*)/ & ~/(?s:.*)(<tool_call>|<tool_response|\{\s*"name")(?s:.*)/
    opening[lazy, max_tokens=256]: FREE "<tool_call>"
    call: "\n{\"name\": \"" named_call
    """
    preamble = max_tokens // 2
    calls = _call_count(max_tokens - preamble)
    rules = _call_rules(tools, (max_tokens - preamble) // calls, count, only_fitting=True)
    # No call outside the tag, and no tool reply: the parser drops everything from
    # "<tool_response" on, and after a call the embedded model wrote such lines before its next
    # call (AgeMem on LoCoMo), which was then lost.
    free = 'FREE: /(?s:.*)/ & ~/(?s:.*)(<tool_call>|<tool_response|\\{\\s*"name")(?s:.*)/'
    if not rules:  # no call could close within the limit: text only
        return f"start: FREE\n{free}"
    # The text before a call is bounded in tokens (llguidance's max_tokens): a bound in
    # characters made its lexer run out of expressions.
    return "\n".join([
        f"start: FREE | opening call{_more_calls(calls)}",
        free,
        f"opening[lazy, max_tokens={preamble}]: FREE {_lark_string(_OPENING)}",
        *rules,
    ])


def _call_count(max_tokens: int) -> int:
    """How many calls one reply may make in ``max_tokens``: ``CALL_TOKENS`` each, 1 to ``MAX_CALLS``."""
    return max(1, min(MAX_CALLS, max_tokens // CALL_TOKENS))


def _more_calls(calls: int) -> str:
    """The grammar of up to ``calls - 1`` further calls, one per line."""
    return f" ({_lark_string(chr(10) + _OPENING)} call){{0,{calls - 1}}}" if calls > 1 else ""


def _call_rules(tools: Sequence[dict[str, Any]], call_tokens: int, count: Count, *, only_fitting: bool = False) -> list[str]:
    """The rules ``call`` (after the opening tag) and ``named_call`` (from the name's opening
    quote: any tool's name, its arguments, the closing tag), each call closing within ``call_tokens``
    with a line and tag before it and an end token after it.

    A tool whose arguments cannot fit raises ``ValueError``, or is left out with
    ``only_fitting`` (no rules at all when none fits).
    """
    calls, arguments = [], []
    for index, tool in enumerate(tools):
        name = tool["function"]["name"]
        head = name + _AFTER_NAME
        fixed = count("\n" + _OPENING + _CALL_HEAD + head + _CALL_TAIL) + 1
        try:
            arguments.append(f"args_{index}: {_json_rule(_parameters(tool), call_tokens - fixed, count, 'the arguments of ' + repr(name))}")
        except ValueError:
            if only_fitting:
                continue
            raise
        calls.append(f"{_lark_string(head)} args_{index} {_lark_string(_CALL_TAIL)}")
    if not calls:
        return []
    return [f"call: {_lark_string(_CALL_HEAD)} named_call", "named_call: " + " | ".join(calls), *arguments]


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    return tool["function"].get("parameters") or {"type": "object", "properties": {}}


def _json_rule(schema: dict[str, Any], budget: int, count: Count, what: str = "the JSON reply") -> str:
    """``%json`` of ``schema`` bounded by :func:`_fit` to ``budget`` tokens; one line naming ``what`` when it cannot fit."""
    from langchain_core.utils.json_schema import dereference_refs

    try:
        bounded = _fit({key: value for key, value in dereference_refs(schema).items() if key != "$defs"}, budget, count)
    except ValueError as error:
        raise ValueError(f"{what} cannot fit in the token limit ({budget} tokens left for it): {error}") from None
    return f"%json {json.dumps({**bounded, 'x-guidance': _JSON_STYLE})}"


def json_reply_grammar(schema: dict[str, Any], max_tokens: int, count: Count = len) -> str:
    """The Lark grammar of a reply that is one JSON value under ``schema`` (bounded as a forced call's arguments), then ends.

    >>> print(json_reply_grammar({"type": "object", "properties": {"city": {"type": "string"}}}, max_tokens=64))
    start: %json {"type": "object", "properties": {"city": {"type": "string", "maxLength": 51}}, "additionalProperties": false, "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}}
    """
    return f"start: {_json_rule(schema, max_tokens - 1, count)}"


def decision_grammar(stop: str, call_prefix: str, arguments: dict[str, Any], max_tokens: int, count: Count = len) -> str:
    r"""A reply that is ``stop`` alone, or ``call_prefix`` then one JSON object under the schema ``arguments``, closing
    within ``max_tokens`` (InfMem's PreThink: ``STOP``, or a ``retrievesearch`` call in Qwen-Agent's text form).

    >>> schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    >>> print(decision_grammar("STOP", "CALL: ", schema, max_tokens=32).splitlines()[0])
    start: "STOP" | "CALL: " args
    """
    budget = max_tokens - count(call_prefix) - 1
    return f"start: {_lark_string(stop)} | {_lark_string(call_prefix)} args\nargs: {_json_rule(arguments, budget, count, 'the call arguments')}"


# What a constrained final answer opens and closes with, by final-prompt style (agents.prompts).
_ANSWER_FORMS = {"boxed": ("\\boxed{", "}"), "answer_is": ("The answer is ", ".")}
_ANSWER_FRAME_TOKENS = 8  # the opening and closing text, counted generously


def answer_grammar(style: str, max_tokens: int) -> str:
    r"""A final answer in the form the prompt ``style`` asks for and nothing else: ``\boxed{...}``
    (or "The answer is ...."), its answer one line of at most ``max_tokens - 8`` tokens, so that
    the closing text always fits.

    >>> print(answer_grammar("boxed", 24))
    start: "\\boxed{" answer "}"
    answer[max_tokens=16]: /[^{}\n]+/
    """
    if style not in _ANSWER_FORMS:
        raise ValueError(f"style must be one of {sorted(_ANSWER_FORMS)}, got {style!r}")
    opening, closing = _ANSWER_FORMS[style]
    tokens = max(1, max_tokens - _ANSWER_FRAME_TOKENS)
    return f"start: {_lark_string(opening)} answer {_lark_string(closing)}\nanswer[max_tokens={tokens}]: /[^{{}}\\n]+/"


@functools.lru_cache(maxsize=8)
def token_counter(tokenizer: Any) -> Count:
    """How many tokens a transformers ``tokenizer`` makes of a text; one cached counter per
    tokenizer, as every call's grammar counts the same keys."""
    return functools.lru_cache(maxsize=4096)(lambda text: len(tokenizer.encode(text, add_special_tokens=False)))


class GrammarTokenizer:
    """llguidance's view of a transformers tokenizer, built once per engine (about 0.3 s)."""

    def __init__(self, tokenizer: Any, vocab_size: int):
        with needs_extra("embedded", "grammar-constrained decoding"):
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
    import llguidance.numpy
    import numpy as np
    import torch

    bitmask = llguidance.numpy.allocate_token_bitmask(len(rows), logits.shape[-1])
    for slot, row in enumerate(rows):
        if not constraints[row].finished:
            llguidance.numpy.fill_next_token_bitmask(constraints[row].matcher, bitmask, slot)
    # llguidance's NumPy kernel, not its torch one: that one is torch.compile'd, recompiles per batch-size class
    # and grad mode, and one such recompile in a serving thread traced a meta tensor and failed a whole evaluation.
    constrained = logits[rows].detach().float().cpu().numpy()
    llguidance.numpy.apply_token_bitmask_inplace(constrained, bitmask)
    for slot, row in enumerate(rows):
        if constraints[row].finished:  # only an end token may follow a complete grammar
            ends = list(constraints[row].end_tokens)
            kept = constrained[slot, ends].copy()
            constrained[slot] = -np.inf
            constrained[slot, ends] = kept
    masked = logits.clone()
    masked[rows] = torch.from_numpy(constrained).to(masked)
    return masked


__all__ = ["GrammarTokenizer", "TokenConstraint", "answer_grammar", "auto_call_grammar", "forced_call_grammar", "json_reply_grammar", "mask_logits", "token_counter"]
