"""SUMER search graph: episode rules with a scripted tool model, the real memory bank on LoCoMo,
and one bounded run on the real embedded SmolLM2."""

import asyncio
import json
import re

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from scripted_model import ScriptedChatModel, ScriptedToolModel, tool_call

from langgraph_memagent.baselines.memory_bank import MemoryBank
from langgraph_memagent.baselines.sumer import CHARS_PER_TOKEN, build_sumer_graph, conversation_key
from langgraph_memagent.baselines.sumer_prompts import SUMER_TOOLS, sumer_tools
from langgraph_memagent.evals.loaders import load_locomo
from langgraph_memagent.evals.scoring import score
from langgraph_memagent.agents.calls import ModelCallError
from helpers import LOCOMO_FILE

QUESTION = "What is the name of Ann's cat?"
TURNS = [
    {"dia_id": f"D{session}:{number}", "speaker": speaker, "text": text, "session": session, "date_time": date}
    for session, date, lines in [
        (1, "1 May 2023", [("Ann", "Hi Bob, how was your week?"), ("Bob", "Busy, I started a pottery class."),
                           ("Ann", "I adopted a cat last weekend, her name is Mochi."), ("Bob", "Lovely! What colour is she?"),
                           ("Ann", "She is grey with white paws.")]),
        (2, "9 May 2023", [("Bob", "I went to Lisbon for a conference."), ("Ann", "Did you try the pastries?"),
                           ("Bob", "Yes, every single morning."), ("Ann", "Mochi knocked over my plant today.")]),
    ]
    for number, (speaker, text) in enumerate(lines, 1)
]


def fresh_bank() -> MemoryBank:
    return MemoryBank(embeddings=DeterministicFakeEmbedding(size=16))


def run(graph, payload, mode="sync", **config):
    if mode == "async":
        return asyncio.run(graph.ainvoke(payload, config or None))
    return graph.invoke(payload, config or None)


def conversation_input(**extra):
    return {"question": QUESTION, "document": "rendered conversation (unused when turns are given)", "turns": TURNS, **extra}


def assistant_turns(messages: list[BaseMessage]) -> int:
    return sum(isinstance(message, AIMessage) for message in messages)


def assert_valid_transcript(messages: list[BaseMessage]) -> None:
    """Every tool call of an assistant turn has exactly one reply, right after that turn."""
    for index, message in enumerate(messages):
        if not isinstance(message, AIMessage):
            continue
        ids = [call["id"] for call in message.tool_calls] + [call["id"] for call in message.invalid_tool_calls]
        replies = []
        for following in messages[index + 1 :]:
            if not isinstance(following, ToolMessage):
                break
            replies.append(following.tool_call_id)
        assert sorted(replies) == sorted(ids), (ids, replies)


def last_tool_replies(messages: list[BaseMessage]) -> list[ToolMessage]:
    replies = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        replies.insert(0, message)
    return replies


def marked_lines(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith("> ")]


def cat_finder(messages, tools):
    """Searches for the cat, then submits the name read from the marked hit line."""
    if not tools:  # the forced-answer call binds no tools
        return "\\boxed{unknown}"
    replies = last_tool_replies(messages)
    if not replies:
        return AIMessage("", tool_calls=[tool_call("search_memory", "s1", query=["adopted", "cat"], mode="keyword")])
    name = re.search(r"her name is (\w+)", "\n".join(marked_lines(replies[0].content))).group(1)
    return AIMessage("", tool_calls=[tool_call("submit_answer", "a1", answer=name)])


# Control flow --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_search_then_submit(mode):
    model = ScriptedToolModel(responder=cat_finder)
    result = run(build_sumer_graph(model, bank=fresh_bank()), conversation_input(), mode)
    assert result["answer"] == "Mochi" and result["stop_reason"] == "submitted" and not result["forced_answer"]
    assert result["turns_used"] == 2 and result["tool_calls"] == 2
    assert result["searches"] == [
        {"mode": "keyword", "query": ["adopted", "cat"], "speaker": None, "session": None, "k": 5, "hits": ["D1:3"]}
    ]
    assert result["usage"]["llm_calls"] == 2 and result["usage"]["input_tokens"] > 0
    first, second = model.calls
    assert isinstance(first[0], SystemMessage) and "Speakers: Ann, Bob." in first[0].content
    assert "Sessions: 1 to 2 (1 May 2023 to 9 May 2023)." in first[0].content
    assert "Each match comes with the 2 messages before and after it, with its session and date." in first[0].content
    assert isinstance(first[1], HumanMessage) and first[1].content == f"Question: {QUESTION}"
    [reply] = last_tool_replies(second)
    # The hit comes with its neighbours: 2 before and 2 after it.
    assert reply.tool_call_id == "s1" and reply.status == "success"
    assert [line.split("]")[0] for line in reply.content.splitlines() if line.startswith(("> ", "  "))] == [
        "  [D1:1 | session 1 | 1 May 2023 | Ann", "  [D1:2 | session 1 | 1 May 2023 | Bob",
        "> [D1:3 | session 1 | 1 May 2023 | Ann", "  [D1:4 | session 1 | 1 May 2023 | Bob",
        "  [D1:5 | session 1 | 1 May 2023 | Ann",
    ]
    assert "document" not in result and "messages" not in result


def test_tools_offered_to_the_model():
    seen = []

    def record_tools(messages, tools):
        seen.append(tools)
        return "No idea."

    run(build_sumer_graph(ScriptedToolModel(responder=record_tools), bank=fresh_bank()), conversation_input())
    [tools] = seen
    assert [tool["function"]["name"] for tool in tools] == ["search_memory", "submit_answer"] == [
        tool["function"]["name"] for tool in SUMER_TOOLS
    ]
    search = tools[0]["function"]["parameters"]
    assert search["required"] == ["query"] and search["properties"]["mode"]["enum"] == ["semantic", "keyword"]
    assert search["properties"]["k"]["maximum"] == 20


def test_hits_without_neighbours_and_the_model_is_told_so():
    from langgraph_memagent.graphs import GraphOptions, build_graph

    model = ScriptedToolModel(responder=cat_finder)
    graph = build_graph("sumer", model, GraphOptions(search_context=0), None)  # the trainer's and CLI's path
    assert run(graph, conversation_input())["answer"] == "Mochi"
    first, second = model.calls
    [reply] = last_tool_replies(second)
    assert [line.split("]")[0] for line in reply.content.splitlines() if line.startswith(("> ", "  "))] == [
        "> [D1:3 | session 1 | 1 May 2023 | Ann"
    ]
    assert "Each match comes with its session and date." in first[0].content
    tools = sumer_tools(0)
    assert tools[0]["function"]["description"] == "Search the memory of the conversation. Returns the matching messages."
    assert tools[0]["function"]["parameters"] == SUMER_TOOLS[0]["function"]["parameters"] and tools[1] == SUMER_TOOLS[1]


def always_search(messages, tools):
    if not tools:
        found = re.findall(r"her name is (\w+)", messages[-1].text)
        return f"\\boxed{{{found[0]}}}" if found else "I could not find it."
    turn = assistant_turns(messages) + 1
    return AIMessage("", tool_calls=[tool_call("search_memory", f"s{turn}", query="cat name Mochi", k=3)])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_turn_limit_forces_an_answer(mode):
    model = ScriptedToolModel(responder=always_search)
    result = run(build_sumer_graph(model, bank=fresh_bank(), max_turns=3), conversation_input(), mode)
    assert result["stop_reason"] == "turn_limit" and result["turns_used"] == 3 and result["tool_calls"] == 3
    assert result["forced_answer"] and result["usage"]["llm_calls"] == 4
    forced = model.calls[-1]
    assert len(forced) == 1 and isinstance(forced[0], HumanMessage) and "You cannot search any more" in forced[0].content
    # The search results found are what the forced answer reads.
    assert "her name is Mochi" in forced[0].content and result["answer"] == "Mochi"


def search_then_submit_when_forced(messages, tools):
    if [tool["function"]["name"] for tool in tools] == ["submit_answer"]:
        found = re.findall(r"her name is (\w+)", messages[-1].text)
        return AIMessage("", tool_calls=[tool_call("submit_answer", "forced", answer=found[0])]) if found else "Mochi, I think."
    return always_search(messages, tools)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_forced_answer_as_a_submit_call_reads_its_argument(mode):
    model = ScriptedToolModel(responder=search_then_submit_when_forced)
    graph = build_sumer_graph(model, bank=fresh_bank(), max_turns=2, forced_answer_call="submit")
    result = run(graph, conversation_input(), mode)
    assert (result["stop_reason"], result["forced_answer"], result["answer"], result["response"]) == ("turn_limit", True, "Mochi", "Mochi")
    forced = model.calls[-1]
    assert len(forced) == 1 and "by calling submit_answer" in forced[0].content and "\\boxed" not in forced[0].content


def test_forced_submit_without_a_call_gives_no_answer():
    # Only a backend without the tools' grammar can reply in text here; the prose is not read as an answer.
    model = ScriptedToolModel(responder=search_then_submit_when_forced)
    result = run(build_sumer_graph(model, bank=fresh_bank(), max_turns=1, forced_answer_call="submit"), {**conversation_input(), "turns": TURNS[5:]})
    assert result["forced_answer"] and result["answer"] is None and result["response"] == "Mochi, I think."


def test_forced_submit_prompt_leaves_room_for_the_submit_schema():
    # One search whose results nearly fill the budget: a tool-free forced prompt may hold them, a
    # submit call's may not, because the submit tool's schema goes into the same prompt.
    turns = [{**turn, "text": (turn["text"] + " ") * 60} for turn in TURNS]
    payload = {**conversation_input(), "turns": turns}

    def one_search(messages, tools):
        if len(tools) == 1:
            return AIMessage("", tool_calls=[tool_call("submit_answer", "forced", answer="Mochi")])
        return "\\boxed{Mochi}" if not tools else AIMessage("", tool_calls=[tool_call("search_memory", "s1", query="Mochi", mode="keyword", k=1)])

    def forced_prompt(budget, call):
        model = ScriptedToolModel(responder=one_search)
        result = run(build_sumer_graph(model, bank=fresh_bank(), max_turns=1, max_context_tokens=budget, forced_answer_call=call), payload)
        assert result["forced_answer"] and result["searches"]
        return model.calls[-1][0].content

    with_results = forced_prompt(100_000, "text")
    budget = len(with_results) // CHARS_PER_TOKEN + 40
    assert forced_prompt(budget, "text").endswith(with_results[-200:])  # the results fit a text prompt
    schema = len(json.dumps(SUMER_TOOLS[1]))
    assert (len(forced_prompt(budget, "submit")) + schema) / CHARS_PER_TOKEN <= budget


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_no_turns_answers_at_once_from_the_memory_given_with_the_input(mode):
    # The reading curriculum's episode: no search, one forced submit call over the given memory.
    model = ScriptedToolModel(responder=search_then_submit_when_forced)
    graph = build_sumer_graph(model, bank=fresh_bank(), max_turns=0, forced_answer_call="submit")
    given = "1 matches for semantic search 'cat':\n\nMatch 1 of 1:\n> [D2:1 | Ana] Our cat, her name is Luna."
    result = run(graph, conversation_input(found=[given]), mode)
    assert (result["stop_reason"], result["turns_used"], result["answer"], result["searches"]) == ("turn_limit", 0, "Luna", [])
    assert len(model.calls) == 1 and given in model.calls[0][0].content


def test_memory_given_with_the_input_must_be_search_replies():
    graph = build_sumer_graph(ScriptedToolModel(responder=always_search), bank=fresh_bank(), max_turns=0)
    with pytest.raises(ValueError, match=r"input 'found' must be a list of strings \(search replies\), got 'Luna'"):
        graph.invoke(conversation_input(found="Luna"))


def test_forced_answer_call_is_checked():
    with pytest.raises(ValueError, match="forced_answer_call must be 'text' or 'submit', got 'json'"):
        build_sumer_graph(ScriptedToolModel(responder=always_search), bank=fresh_bank(), forced_answer_call="json")


@pytest.mark.parametrize("reply", ["echo", "plain"])
def test_a_plain_search_reply_leaves_the_query_out(reply):
    # A guessed-answer query ("a dog called Rex") must not reach the forced answer's prompt as if it were memory.
    def guess_then_submit(messages, tools):
        if len(tools) == 1:
            return AIMessage("", tool_calls=[tool_call("submit_answer", "forced", answer="Mochi")])
        return AIMessage("", tool_calls=[tool_call("search_memory", "s1", query="a dog called Rex", k=1)])

    model = ScriptedToolModel(responder=guess_then_submit)
    graph = build_sumer_graph(model, bank=fresh_bank(), max_turns=1, forced_answer_call="submit", search_reply=reply)
    assert run(graph, conversation_input())["answer"] == "Mochi"
    forced_prompt = model.calls[-1][0].content
    assert ("1 matches for semantic search 'a dog called Rex' (the" in forced_prompt) == (reply == "echo")
    assert ("1 matches (the matching line is marked with >):" in forced_prompt) == (reply == "plain")
    with pytest.raises(ValueError, match="search_reply must be 'echo' or 'plain', got 'none'"):
        build_sumer_graph(model, bank=fresh_bank(), search_reply="none")


@pytest.mark.parametrize(("call", "rule"), [("submit", "none"), ("submit", "yes-no"), ("text", "yes-no")])
def test_the_yes_no_rule_reaches_the_forced_answer_prompt_only(call, rule):
    from langgraph_memagent.graphs import GraphOptions, build_graph

    def search_then_answer(messages, tools):
        if len(tools) == 1:
            return AIMessage("", tool_calls=[tool_call("submit_answer", "forced", answer="No")])
        if not tools:
            return AIMessage("\\boxed{No}")
        return always_search(messages, tools)

    model = ScriptedToolModel(responder=search_then_answer)
    graph = build_graph("sumer", model, GraphOptions(max_turns=1, forced_answer_call=call, answer_rule=rule), None)
    assert run(graph, conversation_input())["answer"] == "No"
    sentence = "If the problem asks a yes/no question, answer Yes or No.\n\n<problem>"
    assert (sentence in model.calls[-1][0].content) == (rule == "yes-no")  # the forced answer
    assert sentence not in model.calls[0][0].content  # the search turn's system prompt
    from typing import get_args

    from langgraph_memagent.baselines.sumer import AnswerRule
    from langgraph_memagent.baselines.sumer_prompts import ANSWER_RULES

    assert get_args(AnswerRule) == tuple(ANSWER_RULES)  # the graph's choices are the rules the prompt knows
    with pytest.raises(ValueError, match="answer_rule must be 'none' or 'yes-no', got 'maybe'"):
        build_sumer_graph(model, bank=fresh_bank(), answer_rule="maybe")


@pytest.mark.parametrize("style", ["free", "question"])
def test_query_style_question_asks_for_the_questions_words_in_the_rules_and_the_schema(style):
    from langgraph_memagent.graphs import GraphOptions, build_graph

    tools_seen = []

    def search(messages, tools):
        tools_seen.append(tools)
        return always_search(messages, tools)

    model = ScriptedToolModel(responder=search)
    graph = build_graph("sumer", model, GraphOptions(max_turns=1, forced_answer_call="submit", query_style=style), None)
    run(graph, conversation_input())
    system, first_tools = model.calls[0][0].content, tools_seen[0]
    rule = "then call submit_answer. Write each query in the question's own words: not the tool's name, not a guessed answer. Answer"
    assert (rule in system) == (style == "question")
    assert ("then call submit_answer. Answer from the memory" in system) == (style == "free")
    query = first_tools[0]["function"]["parameters"]["properties"]["query"]["description"]
    assert query.startswith("semantic mode: the question's own words;" if style == "question" else "semantic mode: a question or phrase")
    with pytest.raises(ValueError, match="query_style must be 'free' or 'question', got 'answer'"):
        build_sumer_graph(model, bank=fresh_bank(), query_style="answer")


def test_turn_limit_without_forcing_records_a_missing_answer():
    model = ScriptedToolModel(responder=always_search)
    result = run(build_sumer_graph(model, bank=fresh_bank(), max_turns=2, force_answer=False), conversation_input())
    assert result["stop_reason"] == "turn_limit" and result["answer"] is None and not result["forced_answer"]
    assert result["turns_used"] == 2 and result["usage"]["llm_calls"] == 2 == len(model.calls)


def test_paper_turn_cap_fits_any_caller_recursion_limit():
    # 20 turns are 40+ graph steps: more than the 25 langchain-core passes on a config merge.
    model = ScriptedToolModel(responder=always_search)
    graph = build_sumer_graph(model, bank=fresh_bank())
    result = run(graph, conversation_input(), recursion_limit=25)
    assert result["stop_reason"] == "turn_limit" and result["turns_used"] == 20 and result["answer"] == "Mochi"
    assert run(graph.with_config(recursion_limit=25), conversation_input(), "async")["turns_used"] == 20


def test_parallel_calls_beyond_the_cap_are_answered_not_run():
    def seven_at_once(messages, tools):
        if assistant_turns(messages) == 0:
            words = ["cat", "pottery", "Lisbon", "pastries", "plant", "grey", "conference"]
            return AIMessage("", tool_calls=[tool_call("search_memory", f"p{i}", query=w, mode="keyword") for i, w in enumerate(words)])
        return AIMessage("", tool_calls=[tool_call("submit_answer", "done", answer="Mochi")])

    model = ScriptedToolModel(responder=seven_at_once)
    result = run(build_sumer_graph(model, bank=fresh_bank()), conversation_input())
    assert result["stop_reason"] == "submitted" and result["tool_calls"] == 6  # 5 searches + the submission
    assert [search["query"] for search in result["searches"]] == ["cat", "pottery", "Lisbon", "pastries", "plant"]
    transcript = model.calls[-1]
    assert_valid_transcript(transcript)
    replies = last_tool_replies(transcript)
    assert [reply.tool_call_id for reply in replies] == [f"p{i}" for i in range(7)]
    assert [reply.status for reply in replies] == ["success"] * 5 + ["error"] * 2
    assert "at most 5 tool calls" in replies[5].content and "made 7" in replies[6].content
    assert len(transcript[2].tool_calls) == 7  # what the model said stays in the transcript


def test_invalid_calls_get_readable_errors_then_the_model_recovers():
    def clumsy(messages, tools):
        turn = assistant_turns(messages)
        if turn == 0:
            return AIMessage(
                "",
                tool_calls=[tool_call("search_memory", "bad-args", query="cat", mode="fuzzy", k=99),
                            tool_call("lookup", "unknown-tool", query="cat")],
                invalid_tool_calls=[{"name": "search_memory", "args": '{"query": "cat', "id": "broken",
                                     "error": "Unterminated string", "type": "invalid_tool_call"}],
            )
        if turn == 1:
            return AIMessage("", tool_calls=[tool_call("search_memory", "retry", query="adopted", mode="keyword", k=1)])
        hit = marked_lines(last_tool_replies(messages)[0].content)[0]
        return AIMessage("", tool_calls=[tool_call("submit_answer", "answer", answer=hit.split("] ")[1])])

    model = ScriptedToolModel(responder=clumsy)
    result = run(build_sumer_graph(model, bank=fresh_bank()), conversation_input())
    assert result["stop_reason"] == "submitted" and result["answer"] == "I adopted a cat last weekend, her name is Mochi."
    assert result["tool_calls"] == 2 and result["turns_used"] == 3
    errors = {reply.tool_call_id: reply for reply in last_tool_replies(model.calls[1])}
    assert set(errors) == {"bad-args", "unknown-tool", "broken"} and all(r.status == "error" for r in errors.values())
    assert "'mode'" in errors["bad-args"].content and "'fuzzy'" in errors["bad-args"].content
    assert "'k'" in errors["bad-args"].content and "99" in errors["bad-args"].content
    assert "unknown tool 'lookup'" in errors["unknown-tool"].content
    assert "Unterminated string" in errors["broken"].content
    assert_valid_transcript(model.calls[-1])


def test_bank_errors_and_empty_results_are_tool_replies():
    def probing(messages, tools):
        turn = assistant_turns(messages)
        if turn == 0:
            return AIMessage("", tool_calls=[
                tool_call("search_memory", "who", query="cat", speaker="Zed"),
                tool_call("search_memory", "none", query="zebra", mode="keyword"),
                tool_call("search_memory", "lower", query="cat", mode="keyword", speaker="ann", session=1),
                tool_call("submit_answer", "empty", answer="  "),
            ])
        return "Mochi, I think."

    model = ScriptedToolModel(responder=probing)
    result = run(build_sumer_graph(model, bank=fresh_bank()), conversation_input())
    replies = {reply.tool_call_id: reply for reply in last_tool_replies(model.calls[1])}
    assert replies["who"].status == "error" and "'Zed'" in replies["who"].content
    assert replies["none"].status == "success" and "No memories found" in replies["none"].content
    assert replies["lower"].status == "success" and marked_lines(replies["lower"].content)[0].startswith("[D1:3")
    assert replies["empty"].status == "error" and "empty" in replies["empty"].content
    assert result["stop_reason"] == "no_tool_call" and result["answer"] == "Mochi, I think."
    assert [search["hits"] for search in result["searches"]] == [[], ["D1:3"]]


def test_a_turn_without_tool_calls_ends_with_its_text():
    model = ScriptedToolModel(responder=lambda messages, tools: "  The cat is called Mochi.  ")
    result = run(build_sumer_graph(model, bank=fresh_bank()), conversation_input())
    assert result["stop_reason"] == "no_tool_call" and result["answer"] == "The cat is called Mochi."
    assert result["turns_used"] == 1 and result["tool_calls"] == 0 and result["searches"] == []
    boxed = ScriptedToolModel(responder=lambda messages, tools: "It is \\boxed{Mochi}.")
    assert run(build_sumer_graph(boxed, bank=fresh_bank()), conversation_input())["answer"] == "Mochi"


def test_context_overflow_ends_the_episode_and_the_forced_answer_fits():
    model = ScriptedToolModel(responder=always_search)
    budget = 1500
    graph = build_sumer_graph(model, bank=fresh_bank(), max_context_tokens=budget, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "overflow"}}
    result = graph.invoke(conversation_input(), config)
    assert result["stop_reason"] == "context_overflow" and 1 <= result["turns_used"] < 20
    assert result["forced_answer"] and len(model.calls) == result["turns_used"] + 1
    # The episode stopped at the first step whose context went over the budget.
    history = [snapshot.values for snapshot in graph.get_state_history(config)][::-1]
    sizes = [values["context_tokens"] for values in history if "context_tokens" in values]
    first_over = next(index for index, size in enumerate(sizes) if size > budget)
    assert len(set(sizes[first_over:])) == 1  # nothing grew after the first step over the budget
    # Without a tokenizer text counts at 4 characters per token; the forced prompt fits.
    assert len(model.calls[-1][0].content) / CHARS_PER_TOKEN <= budget


def test_context_overflow_counted_with_the_tokenizer(smollm2_codec):
    from langgraph_memagent.agents.tokenizers import encode_long

    model = ScriptedToolModel(responder=always_search)
    budget = 700
    graph = build_sumer_graph(model, bank=fresh_bank(), max_context_tokens=budget, tokenizer=smollm2_codec)
    result = run(graph, conversation_input())
    assert result["stop_reason"] == "context_overflow" and result["forced_answer"]
    assert len(encode_long(model.calls[-1][0].content, smollm2_codec)) <= budget
    # Tools and opening alone do not fit: no call at all, a missing answer, no exception.
    tiny = ScriptedToolModel(responder=always_search)
    result = run(build_sumer_graph(tiny, bank=fresh_bank(), max_context_tokens=40, tokenizer=smollm2_codec), conversation_input())
    assert result["stop_reason"] == "context_overflow" and result["turns_used"] == 0
    assert result["answer"] is None and tiny.calls == []


def test_reported_usage_is_a_floor_for_the_context():
    class Verbose(ScriptedToolModel):
        def _reply(self, messages, kwargs):
            result = super()._reply(messages, kwargs)
            result.generations[0].message.usage_metadata = {"input_tokens": 5000, "output_tokens": 10, "total_tokens": 5010}
            return result

    model = Verbose(responder=always_search)
    result = run(build_sumer_graph(model, bank=fresh_bank(), max_context_tokens=4000), conversation_input())
    assert result["stop_reason"] == "context_overflow" and result["turns_used"] == 1


def test_documents_are_chunked_into_the_bank_and_kept_out_of_checkpoints():
    document = "\n\n".join(f"Paragraph {i}: nothing to see here." for i in range(12)).replace(
        "Paragraph 7: nothing to see here.", "Paragraph 7: the vault code is 4417."
    )

    def code_finder(messages, tools):
        replies = last_tool_replies(messages)
        if not replies:
            return AIMessage("", tool_calls=[tool_call("search_memory", "s", query="vault code", mode="keyword", k=1)])
        return AIMessage("", tool_calls=[tool_call("submit_answer", "a", answer=int(re.search(r"(\d{4})", replies[0].content).group(1)))])

    saver, bank = InMemorySaver(), fresh_bank()
    graph = build_sumer_graph(ScriptedToolModel(responder=code_finder), bank=bank, checkpointer=saver, chunk_tokens=20)
    config = {"configurable": {"thread_id": "t1"}}
    result = graph.invoke({"question": "What is the vault code?", "document": document}, config)
    assert result["answer"] == "4417" and result["searches"][0]["hits"] == ["chunk-7"]
    assert result["conversation_id"] == conversation_key(None, document, chunk_tokens=20)
    assert len(bank.items(result["conversation_id"], owner="anonymous")) == 12  # the run named no user
    with_document = [c for c in saver.list(config) if c.checkpoint["channel_values"].get("document")]
    assert len(with_document) == 1  # only the input checkpoint; ingest clears it
    assert graph.get_state(config).values["document"] == ""


def test_same_conversation_is_ingested_once():
    class Counting(DeterministicFakeEmbedding):
        calls: int = 0

        def embed_documents(self, texts):
            self.calls += 1
            return super().embed_documents(texts)

    embeddings = Counting(size=16)
    graph = build_sumer_graph(ScriptedToolModel(responder=cat_finder), embeddings=embeddings)
    first = graph.invoke(conversation_input())
    after_first = embeddings.calls
    second = graph.invoke({**conversation_input(), "question": "What colour is the cat?"})
    assert first["conversation_id"] == second["conversation_id"] and after_first >= 1
    assert embeddings.calls == after_first
    named = graph.invoke(conversation_input(conversation_id="ann-and-bob"))
    assert named["conversation_id"] == "ann-and-bob" and named["answer"] == "Mochi"


def test_bad_inputs_and_options_are_clear_errors():
    graph = build_sumer_graph(ScriptedToolModel(responder=cat_finder), bank=fresh_bank())
    with pytest.raises(ValueError, match="'question'"):
        graph.invoke({"question": " ", "document": "x"})
    with pytest.raises(ValueError, match="'document'"):
        graph.invoke({"question": "Q?", "document": ""})
    with pytest.raises(ValueError, match=r"'a\.b'"):
        graph.invoke(conversation_input(conversation_id="a.b"))
    with pytest.raises(ValueError, match="max_turns must be an integer >= 0, got -1"):
        build_sumer_graph(ScriptedToolModel(responder=cat_finder), bank=fresh_bank(), max_turns=-1)
    with pytest.raises(ValueError, match="not both"):
        build_sumer_graph(ScriptedToolModel(responder=cat_finder), bank=fresh_bank(), embeddings=DeterministicFakeEmbedding(size=4))
    with pytest.raises(ValueError, match="search_context must be an integer >= 0, got -1"):
        build_sumer_graph(ScriptedToolModel(responder=cat_finder), search_context=-1)
    with pytest.raises(ValueError, match="search_context=0 differs from the given bank's context=2: set it on the bank"):
        build_sumer_graph(ScriptedToolModel(responder=cat_finder), bank=fresh_bank(), search_context=0)
    with pytest.raises(TypeError, match="bind_tools"):
        build_sumer_graph(ScriptedChatModel(responder=str), bank=fresh_bank())


def test_model_failures_name_the_turn():
    def broken(messages, tools):
        raise ConnectionError("server went away")

    with pytest.raises(ModelCallError, match="SUMER turn 1.*ConnectionError: server went away"):
        build_sumer_graph(ScriptedToolModel(responder=broken), bank=fresh_bank()).invoke(conversation_input())


# The real memory bank on a real LoCoMo conversation --------------------------------------
class CountingEmbeddings(Embeddings):
    def __init__(self, inner: Embeddings):
        self.inner, self.document_calls = inner, 0

    def embed_documents(self, texts):
        self.document_calls += 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_locomo_keyword_search_end_to_end():
    # Keyword search does not use the vectors: a hash embedding keeps the test fast (MiniLM
    # over 369 turns takes a minute on a busy 2-core machine; the bank's tests cover it).
    samples = load_locomo(LOCOMO_FILE)
    sample = next(s for s in samples if s.answers == ["Rome"])
    keyword = sample.answers[0]

    def reader(messages, tools):
        replies = last_tool_replies(messages)
        if not replies:
            return AIMessage("", tool_calls=[tool_call("search_memory", "k", query=[keyword], mode="keyword")])
        # Submit the keyword as it is written in the first marked hit: what the search found.
        hit = marked_lines(replies[0].content)[0]
        return AIMessage("", tool_calls=[tool_call("submit_answer", "a", answer=re.search(keyword, hit, re.IGNORECASE).group(0))])

    embeddings = CountingEmbeddings(DeterministicFakeEmbedding(size=16))
    graph = build_sumer_graph(ScriptedToolModel(responder=reader), embeddings=embeddings)
    payload = {"question": sample.question, "document": sample.document, "turns": sample.meta["turns"]}
    result = graph.invoke(payload)
    assert result["stop_reason"] == "submitted" and score(result["answer"], sample.answers, "f1") == 1.0
    hits = result["searches"][0]["hits"]
    turns = {turn["dia_id"]: turn for turn in sample.meta["turns"]}
    assert hits and all(keyword.lower() in turns[hit]["text"].lower() for hit in hits)
    assert set(sample.meta["evidence"]) & set(hits)  # the gold evidence turn is among the hits
    calls = embeddings.document_calls
    assert calls == -(-len(turns) // 64)  # batched: 64 texts per embedding call
    other = next(s for s in samples if s.question != sample.question)
    graph.invoke({"question": other.question, "document": other.document, "turns": other.meta["turns"]})
    assert embeddings.document_calls == calls  # the conversation was embedded once


# The real embedded model -----------------------------------------------------------------
def test_embedded_smollm2_run_is_bounded(greedy_model):
    graph = build_sumer_graph(
        greedy_model, bank=fresh_bank(), max_turns=3, turn_tokens=48, answer_tokens=32, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "smollm2"}}
    result = graph.invoke(conversation_input(), config)
    assert_valid_transcript(graph.get_state(config).values["messages"])
    assert result["stop_reason"] in ("submitted", "turn_limit", "context_overflow", "no_tool_call")
    assert 1 <= result["turns_used"] <= 3 and result["usage"]["llm_calls"] in (result["turns_used"], result["turns_used"] + 1)
    assert result["answer"] is None or isinstance(result["answer"], str)
    print(f"SmolLM2 SUMER run: {result['stop_reason']}, {result['turns_used']} turns, answer {result['answer']!r}")


def test_a_budget_that_overflows_the_embedded_window_is_refused(greedy_model):
    # The prompt plus its turn must fit the 8192-token window. Before, a too-large budget let a
    # forced answer overflow a smaller model's window mid-run (a preset's 3072 on a 2048 model).
    with pytest.raises(ValueError, match="max_context_tokens=8000 leaves no room for a 1024-token turn in the model's 8192-token window: at most 7168"):
        build_sumer_graph(greedy_model, bank=fresh_bank(), max_context_tokens=8000)
    with pytest.raises(ValueError, match="max_context_tokens=8100 leaves no room for a 128-token turn .* at most 8064"):
        build_sumer_graph(greedy_model, bank=fresh_bank(), max_context_tokens=8100, turn_tokens=64, answer_tokens=128)
    build_sumer_graph(greedy_model, bank=fresh_bank(), max_context_tokens=8064, turn_tokens=64, answer_tokens=128)


def test_embedded_smollm2_with_a_required_tool_choice_searches_with_valid_calls(greedy_model):
    """The registry's embedded settings (``tool_choice="required"``), with two turns instead of six
    (each turn's calls decode under the same grammar; three took 54 s of the suite): every
    turn is a call that parses and validates, the model searches LoCoMo conv-30, and the harness
    counts the searches that return an evidence turn."""
    from dataclasses import replace

    from langgraph_memagent.evals.harness import evidence_searches
    from langgraph_memagent.graphs.options import default_graph_options
    from langgraph_memagent.graphs.registry import build_graph, question_input

    sample = load_locomo(str(LOCOMO_FILE))[0]
    options = replace(default_graph_options("smollm2-135m"), max_turns=2)
    result = build_graph("sumer", greedy_model, options).invoke(question_input(sample))
    assert result["invalid_tool_calls"] == 0 and result["tool_calls"] >= 1
    found = evidence_searches(result["searches"], sample.meta["evidence"])
    assert found is not None and found["searches"] == len(result["searches"]) >= 1


def test_embedded_smollm2_forced_submit_is_a_valid_call_with_an_answer(greedy_model):
    """At the turn cap, the embedded model's forced ``submit_answer`` decodes under the tools'
    grammar, so the answer is the call's argument, never unread prose."""
    graph = build_sumer_graph(
        greedy_model, bank=fresh_bank(), max_turns=1, turn_tokens=128, tool_choice="required", forced_answer_call="submit"
    )
    result = graph.invoke(conversation_input())
    assert result["stop_reason"] == "turn_limit" and result["forced_answer"] and result["usage"]["llm_calls"] == 2
    assert isinstance(result["answer"], str) and result["answer"].strip() and result["response"] == result["answer"]
    print(f"SmolLM2 forced submit: {result['answer']!r} after {len(result['searches'])} search(es)")
