"""JSON replies on the local backends: OpenAI's ``response_format`` and ``with_structured_output(method="json_schema")``.

A call with ``response_format={"type": "json_schema", "json_schema": {"schema": ...}}`` (or
``{"type": "json_object"}``, or a pydantic model) decodes under a grammar of that schema
(:func:`.constrained.json_reply_grammar`): the reply is one JSON value that validates, as
OpenAI's structured outputs promise. :func:`reply_grammar` picks the grammar of a call,
this or the tool-call grammar of :meth:`.tool_calling.ToolTurn.grammar`.

>>> response_format_schema({"type": "json_object"})
{'type': 'object'}
>>> response_format_schema({"type": "text"})
Traceback (most recent call last):
...
ValueError: response_format must be {'type': 'json_schema', 'json_schema': {'schema': {...}}}, {'type': 'json_object'} or a pydantic model, got {'type': 'text'}
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.pydantic import is_basemodel_subclass

from .constrained import Count, json_reply_grammar
from .tool_calling import ToolTurn


def response_format_schema(response_format: Any) -> dict[str, Any]:
    """The JSON schema a ``response_format`` asks for; any other value raises ``ValueError`` naming it."""
    if isinstance(response_format, type) and is_basemodel_subclass(response_format):
        return response_format.model_json_schema()
    if isinstance(response_format, dict):
        if response_format.get("type") == "json_object":
            return {"type": "object"}
        schema = (response_format.get("json_schema") or {}).get("schema") if response_format.get("type") == "json_schema" else None
        if isinstance(schema, dict):
            return schema
    raise ValueError(
        "response_format must be {'type': 'json_schema', 'json_schema': {'schema': {...}}}, {'type': 'json_object'} "
        f"or a pydantic model, got {response_format!r}"
    )


def reply_grammar(turn: ToolTurn, response_format: Any, max_tokens: int, count: Count = len, grammar: str | None = None) -> str | None:
    """The grammar a call decodes under: its own ``grammar`` (llguidance Lark), its ``response_format``'s, else
    its tools' (``None``: free text); ``count`` is the model's token counter (:func:`.constrained.token_counter`)."""
    if grammar is not None:
        if turn.tools or response_format is not None:
            raise ValueError("a call's grammar cannot be combined with tools or response_format: give one of them")
        if not isinstance(grammar, str) or not grammar.strip():
            raise ValueError(f"grammar must be a non-empty llguidance Lark grammar, got {grammar!r}")
        return grammar
    if response_format is None:
        return turn.grammar(max_tokens, count)
    if turn.tools:
        raise ValueError("response_format and tools cannot be combined on the local backends: bind one or the other")
    return json_reply_grammar(response_format_schema(response_format), max_tokens, count)


def json_schema_output(model: Any, schema: dict[str, Any] | type, include_raw: bool, method: str = "json_schema") -> Runnable:
    """``model`` answering in JSON under ``schema`` (a pydantic model or a JSON schema), parsed as LangChain's ``with_structured_output`` parses.

    ``method="json_mode"`` (where a server's JSON mode leaves the keys to the prompt) decodes
    under ``schema`` as well, since it is known; only the traced method differs.

    >>> structured = json_schema_output(load_chat_model("smollm2-135m"), Answer, include_raw=False)  # doctest: +SKIP
    >>> structured.invoke("What is the capital of France?")                                          # doctest: +SKIP
    Answer(answer='Paris')
    """
    pydantic = isinstance(schema, type) and is_basemodel_subclass(schema)
    # JSON mode leaves the keys to the prompt on a server; here the schema is known, so a JSON-mode
    # reply decodes under it too (a 135M model in plain JSON mode wrote "{}" to a request for a joke).
    response_format = schema if pydantic else {"type": "json_schema", "json_schema": {"schema": schema}}
    llm = model.bind(response_format=response_format, ls_structured_output_format={"kwargs": {"method": method}, "schema": schema})
    parser = PydanticOutputParser(pydantic_object=schema) if pydantic else JsonOutputParser()
    if not include_raw:
        return llm | parser
    parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
    failed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=llm) | parsed.with_fallbacks([failed], exception_key="parsing_error")


class JsonSchemaOutput:
    """Mixin for a chat model that decodes ``response_format`` under a grammar: ``with_structured_output`` takes
    ``method="json_schema"`` and ``"json_mode"`` too."""

    def with_structured_output(self, schema: Any, *, method: str = "function_calling", include_raw: bool = False, **kwargs: Any) -> Runnable:
        """Replies parsed into ``schema``, decoded under its grammar either way.

        ``method="function_calling"`` (LangChain's default) forces a tool of that schema;
        ``"json_schema"`` asks for a bare JSON reply (``response_format``) of that schema;
        ``"json_mode"`` the same here (the schema is known, so it constrains the reply too).
        """
        if method in ("json_schema", "json_mode"):
            if kwargs.keys() - {"strict"}:
                raise ValueError(f"unsupported arguments {sorted(kwargs.keys() - {'strict'})} for method={method!r}")
            return json_schema_output(self, schema, include_raw, method)
        if method != "function_calling":
            raise ValueError(f"method must be 'function_calling', 'json_schema' or 'json_mode', got {method!r}")
        return super().with_structured_output(schema, include_raw=include_raw, **kwargs)


__all__ = ["JsonSchemaOutput", "json_schema_output", "reply_grammar", "response_format_schema"]
