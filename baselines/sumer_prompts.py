"""What SUMER's policy is shown: the two tools' schemas, the system prompt and the forced-answer prompts.

The search tool's description and the system prompt say how many neighbouring messages come
with each hit, so they follow the memory bank's ``context`` (SUMER: 2):

>>> [tool["function"]["name"] for tool in sumer_tools(0)]
['search_memory', 'submit_answer']
>>> sumer_tools(0)[0]["function"]["description"]
'Search the memory of the conversation. Returns the matching messages.'
>>> sumer_tools()[0]["function"]["description"] == SUMER_TOOLS[0]["function"]["description"]
True
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..agents.prompts import answer_template
from .memory_bank import SUMER_CONTEXT

SearchMode = Literal["semantic", "keyword"]
# What the prompts ask a query to be: anything (the SUMER paper) or the question's own words.
QueryStyle = Literal["free", "question"]

SEARCH_TOOL = "search_memory"
SUBMIT_TOOL = "submit_answer"
# Largest k one search may ask for: 20 groups of 5 messages already fill a small window.
MAX_SEARCH_K = 20


class SearchMemoryArgs(BaseModel):
    """Search the memory of the conversation. Returns the matching messages, each with the 2 messages before and after it."""

    model_config = ConfigDict(extra="forbid")

    query: str | list[str] = Field(
        description="semantic mode: a question or phrase in natural language; "
        "keyword mode: words that must all appear in a message (a list, or one string of space-separated words)"
    )
    mode: SearchMode = Field(
        "semantic",
        description="'semantic' finds messages similar in meaning to the query; "
        "'keyword' finds messages containing every keyword (in the text, speaker, date or message id)",
    )
    speaker: str | None = Field(None, description="only messages said by this speaker")
    session: int | None = Field(None, description="only messages of this session number")
    k: int = Field(5, ge=1, le=MAX_SEARCH_K, description="how many matches to return")


class SubmitAnswerArgs(BaseModel):
    """Submit the final answer to the question. This ends the search."""

    model_config = ConfigDict(extra="forbid")

    answer: str = Field(description="the answer, as short as possible (a name, date, number or short phrase)")

    @field_validator("answer", mode="before")
    @classmethod
    def _scalar_as_text(cls, value: Any) -> Any:
        # Small models often submit a bare number or year; that is still an answer.
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _tool_schema(name: str, args: type[BaseModel]) -> dict[str, Any]:
    schema = convert_to_openai_tool(args)
    schema["function"]["name"] = name
    return schema


def _neighbours(context: int) -> str:
    """What comes with each hit besides itself, as the prompts say it ("" for none)."""
    if context == 0:
        return ""
    return f" with the {'message' if context == 1 else f'{context} messages'} before and after it"


# A 135M policy left free writes its query as the start of a guessed answer, or as the tool's own
# name, though the question's words find the evidence far more often. Saying so in the prompt did
# not help the embedded policies: they searched less (kept as an ablation).
_QUESTION_QUERY = "semantic mode: the question's own words; keyword mode: words that must all appear in a message"
_QUESTION_QUERY_RULE = " Write each query in the question's own words: not the tool's name, not a guessed answer."


def sumer_tools(context: int = SUMER_CONTEXT, query_style: QueryStyle = "free") -> list[dict[str, Any]]:
    """The OpenAI-format schemas of ``search_memory`` and ``submit_answer`` for a bank showing ``context`` neighbours.

    >>> sumer_tools(0, "question")[0]["function"]["parameters"]["properties"]["query"]["description"][:40]
    "semantic mode: the question's own words;"
    """
    search = _tool_schema(SEARCH_TOOL, SearchMemoryArgs)
    each = f", each{_neighbours(context)}" if context else ""
    search["function"]["description"] = f"Search the memory of the conversation. Returns the matching messages{each}."
    if query_style == "question":
        search["function"]["parameters"]["properties"]["query"]["description"] = _QUESTION_QUERY
    return [search, _tool_schema(SUBMIT_TOOL, SubmitAnswerArgs)]


SUMER_TOOLS: list[dict[str, Any]] = sumer_tools()

_SYSTEM_PROMPT = """You answer a question about {source} that you cannot see. It is stored in a memory bank of {items}; search it with the tools, then answer.

Tools:
- search_memory(query, mode, speaker, session, k): mode "semantic" finds messages similar in meaning to a natural-language query; mode "keyword" finds messages that contain every keyword (names, places, dates, rare words work best). Filter by speaker or session when the question names them. Each match comes{neighbours} with its session and date.
- submit_answer(answer): give the final, short answer. This ends the episode.

Rules: at most {max_parallel_calls} tool calls per turn and {max_turns} turns. Search until you have the evidence, rewording or switching mode when a search finds nothing, then call submit_answer.{query_rule} Answer from the memory, not from guesses; give dates as the memory states them.{overview}"""


def sumer_system_prompt(
    *, source: str, items: str, context: int, max_parallel_calls: int, max_turns: int, overview: str, query_style: QueryStyle = "free"
) -> str:
    """SUMER's system prompt for a bank of ``items`` from ``source`` showing ``context`` neighbours per hit."""
    neighbours = _neighbours(context) + "," if context else ""
    return _SYSTEM_PROMPT.format(
        source=source, items=items, neighbours=neighbours, max_parallel_calls=max_parallel_calls, max_turns=max_turns,
        query_rule=_QUESTION_QUERY_RULE if query_style == "question" else "", overview=overview,
    )


# The answer at the turn cap: MemAgent's final prompt over what the searches found ({source} is
# filled with "the conversation" or "the document").
SUMER_FORCED_ANSWER_TEMPLATE = answer_template(material="memory found by searching {source}. You cannot search any more", based_on="the memory found")
# The same prompt asking for a submit_answer call instead of a boxed reply: the embedded 135M model
# boxed none of 24 answers given the evidence turn alone, though 17 named the answer in prose.
SUMER_FORCED_SUBMIT_TEMPLATE = (
    "You are presented with a problem and memory found by searching {source}. You cannot search any more. "
    f"Please answer the problem based on the memory found by calling {SUBMIT_TOOL} with a short answer.\n\n"
    "<problem> \n{prompt}\n</problem>\n\n<memory>\n{memory}\n</memory>\n"
)
# Rules the forced answer's prompt may add before the problem (ours, not the paper's). Sampled at
# T = 1 over the evidence alone, the untrained 135M policy said "no" in 9 of 136 answers to "no"
# questions (and in 18 of 168 to "yes" ones); with "yes-no" in 25 of 136 (34 of 168), which gives
# a group of rollouts something to learn from. On dev it did not stop a trained policy's constant
# "yes" (BENCHMARKS.md section 11), so no preset sets it.
ANSWER_RULES = {"none": "", "yes-no": "If the problem asks a yes/no question, answer Yes or No.\n\n"}


def forced_answer_template(call: str, rule: str = "none") -> str:
    """The forced answer's prompt: a ``submit_answer`` call (``call="submit"``) or a boxed reply (``"text"``), with ``rule``.

    >>> print(forced_answer_template("submit", "yes-no").split("<problem>")[0].strip().splitlines()[-1])
    If the problem asks a yes/no question, answer Yes or No.
    >>> forced_answer_template("text") == SUMER_FORCED_ANSWER_TEMPLATE
    True
    """
    template = SUMER_FORCED_SUBMIT_TEMPLATE if call == "submit" else SUMER_FORCED_ANSWER_TEMPLATE
    return template.replace("<problem>", ANSWER_RULES[rule] + "<problem>", 1)
