"""AgeMem graph: memory tools, message groups, namespaces, the three-stage protocol, the QA graph."""

from __future__ import annotations

import hashlib
import re

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.store.memory import InMemoryStore
from langgraph_memagent.baselines.agemem import (
    LongTermMemory,
    arun_agemem_protocol,
    build_agemem_graph,
    build_agemem_qa_graph,
    default_agemem_store,
    message_groups,
    run_agemem_protocol,
    validate_transcript,
)
from langgraph_memagent.baselines.agemem.tools import answer_spans

from tests.scripted_model import ScriptedToolModel, tool_call
from helpers import LOCOMO_FILE

ALICE = {"user_id": "alice"}


class WordHashEmbeddings(Embeddings):
    """Bag-of-words vectors (hashed lower-case words): texts sharing words are near; fast, no model."""

    dims = 256

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in re.findall(r"[a-z]+", text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dims] += 1.0
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class WordCodec:
    """A whitespace 'tokenizer' (one token per word) for context-budget tests."""

    name = "words"

    def encode_batch(self, texts):
        return [[len(word) for word in text.split()] for text in texts]

    def decode_batch(self, token_ids):
        return [" ".join("x" * n for n in ids) for ids in token_ids]


def scripted(*steps) -> ScriptedToolModel:
    """Each model call takes the next step (an AIMessage, a text, or a function of the messages); then "done"."""
    queue = list(steps)

    def responder(messages, tools):
        step = queue.pop(0) if queue else "done"
        return step(messages) if callable(step) else step

    return ScriptedToolModel(responder=responder)


def calls(*tool_calls) -> AIMessage:
    return AIMessage("", tool_calls=list(tool_calls))


def fast_graph(model, **options):
    options.setdefault("store", default_agemem_store(WordHashEmbeddings()))
    return build_agemem_graph(model, **options)


def tool_replies(messages) -> list[str]:
    return [m.text for m in messages if isinstance(m, ToolMessage)]


def last_tool_reply(messages) -> str:
    return tool_replies(messages)[-1]


def memory_of(graph, user: str = "alice") -> dict[str, str]:
    return {item.key: item.value["content"] for item in LongTermMemory(graph.store, (user, "agemem")).items()}


def test_add_gives_ids_that_update_and_delete_cite_and_a_bad_id_is_a_readable_error():
    model = scripted(
        calls(tool_call("add_memory", "c1", content="Ann lives in Oslo.", tags=["Ann"]),
              tool_call("add_memory", "c2", content="Bo likes tea.")),
        lambda messages: calls(
            # The ids the model cites come from the replies it read.
            tool_call("update_memory", "c3", memory_id=re.search(r"added (m\d+)", tool_replies(messages)[0]).group(1),
                      content="Ann moved to Bergen."),
            tool_call("delete_memory", "c4", memory_id=re.search(r"added (m\d+)", tool_replies(messages)[1]).group(1)),
            tool_call("update_memory", "c5", memory_id="m9", content="x"),
        ),
        "Stored.",
    )
    graph = fast_graph(model, max_turns_per_message=3)
    out = graph.invoke({"stage": "build", "incoming": ["Ann lives in Oslo. Bo likes tea."]}, context=ALICE)

    replies = tool_replies(out["messages"])
    assert replies[:2] == ["added m1", "added m2"]
    assert replies[2:4] == ["updated m1", "deleted m2"]
    assert replies[4] == "error: no memory item 'm9'; the items are: m1"
    assert [m.status for m in out["messages"] if isinstance(m, ToolMessage)] == ["success"] * 4 + ["error"]
    assert memory_of(graph) == {"m1": "Ann moved to Bergen."}
    assert out["tool_calls"] == {"add_memory": 2, "update_memory": 2, "delete_memory": 1}
    assert out["stage_turns"] == 3 and out["stop_reason"] == "replied" and out["response"] == "Stored."
    assert out["usage"]["llm_calls"] == 3
    assert validate_transcript(out["messages"]) == []
    # The model saw the tool replies with their group id, and the group map in the system prompt.
    second_call = model.calls[1]
    assert isinstance(second_call[0], SystemMessage) and "g2 assistant + 2 tool replies" in second_call[0].text
    assert second_call[-1].text == "[g2] added m2"


def test_retrieve_returns_the_added_item_with_the_default_minilm_store():
    model = scripted(
        calls(tool_call("add_memory", "c1", content="Ann lives in Oslo."),
              tool_call("add_memory", "c2", content="The stock market fell sharply on Monday.")),
        calls(tool_call("retrieve_memory", "c3", query="Which city is Ann's home?", k=1)),
        "ok",
    )
    graph = build_agemem_graph(model, max_turns_per_message=3)
    out = graph.invoke({"stage": "build", "incoming": ["facts"]}, context=ALICE)
    hit = last_tool_reply(out["messages"])
    assert hit.startswith("m1 (score ") and hit.endswith("Ann lives in Oslo.") and "\n" not in hit


def test_best_retrieve_reply_is_the_best_items_text_alone_whatever_k_was_asked():
    """retrieve_reply="best": one line, no id, score or tags, and only that item counts as retrieved."""
    model = scripted(
        calls(tool_call("add_memory", "c1", content="Ann lives in Oslo.", tags=["Ann"]),
              tool_call("add_memory", "c2", content="Bo likes tea.")),
        calls(tool_call("retrieve_memory", "c3", query="Where does Ann live?", k=3)),
        "ok",
    )
    graph = fast_graph(model, max_turns_per_message=3, retrieve_reply="best")
    out = graph.invoke({"stage": "build", "incoming": ["facts"]}, context=ALICE)
    assert last_tool_reply(out["messages"]) == "Ann lives in Oslo."
    assert out["operations"][-1]["retrieved"] == ["Ann lives in Oslo."]
    with pytest.raises(ValueError, match=r"retrieve_reply must be one of \['scored', 'best'\], got 'top'"):
        fast_graph(scripted("ok"), retrieve_reply="top")


def _context_with_groups(final_step, **options):
    """g1 user, g2 text reply, g3 user, g4 assistant+tool reply, g5 text, g6 user, g7 = final_step's call."""
    model = scripted(
        "noted", calls(tool_call("add_memory", "c1", content="B fact")), "noted", final_step, "done"
    )
    graph = fast_graph(model, max_turns_per_message=2, **options)
    return graph.invoke({"stage": "distract", "incoming": ["first text", "second text", "third text"]}, context=ALICE)


def _ids(messages):
    return [m.id for m in messages]


def test_summary_replaces_a_span_of_whole_groups_and_keeps_the_transcript_valid():
    out = _context_with_groups(calls(tool_call("summarize_context", "s1", group_ids="g3-g5", summary="B was stored.")))
    messages = out["messages"]
    assert last_tool_reply(messages) == "replaced g3-g5 (4 messages) with summary g3"
    assert _ids(messages) == ["g1", "g2", "g3", "g6", "g7", "g7-r1", "g8"]
    summary = messages[2]
    assert isinstance(summary, HumanMessage) and summary.text == "Summary of g3-g5: B was stored."
    assert validate_transcript(messages) == []
    assert [group.kind for group in message_groups(messages)][2] == "summary"


def test_filter_removes_whole_groups_and_keeps_the_transcript_valid():
    out = _context_with_groups(calls(tool_call("filter_context", "f1", group_ids=["g4", "g1"])))
    messages = out["messages"]
    assert last_tool_reply(messages) == "removed g1, g4 (3 messages)"
    assert _ids(messages) == ["g2", "g3", "g5", "g6", "g7", "g7-r1", "g8"]
    assert validate_transcript(messages) == []


@pytest.mark.parametrize(
    "args, error",
    [
        ({"group_ids": ["g4-r1"], "summary": "s"}, "error: g4-r1 is a tool reply inside group g4; an assistant message and its tool replies can only be summarized or filtered together: cite g4"),
        ({"group_ids": ["g1", "g3"], "summary": "s"}, "error: a summary replaces consecutive groups; g2 lie(s) between"),
        ({"group_ids": ["g99"], "summary": "s"}, "error: no context group 'g99'; the groups are: g1, g2, g3, g4, g5, g6"),
        ({"group_ids": ["g6", "g7"], "summary": "s"}, "error: g7 is the group of this very tool call"),
        ({"group_ids": "g5-g7", "summary": "s"}, "error: g7 is the group of this very tool call"),
        ({"group_ids": []}, "error: bad arguments for summarize_context (group_ids: List should have at least 1 item"),
    ],
)
def test_summary_refuses_to_split_a_group_or_cite_unknown_ids(args, error):
    out = _context_with_groups(calls(tool_call("summarize_context", "s1", **args)))
    messages = out["messages"]
    assert last_tool_reply(messages).startswith(error)
    assert _ids(messages) == ["g1", "g2", "g3", "g4", "g4-r1", "g5", "g6", "g7", "g7-r1", "g8"]
    assert validate_transcript(messages) == []


def test_malformed_calls_unknown_tools_and_invalid_tool_calls_get_readable_replies():
    unparsable = AIMessage("", invalid_tool_calls=[{"name": "add_memory", "args": "{content: Ann", "id": None, "error": "bad JSON", "type": "invalid_tool_call"}])
    model = scripted(
        calls(tool_call("add_memory", "c1", tags=["x"]), tool_call("forget_everything", "c2"),
              tool_call("retrieve_memory", "c3", query="q", k=99)),
        unparsable,
        calls(tool_call("add_memory", "c4", content="Ann lives in Oslo.")),
        "ok",
    )
    out = fast_graph(model, max_turns_per_message=4).invoke({"stage": "build", "incoming": ["facts"]}, context=ALICE)
    replies = tool_replies(out["messages"])
    assert replies[0] == "error: bad arguments for add_memory (content: Field required); it takes: content, tags"
    assert replies[1].startswith("error: there is no tool 'forget_everything'; the tools are: add_memory, update_memory")
    assert replies[2].startswith("error: bad arguments for retrieve_memory (k: Input should be less than or equal to 20)")
    assert replies[3].startswith("error: your call to add_memory could not be used (bad JSON); arguments were '{content: Ann'")
    assert replies[4] == "added m1"
    assert out["tool_calls"] == {"add_memory": 2, "forget_everything": 1, "retrieve_memory": 1, "invalid": 1}
    # The unparsable call got an id, so its error reply is a valid tool reply.
    assert validate_transcript(out["messages"]) == []


def test_namespace_comes_from_the_run_context_and_users_do_not_share_memory():
    store = default_agemem_store(WordHashEmbeddings())
    alice = scripted(calls(tool_call("add_memory", "c1", content="Alice's secret is 42.")), "ok")
    build_agemem_graph(alice, store=store).invoke({"stage": "build", "incoming": ["secret"]}, context={"user_id": "alice"})
    bob = scripted(calls(tool_call("retrieve_memory", "c1", query="secret")), "nothing")
    out = build_agemem_graph(bob, store=store).invoke({"stage": "answer", "incoming": ["What is the secret?"]}, context={"user_id": "bob"})
    assert last_tool_reply(out["messages"]) == "long-term memory is empty"
    assert [item.namespace for item in store.search(("alice",))] == [("alice", "agemem")]


@pytest.mark.parametrize("context, message", [(None, "AgeMem needs the run's context"), ({"user_id": "a.b"}, "without '.'")])
def test_missing_or_bad_context_fails_before_any_model_call(context, message):
    model = scripted("never")
    with pytest.raises(ValueError, match=message):
        fast_graph(model).invoke({"stage": "build", "incoming": ["x"]}, context=context)
    assert model.calls == []


def test_three_stages_run_in_order_and_only_long_term_memory_survives_the_reset():
    def answer(messages):
        found = re.search(r"Ann lives in (\w+)", last_tool_reply(messages))
        return f"The answer is \\boxed{{{found.group(1)}}}." if found else "unknown"

    model = scripted(
        calls(tool_call("add_memory", "c1", content="Ann lives in Oslo.")), "stored",
        "nothing to keep",
        calls(tool_call("filter_context", "f1", group_ids=["g1"])), "filtered",
        calls(tool_call("retrieve_memory", "r1", query="Where does Ann live?")), answer,
    )
    graph = fast_graph(model)
    result = run_agemem_protocol(
        graph, stage1=["Ann lives in Oslo."], stage2=["Essay one.", "Essay two."], question="Where does Ann live?", context=ALICE
    )
    prompts = model.calls
    stages = [re.search(r"Stage (\d) of 3", call[0].text).group(1) for call in prompts]
    assert stages == ["1", "1", "2", "2", "2", "3", "3"]
    # Stage 2 starts from an empty context: its first call sees only the first distractor.
    assert [m.text for m in prompts[2][1:]] == ["[g1] Essay one."]
    # Stage 3 continues stage 2's context (g1 was filtered there) and finds stage 1's memory.
    assert [m.text for m in prompts[5][1:] if isinstance(m, HumanMessage)] == ["[g3] Essay two.", "[g6] Where does Ann live?"]
    assert result.answer == "Oslo" and result.response == "The answer is \\boxed{Oslo}."
    assert result.stage_turns == {"build": 2, "distract": 3, "answer": 2}
    assert result.tool_calls == {"add_memory": 1, "filter_context": 1, "retrieve_memory": 1}
    assert result.usage["llm_calls"] == 7 and result.stop_reasons == {"build": "replied", "distract": "replied", "answer": "replied"}
    assert all(validate_transcript(transcript) == [] for transcript in result.transcripts.values())
    assert memory_of(graph) == {"m1": "Ann lives in Oslo."}


def test_turn_caps_end_stages_and_the_answer_stage_forces_a_tool_free_answer():
    seen_tools = []

    def responder(messages, tools):
        seen_tools.append(len(tools))
        return "\\boxed{forced}" if not tools else calls(tool_call("retrieve_memory", f"r{len(seen_tools)}", query="q"))

    model = ScriptedToolModel(responder=responder)
    graph = fast_graph(model, max_turns_per_message=2, max_stage_turns=3)
    build = graph.invoke({"stage": "build", "incoming": ["a", "b", "c"]}, context=ALICE)
    # Two turns after "a", one after "b" (stage cap), "c" still arrives unanswered.
    assert build["stage_turns"] == 3 and build["stop_reason"] == "turn_limit" and build["response"] == ""
    assert isinstance(build["messages"][-1], HumanMessage) and build["messages"][-1].text == "c"
    assert validate_transcript(build["messages"]) == []
    seen_tools.clear()
    answer = graph.invoke({"stage": "answer", "incoming": ["question?"]}, context=ALICE)
    assert seen_tools == [6, 6, 0]
    assert answer["response"] == "\\boxed{forced}" and answer["stop_reason"] == "replied" and answer["usage"]["llm_calls"] == 3
    assert validate_transcript(answer["messages"]) == []


def test_context_over_budget_drops_the_oldest_whole_groups():
    model = scripted(calls(tool_call("add_memory", "c1", content="x")), "ok", "ok", "ok")
    graph = fast_graph(model, max_turns_per_message=2, max_context_tokens=160, tokenizer=WordCodec())
    words = " ".join(["word"] * 40)
    out = graph.invoke({"stage": "build", "incoming": [words, words, words]}, context=ALICE)
    assert out["overflow_trims"] > 0
    assert validate_transcript(out["messages"]) == []
    for call in model.calls:  # every prompt fits, or holds only the newest group
        rendered = " ".join(m.text for m in call)
        assert len(rendered.split()) + 4 * len(call) <= 160 or len(message_groups(call[1:])) == 1


def test_async_protocol_matches_the_sync_contract():
    import asyncio

    model = scripted(calls(tool_call("add_memory", "c1", content="Bo plays chess.")), "ok", "ok", "\\boxed{chess}")
    result = asyncio.run(arun_agemem_protocol(
        fast_graph(model), stage1=["Bo plays chess."], stage2=["Essay."], question="What does Bo play?", context=ALICE
    ))
    assert result.answer == "chess" and result.stage_turns == {"build": 2, "distract": 1, "answer": 1}


def test_qa_graph_runs_a_locomo_question_with_the_package_contract():
    from langgraph_memagent.evals.loaders import load_locomo

    if not LOCOMO_FILE.is_file():
        pytest.skip(f"LoCoMo file not found at {LOCOMO_FILE}")
    sample = load_locomo(LOCOMO_FILE)[0]

    def responder(messages, tools):
        system, last = messages[0].text, messages[-1]
        if "Stage 1" in system and isinstance(last, HumanMessage):
            first_line = last.text.split("\n")[1].split("] ", 1)[-1]
            return calls(tool_call("add_memory", f"a{len(messages)}", content=first_line))
        if "Stage 3" in system and isinstance(last, HumanMessage):
            return calls(tool_call("retrieve_memory", "r1", query=last.text, k=2))
        if "Stage 3" in system and isinstance(last, ToolMessage):
            return f"\\boxed{{{last.text.splitlines()[0].split(': ', 1)[1]}}}"
        return "ok"

    store = default_agemem_store(WordHashEmbeddings())
    graph = build_agemem_qa_graph(ScriptedToolModel(responder=responder), store=store, max_stage_turns=80, distractor_messages=2)
    result = graph.invoke({"question": sample.question, "document": sample.document, "turns": sample.meta["turns"]})

    sessions = len({turn["session"] for turn in sample.meta["turns"]})
    assert sessions >= 10
    assert result["question"] == sample.question
    assert result["stage_turns"] == {"build": 2 * sessions, "distract": 2, "answer": 2}
    assert result["tool_calls"] == {"add_memory": sessions, "retrieve_memory": 1}
    assert result["memory_item_count"] == sessions and len(result["memory_items"]) == sessions
    assert result["answer"] and result["answer"] in result["memory_items"]
    assert result["usage"]["llm_calls"] == 2 * sessions + 4 and result["context_tokens"] > 0
    assert result["stop_reasons"]["answer"] == "replied"
    assert store.search(("anonymous", "agemem")) == []  # the per-run memory was cleared


def test_qa_graph_rejects_bad_inputs():
    graph = build_agemem_qa_graph(scripted(), store=InMemoryStore(), tokenizer=WordCodec())
    with pytest.raises(ValueError, match="input 'distractors' must be a list of non-empty strings"):
        graph.invoke({"question": "q?", "document": "d", "distractors": "one string"})
    with pytest.raises(TypeError, match=r"input 'turns'\[0\] must be a dict"):
        graph.invoke({"question": "q?", "document": "d", "turns": ["not a turn"]})


def test_real_embedded_model_completes_all_three_stages(greedy_model):
    from langgraph_memagent.agents.local_model import LocalChatModel

    if not hasattr(LocalChatModel, "bind_tools"):
        pytest.skip("LocalChatModel.bind_tools does not exist yet (tool calling on local models is in progress)")
    graph = build_agemem_qa_graph(
        greedy_model, store=default_agemem_store(WordHashEmbeddings()), chunk_tokens=64, distractor_messages=1,
        distractor_sentences=2, max_turns_per_message=1, max_stage_turns=2, turn_tokens=48,
    )
    document = "Ann lives in Oslo and works as a baker. Bo lives in Rome and teaches music."
    result = graph.invoke({"question": "Where does Ann live?", "document": document})
    print("embedded AgeMem:", {k: result[k] for k in ("response", "answer", "stage_turns", "tool_calls", "memory_item_count")})
    assert set(result["stage_turns"]) == {"build", "distract", "answer"}
    assert 1 <= result["stage_turns"]["build"] <= 2 and result["stage_turns"]["answer"] == 1
    assert isinstance(result["response"], str) and result["usage"]["llm_calls"] >= 3


def test_messages_from_elsewhere_get_group_ids_in_order():
    model = scripted("ok")
    earlier = [HumanMessage("earlier question"), AIMessage("earlier reply")]
    out = fast_graph(model).invoke({"stage": "answer", "incoming": ["new question"], "messages": earlier}, context=ALICE)
    assert _ids(out["messages"]) == ["g1", "g2", "g3", "g4"]
    assert [m.text for m in out["messages"]] == ["earlier question", "earlier reply", "new question", "ok"]
    assert [m.text for m in model.calls[0][1:]] == ["[g1] earlier question", "earlier reply", "[g3] new question"]


def test_a_budget_that_overflows_the_embedded_window_is_refused(greedy_model):
    # The kept context plus one turn must fit the model's 8192-token window.
    too_large = "max_context_tokens=8000 leaves no room for a 256-token turn in the model's 8192-token window: at most 7936"
    with pytest.raises(ValueError, match=too_large):
        build_agemem_graph(greedy_model, max_context_tokens=8000)
    with pytest.raises(ValueError, match=too_large):
        build_agemem_qa_graph(greedy_model, max_context_tokens=8000)
    build_agemem_qa_graph(greedy_model, max_context_tokens=7936)


def test_a_served_models_known_window_bounds_agemem_without_the_cpu_cap(monkeypatch):
    from langgraph_memagent.baselines.agemem import protocol

    budgets = []
    build = protocol.build_agemem_graph
    monkeypatch.setattr(protocol, "build_agemem_graph", lambda model, **kw: budgets.append(kw["max_context_tokens"]) or build(model, **kw))
    build_agemem_qa_graph(ScriptedToolModel(responder=lambda messages, tools: "ok", profile={"max_input_tokens": 32768}), tokenizer=WordCodec())
    build_agemem_qa_graph(scripted("ok"))  # a window nobody gave: unlimited, the server enforces its own
    assert budgets == [32768 - 256, None]


@pytest.mark.embedded
def test_embedded_model_with_a_required_first_turn_calls_a_tool_after_every_message(greedy_model):
    """The registry's embedded settings: the first turn after each message must call a memory
    tool (left to choose, the model made no call on LoCoMo). Which tool it picks is the model's
    choice, so what it stores is measured by bench_locomo, not asserted here."""
    from dataclasses import replace

    from langgraph_memagent.evals.loaders import load_locomo
    from langgraph_memagent.graphs.options import default_graph_options
    from langgraph_memagent.graphs.registry import build_graph, question_input

    sample = load_locomo(str(LOCOMO_FILE))[0]
    inputs = question_input(sample)
    # The first six turns of sessions 1 and 2 (the whole sessions, 28 and 16 turns, took a minute and a half on CPU).
    inputs["turns"] = [turn for session in (1, 2) for turn in [t for t in inputs["turns"] if t.get("session") == session][:6]]
    # Stage 2 is not what is tested; three turns a stage (of the registry's six) hold the forced first calls.
    options = replace(default_graph_options("smollm2-135m"), agemem_distractor_messages=0, max_turns=3)
    result = build_graph("agemem", greedy_model, options).invoke(inputs)
    # Two sessions arrive in stage 1 and the question in stage 3: a valid call after each.
    assert result["tool_calls"].get("invalid", 0) == 0 and sum(result["tool_calls"].values()) >= 3


@pytest.mark.embedded
def test_embedded_model_in_line_write_mode_stores_one_verbatim_line_of_each_message(greedy_model):
    """write_mode="line": the first build turn after each message is a forced add_memory whose
    content the grammar keeps to one of that message's lines; which line is the model's choice."""
    sessions = ["Session 1 (8 May 2023):\nAnn: Hi Bo, how are you?\nBo: I ran a marathon in Oslo last week.",
                "Session 2 (9 May 2023):\nAnn: I adopted a cat named Miso.\nBo: Lovely!"]
    graph = build_agemem_graph(greedy_model, store=default_agemem_store(WordHashEmbeddings()), max_turns_per_message=1,
                               turn_tokens=96, write_mode="line")
    out = graph.invoke({"stage": "build", "incoming": sessions}, context=ALICE)
    added = [operation["content"] for operation in out["operations"] if operation["tool"] == "add_memory"]
    assert out["tool_calls"] == {"add_memory": 2}
    assert [content in session.splitlines() for content, session in zip(added, sessions)] == [True, True], added


def test_an_unknown_write_mode_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"write_mode must be one of \['free', 'line'\], got 'copy'"):
        build_agemem_graph(scripted("ok"), store=InMemoryStore(), write_mode="copy")


def test_a_given_memory_replaces_stage_one_and_is_what_the_answer_retrieves():
    def answer(messages):
        found = re.search(r"Ann lives in (\w+)", last_tool_reply(messages))
        return f"\\boxed{{{found.group(1)}}}" if found else "unknown"

    model = scripted("nothing to keep", calls(tool_call("retrieve_memory", "r1", query="Where does Ann live?")), answer)
    store = default_agemem_store(WordHashEmbeddings())
    graph = build_agemem_qa_graph(model, store=store, distractor_messages=1, tokenizer=WordCodec())
    given = ["Bo: I like tea.", "Ann: Ann lives in Oslo now."]
    result = graph.invoke({"question": "Where does Ann live?", "document": "unused", "memory": given})
    # No stage-1 call: the first prompt is stage 2's, and the answer comes from the given items.
    assert [re.search(r"Stage (\d) of 3", call[0].text).group(1) for call in model.calls] == ["2", "3", "3"]
    assert result["stage_turns"] == {"distract": 1, "answer": 2} and result["arrivals"] == {"distract": 1, "answer": 1}
    assert result["answer"] == "Oslo" and sorted(result["memory_items"]) == sorted(given)
    assert store.search(("anonymous", "agemem")) == []  # the per-run memory, given items included, was cleared
    with pytest.raises(ValueError, match=r"input 'memory' must be a non-empty list of non-empty strings \(items memory holds\), got \[' '\]"):
        graph.invoke({"question": "q?", "document": "d", "memory": [" "]})
    build_only = build_agemem_qa_graph(scripted(), store=store, tokenizer=WordCodec(), build_only=True)
    with pytest.raises(ValueError, match=r"input 'memory' replaces stage 1, and this graph runs stage 1 alone \(build_only\)"):
        build_only.invoke({"question": "q?", "document": "d", "memory": ["x"]})


@pytest.mark.embedded
def test_embedded_model_in_retrieve_answer_mode_retrieves_first_then_answers(greedy_model):
    """answer_mode="retrieve": the answer stage's first turn is a forced retrieve_memory call (the model writes
    its query under the grammar), then the forced answer sees what it retrieved."""
    graph = build_agemem_qa_graph(greedy_model, store=default_agemem_store(WordHashEmbeddings()), distractor_messages=0,
                                  max_turns_per_message=1, turn_tokens=64, answer_mode="retrieve")
    given = ["Bo: I ran a marathon in Oslo last week.", "Ann: I adopted a cat named Miso."]
    out = graph.invoke({"question": "Where did Bo run a marathon?", "document": "unused", "memory": given})
    retrievals = [operation for operation in out["memory_operations"] if operation["tool"] == "retrieve_memory"]
    assert out["tool_calls"] == {"retrieve_memory": 1} and retrievals[0]["stage"] == "answer"
    assert set(retrievals[0]["retrieved"]) <= set(given) and retrievals[0]["retrieved"], retrievals
    # The retrieval turn, then the forced answer (a tool-free call, not a stage turn); no distractor, no stage 1.
    assert out["stage_turns"] == {"distract": 0, "answer": 1} and out["usage"]["llm_calls"] == 2 and out["response"]


def test_retrieve_submit_mode_ends_the_answer_stage_on_a_submit_answer_call():
    """answer_mode="retrieve-submit": a later turn of stage 3 is a submit_answer call that ends the stage (no tool step)."""
    def submit(messages):
        found = re.search(r"Ann lives in (\w+)", last_tool_reply(messages))
        return calls(tool_call("submit_answer", "s1", answer=f" {found.group(1)} " if found else "unknown"))

    model = scripted(calls(tool_call("retrieve_memory", "r1", query="Where does Ann live?")), submit)
    graph = build_agemem_qa_graph(model, store=default_agemem_store(WordHashEmbeddings()), distractor_messages=0,
                                  max_turns_per_message=2, tokenizer=WordCodec(), answer_mode="retrieve-submit")
    out = graph.invoke({"question": "Where does Ann live?", "document": "unused", "memory": ["Ann: Ann lives in Oslo now."]})
    assert out["answer"] == "Oslo" and out["stop_reasons"]["answer"] == "submitted"
    assert out["stage_turns"]["answer"] == 2 and out["tool_calls"] == {"retrieve_memory": 1}  # submit_answer is not a memory tool
    assert "call submit_answer with a short answer" in model.calls[-1][0].text  # stage 3's own instruction


@pytest.mark.embedded
def test_embedded_model_in_retrieve_submit_mode_submits_a_forced_answer_call(greedy_model):
    """With one turn per message the forced answer is the submit_answer call, decoded under its grammar."""
    graph = build_agemem_qa_graph(greedy_model, store=default_agemem_store(WordHashEmbeddings()), distractor_messages=0,
                                  max_turns_per_message=1, turn_tokens=64, answer_mode="retrieve-submit")
    given = ["Bo: I ran a marathon in Oslo last week.", "Ann: I adopted a cat named Miso."]
    out = graph.invoke({"question": "Where did Bo run a marathon?", "document": "unused", "memory": given})
    assert out["tool_calls"] == {"retrieve_memory": 1} and out["usage"]["llm_calls"] == 2
    assert out["stop_reasons"]["answer"] == "submitted" and out["answer"] == out["response"].strip() and out["answer"]
    assert "<tool_call>" not in out["response"] and len(out["response"]) <= 160  # the argument, bounded by the grammar


@pytest.mark.parametrize("max_turns", [2, 1])  # the stage's second turn, or the forced answer
def test_retrieve_extract_mode_offers_the_spans_of_the_retrieval_reply_as_the_answer(max_turns):
    """answer_mode="retrieve-extract": the submit_answer call's answer is an enum of the retrieved line's spans, yes and no."""
    offered = []

    def submit(messages, tools):
        offered.append(tools[0]["function"]["parameters"]["properties"]["answer"]["enum"])
        return calls(tool_call("submit_answer", "s1", answer="Oslo"))

    retrieve = calls(tool_call("retrieve_memory", "r1", query="Where does Ann live?"))
    model = ScriptedToolModel(responder=lambda messages, tools: submit(messages, tools) if tool_replies(messages) else retrieve)
    graph = build_agemem_qa_graph(model, store=default_agemem_store(WordHashEmbeddings()), distractor_messages=0,
                                  max_turns_per_message=max_turns, tokenizer=WordCodec(), answer_mode="retrieve-extract",
                                  retrieve_reply="best")
    out = graph.invoke({"question": "Where does Ann live?", "document": "unused", "memory": ["Ann: Ann lives in Oslo."]})
    assert out["answer"] == "Oslo" and out["stop_reasons"]["answer"] == "submitted"
    assert offered == [answer_spans("Ann: Ann lives in Oslo.")] and "lives in Oslo" in offered[0] and offered[0][-2:] == ["yes", "no"]
    assert "call submit_answer with a short answer" in model.calls[-1][0].text


@pytest.mark.embedded
def test_embedded_model_in_retrieve_extract_mode_answers_with_a_span_of_what_it_retrieved(greedy_model):
    """Decoded under the enum's grammar, the embedded model's answer is one of the retrieved line's spans."""
    given = ["Bo: I ran a marathon in Oslo last week.", "Ann: I adopted a cat named Miso."]
    graph = build_agemem_qa_graph(greedy_model, store=default_agemem_store(WordHashEmbeddings()), distractor_messages=0,
                                  max_turns_per_message=1, turn_tokens=64, answer_mode="retrieve-extract", retrieve_reply="best")
    out = graph.invoke({"question": "Where did Bo run a marathon?", "document": "unused", "memory": given})
    retrieved = [operation for operation in out["memory_operations"] if operation["tool"] == "retrieve_memory"][0]["retrieved"]
    assert out["stop_reasons"]["answer"] == "submitted" and out["answer"] in answer_spans(retrieved[0]), (out["answer"], retrieved)


def test_an_unknown_answer_mode_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"answer_mode must be one of \['free', 'retrieve', 'retrieve-submit', 'retrieve-extract'\], got 'guess'"):
        build_agemem_graph(scripted("ok"), store=InMemoryStore(), answer_mode="guess")
