"""The contract every graph shares, and model calls made by graph nodes: token-usage accounting
and errors that name the endpoint.

Every graph of this package makes single-user-message calls and sums what the model
reports; a failed call becomes a :class:`ModelCallError` that says which step failed and
which server it was talking to, so a user can act on it.
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.messages import BaseMessage
from typing_extensions import TypedDict


class TokenUsage(TypedDict):
    """LLM cost of a run so far, summed over calls as the model reports it."""

    llm_calls: int
    input_tokens: int
    output_tokens: int


NO_USAGE: TokenUsage = {"llm_calls": 0, "input_tokens": 0, "output_tokens": 0}


class QuestionInput(TypedDict):
    """What every graph of this package takes: a question about one long document."""

    question: str
    document: str


class AnswerOutput(TypedDict, total=False):
    """What every graph returns, so one harness can compare them; graphs add their own keys."""

    question: str
    answer: str | None  # extracted answer; None when the reply holds none
    response: str  # raw final reply
    memory: str  # what the answer call read besides the question (graph-specific)
    usage: TokenUsage


class ModelCallError(RuntimeError):
    """A model call failed; names the step and the endpoint so the user can act."""


def validated_inputs(state: dict[str, Any]) -> tuple[str, str]:
    """The run's question and document (the contract's input), or a clear error naming the bad field."""
    question, document = state.get("question"), state.get("document")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"input 'question' must be a non-empty string, got {question!r}")
    if not isinstance(document, str) or not document.strip():
        shown = document if not isinstance(document, str) else document[:40]
        raise ValueError(f"input 'document' must be a non-empty string, got {shown!r}")
    return question, document


def describe_endpoint(model: Any) -> str:
    """``"<model name> at <base url>"`` for server models, the model's name otherwise."""
    base_url = getattr(model, "openai_api_base", None) or getattr(getattr(model, "client", None), "base_url", None)
    name = getattr(model, "model_name", None) or getattr(model, "model_path", None) or type(model).__name__
    return f"{name} at {base_url}" if base_url else str(name)


def add_usage(usage: TokenUsage, reply: BaseMessage) -> TokenUsage:
    """``usage`` plus one call and the tokens ``reply`` reports (none reported counts 0)."""
    reported = getattr(reply, "usage_metadata", None) or {}
    return {
        "llm_calls": usage["llm_calls"] + 1,
        "input_tokens": usage["input_tokens"] + reported.get("input_tokens", 0),
        "output_tokens": usage["output_tokens"] + reported.get("output_tokens", 0),
    }


def describe_error(error: BaseException) -> str:
    """``"<type>: <message>"``, plus the server's reason when the client left it out.

    The OpenAI client puts only an ``error.message`` field of a reply body into its message;
    servers built on FastAPI (``transformers serve``) answer ``{"detail": ...}`` instead, and
    without it an HTTP 400 would say nothing about why.

    >>> describe_error(ValueError("bad"))
    'ValueError: bad'
    """
    text = f"{type(error).__name__}: {error}"
    body = getattr(error, "body", None)
    reason = body.get("detail") or body.get("message") if isinstance(body, dict) else body
    if reason and str(reason) not in text:
        text += f" (server said: {reason})"
    return text


def call_model(runnable: Any, messages: Sequence[BaseMessage], step: str, model: Any) -> BaseMessage:
    """``runnable.invoke(messages)``; a failure names ``step`` and ``model``'s endpoint."""
    try:
        return runnable.invoke(list(messages))
    except Exception as error:
        raise ModelCallError(f"{step}: model call to {describe_endpoint(model)} failed: {describe_error(error)}") from error


async def acall_model(runnable: Any, messages: Sequence[BaseMessage], step: str, model: Any) -> BaseMessage:
    """Async twin of :func:`call_model`."""
    try:
        return await runnable.ainvoke(list(messages))
    except Exception as error:
        raise ModelCallError(f"{step}: model call to {describe_endpoint(model)} failed: {describe_error(error)}") from error


def positive_int(name: str, value: Any, *, unit: str = "", optional: bool = False, minimum: int = 1) -> Any:
    """``value`` if it is an integer >= ``minimum`` (or None when ``optional``), else a ValueError naming it.

    >>> positive_int("chunk_tokens", 1000, unit="number of tokens")
    1000
    >>> positive_int("chunk_tokens", 0, unit="number of tokens")
    Traceback (most recent call last):
    ...
    ValueError: chunk_tokens must be a positive integer number of tokens, got 0
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        expected += f" {unit}" if unit else ""
        raise ValueError(f"{name} must be {expected}{' or None' if optional else ''}, got {value!r}")
    return value
