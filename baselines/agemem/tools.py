"""AgeMem's six memory tools (their argument schemas) and the stage prompts."""

from __future__ import annotations

import re
from typing import Any, Literal

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, field_validator

from ..sumer_prompts import SUBMIT_TOOL, sumer_tools


Stage = Literal["build", "distract", "answer"]


STAGES: tuple[Stage, ...] = ("build", "distract", "answer")


# Hits a retrieve_memory call may ask for: enough to gather evidence, few enough that one
# reply cannot flood a small model's context.
MAX_RETRIEVE_K = 20


# -- the tools the model sees ---------------------------------------------------------------------


class AddMemoryArgs(BaseModel):
    """ADD (AgeMem): store a new fact in long-term memory; the reply gives its id (m1, m2, ...)."""

    content: str = Field(min_length=1, description="the fact to remember, self-contained")
    tags: list[str] = Field(default_factory=list, description="optional short labels, e.g. a person's name")


class UpdateMemoryArgs(BaseModel):
    """UPDATE (AgeMem): replace the content of a long-term memory item."""

    memory_id: str = Field(description="id of the item, e.g. m3")
    content: str = Field(min_length=1, description="the new content")


class DeleteMemoryArgs(BaseModel):
    """DELETE (AgeMem): remove a stale or useless long-term memory item."""

    memory_id: str = Field(description="id of the item, e.g. m3")


class RetrieveMemoryArgs(BaseModel):
    """RETRIEVE (AgeMem): search long-term memory by meaning; the best items come back in the reply."""

    query: str = Field(min_length=1, description="what you are looking for")
    k: int = Field(3, ge=1, le=MAX_RETRIEVE_K, description=f"how many items to return (1 to {MAX_RETRIEVE_K})")


def _split_group_ids(value: Any) -> Any:
    """A list of ids, or one string such as ``"g2, g3"`` or ``"g2-g5"``, as a list of tokens."""
    if isinstance(value, (str, int)):
        value = [value]
    if isinstance(value, list):
        tokens: list[str] = []
        for item in value:
            tokens.extend(t for t in re.split(r"[\s,;]+", str(item).strip().strip("[]")) if t)
        return tokens
    return value


class SummarizeContextArgs(BaseModel):
    """SUMMARY (AgeMem): replace a span of consecutive context groups with your summary of them."""

    group_ids: list[str] = Field(min_length=1, description='ids of consecutive context groups, e.g. ["g2", "g3"] or "g2-g5"')
    summary: str = Field(min_length=1, description="what those groups said that is worth keeping")

    _split = field_validator("group_ids", mode="before")(_split_group_ids)


class FilterContextArgs(BaseModel):
    """FILTER (AgeMem): remove context groups that are no longer useful."""

    group_ids: list[str] = Field(min_length=1, description='ids of the context groups to remove, e.g. ["g2", "g4"]')

    _split = field_validator("group_ids", mode="before")(_split_group_ids)


TOOL_ARGS: dict[str, type[BaseModel]] = {
    "add_memory": AddMemoryArgs,
    "update_memory": UpdateMemoryArgs,
    "delete_memory": DeleteMemoryArgs,
    "retrieve_memory": RetrieveMemoryArgs,
    "summarize_context": SummarizeContextArgs,
    "filter_context": FilterContextArgs,
}


"""The six AgeMem actions by tool name (paper names: ADD, UPDATE, DELETE, RETRIEVE, SUMMARY, FILTER)."""


def agemem_tools() -> list[dict[str, Any]]:
    """The six tools as OpenAI tool schemas, ready for ``model.bind_tools``.

    >>> [tool["function"]["name"] for tool in agemem_tools()]
    ['add_memory', 'update_memory', 'delete_memory', 'retrieve_memory', 'summarize_context', 'filter_context']
    """
    tools = []
    for name, args in TOOL_ARGS.items():
        schema = convert_to_openai_tool(args)
        schema["function"]["name"] = name
        tools.append(schema)
    return tools


WRITE_MODES = ("free", "line")
"""How stage 1 writes memory: as the model decides (AgeMem), or one line of each arriving message (ours)."""

ANSWER_MODES = ("free", "retrieve", "retrieve-submit", "retrieve-extract")
"""How stage 3 runs: as the model decides (AgeMem); or with a forced ``retrieve_memory`` call first (ours);
or that call, then a forced ``submit_answer`` call whose argument is the answer (ours, SUMER's answer form);
or that call with its answer narrowed to a span of the retrieval's reply, or yes or no (ours, extractive)."""


RETRIEVE_REPLIES = ("scored", "best")
"""What a ``retrieve_memory`` call returns: up to ``k`` items, each with its id, score and tags (the default); or the
best item's content alone, whatever ``k`` was asked (ours, for small models, whose answers echo what they read)."""


def submit_answer_tool() -> dict[str, Any]:
    """The ``submit_answer`` tool of ``answer_mode="retrieve-submit"``: SUMER's, whose schema asks for a short answer.

    >>> submit_answer_tool()["function"]["parameters"]["required"]
    ['answer']
    """
    return sumer_tools()[1]


# The longest answer span, in words: LoCoMo-style gold answers are short ("the cello", "7 May 2023").
MAX_SPAN_WORDS = 5


def answer_spans(text: str, max_words: int = MAX_SPAN_WORDS) -> list[str]:
    """The distinct runs of 1 to ``max_words`` consecutive words of ``text``, then ``yes`` and ``no``.

    Words are split on white space and lose the punctuation at their ends, as answer F1 ignores it.

    >>> answer_spans("Bo: I run.", max_words=2)
    ['Bo', 'Bo I', 'I', 'I run', 'run', 'yes', 'no']
    """
    words = [word for word in (token.strip(".,;:!?\"'()[]") for token in text.split()) if word]
    spans = (" ".join(words[start:start + size]) for start in range(len(words)) for size in range(1, max_words + 1)
             if start + size <= len(words))
    return list(dict.fromkeys([*spans, "yes", "no"]))


def span_choice_submit_tool(text: str) -> dict[str, Any]:
    """``submit_answer`` with its ``answer`` narrowed to :func:`answer_spans` of ``text`` (``answer_mode="retrieve-extract"``).

    A small model asked for a short answer writes a sentence around what it read; here every
    answer, greedy or sampled, is a span of what its own query retrieved, so it can match a gold.

    >>> tool = span_choice_submit_tool("Miso.")["function"]
    >>> tool["name"], tool["parameters"]["properties"]["answer"]["enum"]
    ('submit_answer', ['Miso', 'yes', 'no'])
    """
    tool = submit_answer_tool()
    return {**tool, "function": _one_enum_argument(tool["function"], "answer", answer_spans(text))}


def _one_enum_argument(function: dict[str, Any], argument: str, values: list[str]) -> dict[str, Any]:
    """``function`` taking ``argument`` alone, narrowed to ``values`` (the grammar then allows nothing else)."""
    schema = {key: value for key, value in function["parameters"]["properties"][argument].items() if key != "minLength"}
    parameters = {**function["parameters"], "properties": {argument: {**schema, "enum": values}}, "required": [argument]}
    return {**function, "parameters": parameters}


# A stored line is cut to this many characters, so a forced call always fits its turn's tokens.
MAX_LINE_CHARS = 160


def message_lines(message: str) -> list[str]:
    r"""The distinct non-empty lines of ``message``, stripped and cut to ``MAX_LINE_CHARS``, in order.

    >>> message_lines("Session 2:\nAnn: I moved to Oslo.\n\nAnn: I moved to Oslo.")
    ['Session 2:', 'Ann: I moved to Oslo.']
    """
    lines = (line.strip()[:MAX_LINE_CHARS].strip() for line in message.splitlines())
    return list(dict.fromkeys(line for line in lines if line))


def line_choice_tools(message: str) -> list[dict[str, Any]]:
    r"""The six tools with ``add_memory`` narrowed to storing one line of ``message`` verbatim.

    Its ``content`` becomes an enum of :func:`message_lines` and its ``tags`` are dropped, so
    a call forced to ``add_memory`` under this schema (grammar-constrained on the local
    backends, guided decoding on vLLM) chooses which line to keep and nothing else.

    >>> tool = line_choice_tools("Ann: Hi.\nBo: I run on Sundays.")[0]["function"]
    >>> tool["parameters"]["properties"]["content"]["enum"], tool["parameters"]["required"]
    (['Ann: Hi.', 'Bo: I run on Sundays.'], ['content'])
    """
    tools = agemem_tools()
    tools[0]["function"] = _one_enum_argument(tools[0]["function"], "content", message_lines(message))
    return tools


STAGE_INSTRUCTIONS: dict[str, str] = {
    "build": (
        "Stage 1 of 3: content arrives piece by piece. Store the facts a later question may need with "
        "add_memory (fix or drop stale items with update_memory and delete_memory). When you are done "
        "with a piece, reply with a short text and no tool call."
    ),
    "distract": (
        "Stage 2 of 3: your context was cleared; your long-term memory is kept. The content arriving now "
        "is probably not needed later: keep the context short with filter_context or summarize_context. "
        "When you are done with a piece, reply with a short text and no tool call."
    ),
    "answer": (
        "Stage 3 of 3: a question arrives. Use retrieve_memory to find what you stored, then reply with "
        "text only, giving the final answer in \\boxed{}."
    ),
}
# Stage 3's instruction when its answer is a submit_answer call (answer_mode "retrieve-submit" or "retrieve-extract").
SUBMIT_ANSWER_INSTRUCTION = (
    f"Stage 3 of 3: a question arrives. Use retrieve_memory to find what you stored, then call {SUBMIT_TOOL} "
    "with a short answer."
)


SYSTEM_PROMPT = """You are an agent with a long-term memory store and a short-term context (this conversation).
Tools: add_memory, update_memory, delete_memory manage long-term memory items (ids m1, m2, ...); retrieve_memory searches them; summarize_context and filter_context shrink the context.
Every user message and tool reply starts with its context group id, e.g. [g3]. An assistant message and its tool replies are one group; summarize or filter whole groups only.
{instruction}
Context groups now: {groups}"""


FORCE_ANSWER_PROMPT = "Answer the question now from what you know, without tools. Put the final answer in \\boxed{}."
FORCE_SUBMIT_PROMPT = f"Answer the question now from what you know: call {SUBMIT_TOOL} with a short answer."
