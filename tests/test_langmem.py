"""The LangMem baseline on the real embedded model and real LoCoMo turns: LangMem's manager extracts
memories session by session into a store, once per conversation, and the answer reads LangMem's search."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from langgraph_memagent.baselines.langmem_graph import build_langmem_graph, sessions
from helpers import LOCOMO_FILE


@pytest.fixture(scope="module")
def conversation():
    from langgraph_memagent.evals.loaders import load_locomo

    samples = load_locomo(str(LOCOMO_FILE))
    return samples, samples[0].meta["turns"]


# The first turns of each session are enough to extract from (the whole sessions 1 and 2 of conv-30,
# 28 and 16 turns, cost a minute of the embedded model per test on CPU).
TURNS_PER_SESSION = 6


def _first_sessions(turns, count, per_session=TURNS_PER_SESSION):
    kept = {}
    for turn in turns:
        if turn.get("session") in range(1, count + 1):
            kept.setdefault(turn["session"], []).append(turn)
    return [turn for session in kept.values() for turn in session[:per_session]]


def test_sessions_group_turns_by_session_and_cut_documents_into_pieces(smollm2_codec):
    turns = [{"speaker": "Ann", "text": "Hi", "session": 1, "date_time": "1 May"}, {"speaker": "Bo", "text": "Yo", "session": 1},
             {"speaker": "Ann", "text": "Look", "session": 2, "blip_caption": "a dog"}]
    assert [[message["content"] for message in session] for session in sessions(turns, "", None, 0)] == [
        ["Session date: 1 May", "Ann: Hi", "Bo: Yo"], ["Ann: Look [shares a photo of a dog]"],
    ]
    pieces = sessions(None, "word " * 300, smollm2_codec, 128)
    assert len(pieces) == 3 and all(len(session) == 1 for session in pieces)


@pytest.mark.embedded
def test_langmem_extracts_each_session_once_with_valid_calls_and_answers_from_its_search(greedy_model, conversation):
    samples, turns = conversation
    graph = build_langmem_graph(greedy_model, answer_tokens=48, extract_tokens=128)  # 128: valid calls, half the time of 512
    first = graph.invoke({"question": samples[0].question, "document": samples[0].document, "turns": _first_sessions(turns, 2)})
    assert first["sessions_extracted"] == 2 and first["extraction_calls"] >= 2
    assert first["extraction_tool_calls"] > 0 and first["invalid_extraction_calls"] == 0  # forced calls under the grammar
    assert first["memories"] > 0 and first["memory"].startswith("- ")  # what the answer read: LangMem's search hits
    assert first["usage"]["llm_calls"] == first["extraction_calls"] + 1 and first["response"]
    # Another question on the same conversation reuses the memories: no extraction call.
    again = graph.invoke({"question": samples[1].question, "document": samples[1].document, "turns": _first_sessions(turns, 2)})
    assert (again["sessions_extracted"], again["extraction_calls"], again["usage"]["llm_calls"]) == (0, 0, 1)
    assert again["memories"] == first["memories"]


@pytest.mark.embedded
def test_langmem_ainvoke_extracts_only_the_sessions_not_yet_done(greedy_model, conversation):
    """A conversation extracted up to session 1 (an interrupted run) goes on at session 2."""
    samples, turns = conversation
    graph = build_langmem_graph(greedy_model, answer_tokens=32, extract_tokens=128)
    question = {"question": samples[0].question, "document": samples[0].document, "conversation_id": "conv-30"}
    asyncio.run(graph.ainvoke({**question, "turns": _first_sessions(turns, 1)}))
    result = asyncio.run(graph.ainvoke({**question, "turns": _first_sessions(turns, 2)}))
    assert result["sessions_extracted"] == 1 and result["invalid_extraction_calls"] == 0


@pytest.mark.embedded
def test_compare_runs_langmem_end_to_end_on_locomo(tmp_path, greedy_model):
    """``memagent compare --graphs langmem`` on a LoCoMo file (conv-30 cut to the first turns of its first session)."""
    from langgraph_memagent.evals.harness import ComparisonConfig, run_comparison
    from langgraph_memagent.evals.results import read_results
    from langgraph_memagent.graphs.options import default_graph_options

    data = json.loads(LOCOMO_FILE.read_text())
    data = {key: value for key, value in data.items() if int((re.search(r"session_(\d+)", key) or [0, 0])[1]) <= 1}
    data.update({key: value[:TURNS_PER_SESSION] for key, value in data.items() if re.fullmatch(r"session_\d+", key)})
    path = tmp_path / "locomo_one_session.json"
    path.write_text(json.dumps(data))
    settings = ComparisonConfig(graphs=("langmem",), data=(str(path),), task=None, lengths=(), limit=2, out=tmp_path / "out",
                                model="smollm2-135m", graph_options=default_graph_options("smollm2-135m"), progress=False)
    result = run_comparison(settings, greedy_model)
    records = read_results(result.results)
    assert len(records) == 2 and not any(record["error"] for record in records)
    extracted = [record["details"]["sessions_extracted"] for record in records]
    assert sorted(extracted) == [0, 1]  # the conversation is extracted once, by whichever question came first
    assert "langmem" in (result.out / "summary.md").read_text()


def test_a_failed_extraction_call_names_the_session_and_a_rerun_resumes_after_the_sessions_done():
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage
    from scripted_model import ScriptedToolModel, tool_call

    from langgraph_memagent.agents.calls import ModelCallError

    down = {"second"}  # sessions whose extraction call fails

    def extractor(messages, tools):
        if any(word in str(message.content) for message in messages for word in down):
            raise ConnectionError("server went away")
        return AIMessage("", tool_calls=[tool_call("Memory", "m", content="Ann said hi")])

    graph = build_langmem_graph(ScriptedToolModel(responder=extractor), embeddings=DeterministicFakeEmbedding(size=8), answer_tokens=8)
    run = {"question": "Who said hi?", "document": "x", "conversation_id": "c",
           "turns": [{"speaker": "Ann", "text": "first", "session": 1}, {"speaker": "Bo", "text": "second", "session": 2}]}
    # trustcall retries a failing call until LangGraph's recursion limit: the error says where it stopped.
    with pytest.raises(ModelCallError, match=r"LangMem extraction of session 2 of 2: model call to ScriptedToolModel failed"):
        graph.invoke(run)
    down.clear()
    assert graph.invoke(run)["sessions_extracted"] == 1  # session 1 was kept


def test_memory_per_run_extracts_in_each_run_and_forgets_after_the_answer():
    """GRPO rollouts of one question each build their own memory (``memory_per_run``); a shared graph extracts once."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage
    from scripted_model import ScriptedToolModel, tool_call

    from langgraph_memagent.baselines.agemem.store import default_agemem_store

    def extractor(messages, tools):
        return AIMessage("", tool_calls=[tool_call("Memory", "m", content="Ann said hi")])

    run = {"question": "Who said hi?", "document": "x", "turns": [{"speaker": "Ann", "text": "hi", "session": 1}]}
    for per_run, extracted in ((True, [1, 1]), (False, [1, 0])):
        store = default_agemem_store(DeterministicFakeEmbedding(size=8))
        graph = build_langmem_graph(ScriptedToolModel(responder=extractor), store=store, answer_tokens=8, memory_per_run=per_run)
        outputs = [graph.invoke(run) for _ in range(2)]
        assert [output["sessions_extracted"] for output in outputs] == extracted
        assert all(output["memories"] == 1 for output in outputs)
        assert (outputs[0]["conversation_id"] != outputs[1]["conversation_id"]) is per_run
        assert (store.search(("anonymous", "langmem", outputs[1]["conversation_id"])) == []) is per_run  # forgotten after the answer
