"""Grammar-constrained decoding: forced tool calls that always parse and validate, on the real embedded model.

The grammar tests feed whole replies, tokenized by the real SmolLM2 tokenizer, through
llguidance's matcher; the model tests decode with the batched engine.
"""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_memagent.agents.constrained import GrammarTokenizer, auto_call_grammar, forced_call_grammar
from langgraph_memagent.agents.tool_calling import forced_reply_prefix, normalize_tool_choice


@tool
def search_memory(query: str, top_k: int = 3) -> str:
    """Search the conversation memory for turns about query."""
    return f"no turn about {query}"


@tool
def submit_answer(answer: str, confidence: Literal["low", "high"]) -> str:
    """Submit the final answer."""
    return "submitted"


TOOLS = [convert_to_openai_tool(search_memory), convert_to_openai_tool(submit_answer)]
QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What is Melanie's favourite hobby?",
    "Where did Jon travel last summer?",
    "How many kids does Gina have?",
]


@pytest.fixture(scope="module")
def grammar_tokenizer(embedded_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir)
    return tokenizer, GrammarTokenizer(tokenizer, len(tokenizer))


def _accepts(grammar_tokenizer, grammar: str, reply: str) -> bool:
    """Whether the grammar takes all of ``reply`` (tokenized as the model would write it) and may then end."""
    tokenizer, grammars = grammar_tokenizer
    constraint = grammars.constraint(grammar, [tokenizer.eos_token_id])
    tokens = tokenizer.encode(reply, add_special_tokens=False)
    return constraint.matcher.try_consume_tokens(tokens) == len(tokens) and constraint.matcher.is_accepting()


CALL = '<tool_call>\n{"name": "search_memory", "arguments": {"query": "support group"}}\n</tool_call>'


@pytest.mark.embedded
@pytest.mark.parametrize(
    ("choice", "reply", "accepted"),
    [
        ("required", 'search_memory", "arguments": {"query": "support group", "top_k": 3}}\n</tool_call>', True),
        ("required", 'submit_answer", "arguments": {"answer": "May 7", "confidence": "high"}}\n</tool_call>', True),
        ("required", 'lookup", "arguments": {"query": "x"}}\n</tool_call>', False),  # no such tool
        ("required", 'submit_answer", "arguments": {"answer": "May 7", "confidence": "sure"}}\n</tool_call>', False),  # not in the enum
        ("required", 'submit_answer", "arguments": {"answer": "May 7"}}\n</tool_call>', False),  # a required field missing
        ("required", 'search_memory", "arguments": {"query": "x", "type": "string"}}\n</tool_call>', False),  # an undeclared key
        ("required", 'search_memory", "arguments": {"query": "x", "top_k": "3"}}\n</tool_call>', False),  # a string for an integer
        ("required", 'search_memory", "arguments": {"query": "a"}}\n</tool_call>\n' + CALL.replace("support group", "b"), True),  # 2 calls fit
        ("required", 'search_memory", "arguments": {"query": "a"}}\n</tool_call>\n' + "\n".join([CALL] * 2), False),  # 3 do not
        ("submit_answer", ' {"answer": "Paris", "confidence": "low"}}\n</tool_call>', True),
        ("submit_answer", ' {"query": "Paris"}}\n</tool_call>', False),  # the other tool's arguments
        ("required", 'search_memory", "arguments": {"query": "' + "0" * 200 + '"}}\n</tool_call>', False),  # past the length bound
    ],
)
def test_forced_call_grammar_takes_exactly_the_valid_calls(grammar_tokenizer, choice, reply, accepted):
    grammar = forced_call_grammar(TOOLS, normalize_tool_choice(choice, ["search_memory", "submit_answer"]), max_tokens=256)
    assert _accepts(grammar_tokenizer, grammar, reply) is accepted


@pytest.mark.embedded
@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        ("The support group met in May.", True),  # no call: free text
        ("Let me look that up." + CALL, True),
        (CALL + "\n" + CALL, True),  # two calls, one per line (a 512-token reply may make three)
        ("\n".join([CALL] * 4), False),  # more calls than fit in 512 tokens
        ("<tool_call> I will search.", False),  # an opened call must go on as a call
        ('<tool_call>\n{"name": "lookup", "arguments": {}}\n</tool_call>', False),  # no such tool
        ('<tool_call>\n{"name": "search_memory", "arguments": {"top_k": 3}}\n</tool_call>', False),  # "query" missing
        (CALL + " Done.", False),  # nothing but another call after a call
        ('Calling {"name": "search_memory", "arguments": {"query": "x"}}', False),  # a call outside the tag
        ("Done.\n<tool_response>\nno turn\n</tool_response>", False),  # the tool's reply is not the model's to write
        ("<tool_ <tool_ I will look.", True),  # half-written tags are text (this once exhausted llguidance's lexer)
        ("word " * 260 + CALL, False),  # a call opened too late (after 256 of 512 tokens) to close within them
        ("word " * 200 + CALL, True),
    ],
)
def test_auto_call_grammar_leaves_text_free_and_constrains_calls_once_opened(grammar_tokenizer, reply, accepted):
    assert _accepts(grammar_tokenizer, auto_call_grammar(TOOLS, max_tokens=512), reply) is accepted


@pytest.mark.embedded
def test_auto_tool_choice_calls_of_the_real_model_all_validate(greedy_model):
    """With ``tool_choice="auto"`` the model decides whether to call; every call it opens validates."""
    bound = greedy_model.bind_tools([search_memory, submit_answer])
    replies = bound.batch([f"Use the search_memory tool to answer: {question}" for question in QUESTIONS], max_tokens=256)
    assert all(reply.invalid_tool_calls == [] for reply in replies), [reply.invalid_tool_calls for reply in replies]
    calls = [call for reply in replies for call in reply.tool_calls]
    assert calls  # the greedy model opens calls for some of these questions
    for call in calls:
        search_memory.args_schema.model_validate(call["args"])


@pytest.mark.embedded
def test_forced_calls_of_the_real_model_all_validate_and_free_rows_are_untouched(greedy_model):
    """Forced calls decode beside a free reply in one batch: every call parses and validates,
    and the free reply is exactly what it is alone."""
    from concurrent.futures import ThreadPoolExecutor

    alone = greedy_model.invoke("Name a colour.", max_tokens=24)
    forced = [
        (greedy_model.bind_tools([search_memory, submit_answer], tool_choice=choice), question)
        for choice in ("required", "submit_answer")
        for question in QUESTIONS
    ]
    with ThreadPoolExecutor(max_workers=len(forced) + 1) as pool:
        free = pool.submit(greedy_model.invoke, "Name a colour.", max_tokens=24)
        calls = [pool.submit(bound.invoke, question, max_tokens=64) for bound, question in forced]
        replies = [call.result() for call in calls]
    assert free.result().content == alone.content
    assert greedy_model.engine.peak_rows > 1  # constrained and free rows shared decode steps
    schemas = {"search_memory": search_memory.args_schema, "submit_answer": submit_answer.args_schema}
    for (bound, question), reply in zip(forced, replies):
        assert reply.invalid_tool_calls == [] and len(reply.tool_calls) == 1, (question, reply)
        call = reply.tool_calls[0]
        schemas[call["name"]].model_validate(call["args"])  # raises if an argument is wrong
        assert call["name"] == "submit_answer" or bound.kwargs["tool_choice"] == "required"
        assert reply.response_metadata["finish_reason"] == "stop"
        # The forced prefix is prompt, not completion: a trainer's rows keep what the model generated.
        prompt = greedy_model.tokenizer.decode(reply.response_metadata["prompt_token_ids"])
        assert prompt.endswith(forced_reply_prefix(bound.kwargs["tool_choice"]))


@pytest.mark.embedded
def test_structured_output_of_the_real_model_always_parses(greedy_model):
    """LangChain's ``with_structured_output`` binds the schema as a forced tool: decoded under its grammar."""
    from pydantic import BaseModel, Field

    class Answer(BaseModel):
        """The answer to the question."""

        answer: str = Field(description="a short answer")
        confidence: Literal["low", "high"]

    structured = greedy_model.with_structured_output(Answer, include_raw=True)
    for question in ["What is the capital of France?", "How many legs does a spider have?", "Name a fruit."]:
        result = structured.invoke(question, max_tokens=64)
        assert result["parsing_error"] is None and isinstance(result["parsed"], Answer), result


@pytest.mark.embedded
def test_json_schema_structured_output_and_json_mode_of_the_real_model_always_parse(greedy_model):
    """``with_structured_output(method="json_schema")`` and ``response_format`` decode one JSON value under the schema."""
    import json

    from pydantic import BaseModel

    class Answer(BaseModel):
        """The answer to the question."""

        answer: str
        confidence: Literal["low", "high"]

    structured = greedy_model.bind(max_tokens=64).with_structured_output(Answer, method="json_schema", include_raw=True)
    for question in ["What is the capital of France?", "How many legs does a spider have?", "Name a fruit."]:
        result = structured.invoke(question)
        assert result["parsing_error"] is None and isinstance(result["parsed"], Answer), result
        assert result["raw"].tool_calls == []  # a bare JSON reply, no tool call
    reply = greedy_model.invoke("Describe Paris.", response_format={"type": "json_object"}, max_tokens=48)
    assert isinstance(json.loads(reply.content), dict), reply.content
