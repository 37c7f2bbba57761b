"""Grammar-constrained decoding: forced tool calls that always parse and validate, on the real embedded model.

The grammar tests feed whole replies, tokenized by the real SmolLM2 tokenizer, through
llguidance's matcher; the model tests decode with the batched engine.
"""

from __future__ import annotations

import json
from typing import Literal

import pytest
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_memagent.agents.constrained import GrammarTokenizer, auto_call_grammar, forced_call_grammar
from langgraph_memagent.agents.tool_calling import forced_reply_prefix, normalize_tool_choice, parse_tool_calls


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
@pytest.mark.parametrize("query", ["a </tool_call> b", "<tool_response name=\"x\"> c", "<tool_call> d"])
def test_a_forced_call_holding_tag_text_in_an_argument_is_a_valid_call(grammar_tokenizer, query):
    """The grammar lets a string hold any text, tags included; the parser must then read the call the grammar
    produced, not cut it at the tag inside the string."""
    arguments = json.dumps({"query": query})
    grammar = forced_call_grammar(TOOLS, normalize_tool_choice("search_memory", ["search_memory", "submit_answer"]), max_tokens=256)
    assert _accepts(grammar_tokenizer, grammar, " " + arguments + "}\n</tool_call>")
    call = json.dumps({"name": "search_memory", "arguments": {"query": query}})
    reply = parse_tool_calls(f"<tool_call>\n{call}\n</tool_call>", ["search_memory"])
    assert [call["args"] for call in reply.tool_calls] == [{"query": query}] and not reply.invalid_tool_calls and reply.content == ""


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


def _longest_value(schema: dict, tokens) -> object:
    """The admissible value of a bounded schema with the most tokens: strings of digits (one token each in SmolLM2), all properties, most items."""
    if "enum" in schema or "const" in schema:
        return max(schema.get("enum", [schema.get("const")]), key=lambda value: tokens(json.dumps(value)))
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return max((_longest_value(branch, tokens) for branch in branches), key=lambda value: tokens(json.dumps(value)))
    kind = schema["type"]
    if kind == "string":
        return "7" * schema["maxLength"]
    if kind == "integer":
        return max(schema["minimum"], schema["maximum"], key=lambda value: tokens(str(value)))
    if kind == "array":
        return [_longest_value(schema["items"], tokens)] * schema["maxItems"]
    if kind == "object":
        return {key: _longest_value(value, tokens) for key, value in schema.get("properties", {}).items()}
    return {"boolean": False, "null": None}[kind]


def _argument_schemas(grammar: str) -> dict[str, dict]:
    """Each ``args_<i>`` rule's bounded JSON schema, read back from the grammar."""
    return {line.split(":")[0]: json.loads(line.split("%json ", 1)[1]) for line in grammar.splitlines() if line.startswith("args_")}


LIST_TOOL = {"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "properties": {
    "labels": {"type": "array", "items": {"type": "string"}}, "scores": {"type": "array", "items": {"type": "integer"}},
    "note": {"type": ["string", "null"]}, "flag": {"type": "boolean"}}, "required": ["labels"]}}}


@pytest.mark.embedded
@pytest.mark.parametrize("max_tokens", [96, 128, 512])
@pytest.mark.parametrize("tool_set", ["sumer", "agemem", "lists"])
def test_the_longest_admissible_forced_call_closes_within_the_token_limit(grammar_tokenizer, tool_set, max_tokens):
    """Teacher-forced, the longest call each grammar admits (every property, most items, longest
    strings and integers) is accepted and ends, with its end token, within ``max_tokens``."""
    from langgraph_memagent.agents.constrained import token_counter
    from langgraph_memagent.baselines.agemem.tools import agemem_tools
    from langgraph_memagent.baselines.sumer_prompts import SUMER_TOOLS

    tokenizer, grammars = grammar_tokenizer
    tools = {"sumer": SUMER_TOOLS, "agemem": agemem_tools(), "lists": [LIST_TOOL]}[tool_set]
    count = token_counter(tokenizer)
    grammar = forced_call_grammar(tools, "required", max_tokens, count)
    schemas = _argument_schemas(grammar)
    calls_allowed = 1 + int(grammar.split("call){0,", 1)[1].split("}")[0]) if "call){0," in grammar else 1
    for index, offered in enumerate(tools):
        arguments = json.dumps(_longest_value(schemas[f"args_{index}"], count), separators=(", ", ": "))
        call = offered["function"]["name"] + '", "arguments": ' + arguments + "}\n</tool_call>"
        reply = call + ("\n<tool_call>\n{\"name\": \"" + call) * (calls_allowed - 1)
        assert _accepts(grammar_tokenizer, grammar, reply), reply
        assert count(reply) + 1 <= max_tokens, (count(reply), reply)


@pytest.mark.embedded
def test_a_tool_whose_required_arguments_cannot_fit_is_refused_in_one_line(grammar_tokenizer):
    from langgraph_memagent.agents.constrained import token_counter

    big = {"type": "function", "function": {"name": "bulk", "parameters": {"type": "object", "properties": {
        "ids": {"type": "array", "items": {"type": "string", "minLength": 8}, "minItems": 12}}, "required": ["ids"]}}}
    with pytest.raises(ValueError, match="the arguments of 'bulk' cannot fit in the token limit"):
        forced_call_grammar([big], "required", 64, token_counter(grammar_tokenizer[0]))


@pytest.mark.embedded
def test_auto_grammar_offers_no_call_that_could_not_close(grammar_tokenizer):
    """In 32 tokens no call of these tools fits beside the text's half: the reply is text, and a call is refused."""
    from langgraph_memagent.agents.constrained import token_counter

    count = token_counter(grammar_tokenizer[0])
    grammar = auto_call_grammar(TOOLS, 32, count)
    assert _accepts(grammar_tokenizer, grammar, "It is sunny.") and not _accepts(grammar_tokenizer, grammar, CALL)
    assert _accepts(grammar_tokenizer, auto_call_grammar(TOOLS, 128, count), CALL)


@pytest.mark.parametrize("budget", [12, 40, 200])
@pytest.mark.parametrize("schema", [
    {},  # any value: a scalar in a bounded call
    {"type": ["string", "null"]},
    {"items": {"type": "integer"}},  # an array without "type"
    {"type": "array", "items": {"type": "array", "items": {"type": "string"}}, "maxItems": 40},
    {"properties": {"a": True, "b": {"type": "boolean"}, "c": {"enum": ["x", "yy"]}}},
    {"type": "object", "additionalProperties": {"type": "string"}},  # a map: its keys cannot be bounded, so it is closed
])
def test_every_value_a_fitted_schema_admits_fits_its_budget_in_characters(schema, budget):
    """``len`` counts each character as a token, the most any tokenization takes; numbers are the documented exception."""
    from langgraph_memagent.agents.constrained import _fit, _longest

    if budget == 12 and "properties" in schema:  # three keys alone take 15 characters
        with pytest.raises(ValueError, match="fits in"):
            _fit(schema, budget)
        return
    fitted = _fit(schema, budget)
    assert _longest(fitted, len) <= budget
    assert fitted.get("additionalProperties", False) is False
    assert "number" not in json.dumps(fitted) or budget >= 24


@pytest.mark.embedded
def test_masking_keeps_exactly_the_tokens_the_grammar_allows_and_compiles_nothing(grammar_tokenizer):
    """Each constrained row keeps the tokens its matcher accepts (a finished one only its end token), a free row is
    untouched, and no frame goes through torch.compile: a compiled kernel recompiles in the engine's serving thread."""
    import torch
    from torch._dynamo.utils import counters

    from langgraph_memagent.agents.constrained import mask_logits

    tokenizer, grammars = grammar_tokenizer
    grammar = forced_call_grammar(TOOLS, normalize_tool_choice("submit_answer", ["search_memory", "submit_answer"]), max_tokens=256)
    opened, finished = grammars.constraint(grammar, [tokenizer.eos_token_id]), grammars.constraint(grammar, [tokenizer.eos_token_id])
    reply = tokenizer.encode(' {"answer": "Paris", "confidence": "low"}}\n</tool_call>', add_special_tokens=False)
    assert finished.matcher.try_consume_tokens(reply) == len(reply) and finished.finished
    logits = torch.randn(3, len(tokenizer), dtype=torch.bfloat16)
    frames = counters["frames"]["total"]
    masked = mask_logits(logits, [opened, None, finished])
    assert counters["frames"]["total"] == frames
    assert masked.dtype == logits.dtype and torch.equal(masked[1], logits[1])
    # The reference: llguidance's own torch kernel on the matcher's bitmask.
    import llguidance.torch

    bitmask = llguidance.torch.allocate_token_bitmask(1, len(tokenizer))
    llguidance.torch.fill_next_token_bitmask(opened.matcher, bitmask, 0)
    reference = logits[:1].float()
    llguidance.torch.apply_token_bitmask_inplace(reference, bitmask)
    allowed = torch.isfinite(reference[0]).nonzero().flatten().tolist()
    assert 0 < len(allowed) < 100 and torch.isfinite(masked[0]).nonzero().flatten().tolist() == allowed
    assert torch.equal(masked[0, allowed], logits[0, allowed])
    assert torch.isfinite(masked[2]).nonzero().flatten().tolist() == [tokenizer.eos_token_id]


@pytest.mark.embedded
def test_the_masking_benchmarks_replies_still_fit_their_grammars():
    """bench_constrained teacher-forces fixed replies; a grammar that tightens (e.g. a length bound) must not strand them."""
    from benchmarks.bench_constrained import measure_masking

    results = measure_masking(rows=2, rounds=1)
    assert set(results) == {"forced_call", "auto_text"} and all(result["steps"] > 10 for result in results.values())
