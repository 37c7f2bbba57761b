"""Teaching tool use: generated LoCoMo-shaped conversations, tool-use measures, the opt-in evidence
shaping, and the trainer's and benchmark's reports of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset

from langgraph_memagent.evals.conversations import generate_conversations, write_conversations
from langgraph_memagent.evals.loaders import load_records
from langgraph_memagent.graphs.registry import GRAPHS
from langgraph_memagent.training.agemem_reward import evidence_texts
from langgraph_memagent.training.data import conversation_records, load_training_file
from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_measure
from langgraph_memagent.training.grpo_multiconv import parse_config, training_dataset
from langgraph_memagent.training.rewards import JudgeFreeSumerReward, SubmittedAnswersOnly
from langgraph_memagent.training.rollout_graphs import default_graph_input, default_reward, graph_options, rollout_graph
from langgraph_memagent.training.rollouts import run_rollouts, score_rollouts
from langgraph_memagent.training.rows import rollout_group_ids
from langgraph_memagent.training.tool_use import EvidenceShapedReward, tool_use_measures
from helpers import AGEMEM_FORCED, LOCOMO_FILE, make_trainer, scripted_policy, tiny_config, trained_recording_rollouts, turns_of

# ---------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------
def test_generated_conversations_are_locomo_files_whose_evidence_holds_the_answers(tmp_path):
    conversations = generate_conversations(12, seed=3)
    assert generate_conversations(12, seed=3) == conversations  # seeded: same arguments, same conversations
    assert generate_conversations(12, seed=4) != conversations
    categories = set()
    for conversation in conversations:
        turns = turns_of(conversation)
        sessions = {turn["session"] for turn in turns.values()}
        assert 4 <= len(sessions) <= 8
        for qa in conversation["qa"]:
            categories.add(qa["category"])
            said = [turns[dia_id] for dia_id in qa["evidence"]]
            assert all(turn["speaker"] in qa["question"] for turn in said), (qa, said)
            if qa["category"] in (1, 4):  # the answer is said in an evidence turn
                assert any(qa["answer"] in turn["text"] for turn in said), (qa, said)
            if qa["category"] == 1:  # multi-hop: two turns in two sessions
                assert len({turn["session"] for turn in said}) == 2, qa
            if qa["category"] == 2:  # "yesterday": the day before the session's date
                session_date = conversation["conversation"][f"{said[0]['session']}_date_time"].split(" on ")[1]
                assert "yesterday" in said[0]["text"] and qa["answer"] != session_date
    assert categories == {1, 2, 3, 4}  # LoCoMo's multi-hop, temporal, open-domain and single-hop
    # LoCoMo's own layout: the loader reads it unchanged, with evidence ids and turns.
    path = write_conversations(tmp_path / "generated.json", conversations)
    samples = load_records(path)
    assert len(samples) == sum(len(c["qa"]) for c in conversations)
    assert samples[0].meta["evidence"] == conversations[0]["qa"][0]["evidence"] and samples[0].meta["turns"]


def test_no_question_kind_has_one_answer_for_all():
    """A kind whose answer never changes can be scored blind (the open-domain "No" once was: a
    trained policy answered it without searching); yes/no questions are balanced."""
    from collections import Counter

    answers: dict[str, Counter] = {}
    for conversation in generate_conversations(200, seed=5):
        for qa in conversation["qa"]:
            answers.setdefault(qa["question"].split()[0], Counter())[qa["answer"]] += 1
    for first_word, counted in answers.items():
        assert counted.most_common(1)[0][1] <= 0.7 * sum(counted.values()), (first_word, counted.most_common(3))
    assert set(answers["Would"]) == {"Yes", "No"}


def test_held_out_conversations_name_no_training_entity():
    def names(conversations):
        found = set()
        for conversation in conversations:
            found |= {conversation["conversation"]["speaker_a"], conversation["conversation"]["speaker_b"]}
            found |= {qa["answer"] for qa in conversation["qa"] if qa["category"] in (1, 4) and qa["answer"][0].isupper()}
        return found

    training, held_out = names(generate_conversations(40, seed=1)), names(generate_conversations(40, seed=10_000, entities="test"))
    assert training and held_out and not training & held_out
    with pytest.raises(ValueError, match="entities must be one of \\['train', 'test'\\], got 'dev'"):
        generate_conversations(1, seed=1, entities="dev")
    with pytest.raises(ValueError, match=r"sessions must be \(fewest, most\) with 2 <= fewest <= most, got \(1, 3\)"):
        generate_conversations(1, seed=1, sessions=(1, 3))
    with pytest.raises(ValueError, match="facts must be between 1 and 8, got 9"):
        generate_conversations(1, seed=1, facts=9)


def test_training_rows_from_generated_and_real_locomo_files_keep_turns_and_evidence(tmp_path):
    rows = conversation_records(10, seed=5)
    assert len(rows) == 10 and all(row["evidence"] and row["turns"] and row["answers"] for row in rows)
    assert rows == conversation_records(10, seed=5)
    path = write_conversations(tmp_path / "train.json", generate_conversations(2, seed=5))
    from_file = load_training_file(path)
    assert [row["question"] for row in from_file[:10]] == [row["question"] for row in rows]
    assert GRAPHS["sumer"].graph_input(from_file[0])["turns"] == rows[0]["turns"]
    real = load_training_file(LOCOMO_FILE)  # the real conv-30, adversarial questions left out
    assert len(real) == 81 and real[0]["answers"] == ["19 January, 2023"] and real[0]["evidence"] == ["D1:2"]
    # The trainer's generated task: rows through a datasets.Dataset, graph input unchanged.
    config = parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path / "run"), "--num_train_samples", "6"])
    dataset = training_dataset(config, tokenizer=None)
    assert isinstance(dataset, Dataset) and len(dataset) == 6
    assert GRAPHS["sumer"].graph_input(dataset[0]) == GRAPHS["sumer"].graph_input(conversation_records(1, seed=config.data_seed)[0])


def test_category_shares_set_the_training_mix_and_keep_the_generated_order(tmp_path):
    plain = conversation_records(40, seed=5)
    mixed = conversation_records(40, seed=5, category_shares={"open-domain": 0.25, "temporal": 0.1})
    categories = [row["category"] for row in mixed]
    assert categories.count("open-domain") == 10 and categories.count("temporal") == 4
    assert [row["category"] for row in plain].count("open-domain") < 10  # the generator asks fewer
    # The other categories come in the generator's order, as without shares.
    others = [row["question"] for row in mixed if row["category"] not in ("open-domain", "temporal")]
    assert others == [row["question"] for row in plain if row["category"] not in ("open-domain", "temporal")][: len(others)]
    config = parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path / "run"), "--num_train_samples", "8",
                           "--category_shares", "open-domain=0.5"])
    assert training_dataset(config, tokenizer=None)["category"].count("open-domain") == 4


# ---------------------------------------------------------------------------------------
# Measures and the opt-in shaping
# ---------------------------------------------------------------------------------------
def test_evidence_shaping_adds_recall_to_the_paper_reward_and_keeps_both_parts(tmp_path):
    sample = {"answers": ["Oslo"], "evidence": ["D1:2", "D2:5"]}
    outputs = [
        {"answer": "Oslo", "stop_reason": "submitted", "searches": [{"hits": ["D1:2"]}]},  # paper 1.0, recall 1/2
        {"answer": "Oslo", "stop_reason": "turn_limit", "searches": [{"hits": ["D2:5", "D1:2"]}]},  # not submitted: -1, recall 1
        {"answer": None, "stop_reason": "turn_limit", "searches": []},  # -1, recall 0
    ]
    reward = EvidenceShapedReward(SubmittedAnswersOnly(JudgeFreeSumerReward()), weight=0.4)
    assert reward.batch(outputs, [sample] * 3) == pytest.approx([1.2, -0.6, -1.0])
    assert reward.last_components == [{"paper": 1.0, "evidence": 0.5}, {"paper": -1.0, "evidence": 1.0}, {"paper": -1.0, "evidence": 0.0}]
    # From the trainer's config: shaping only when asked for, and the paper reward alone on request.
    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", evidence_reward_weight=0.4)
    assert isinstance(default_reward(config), EvidenceShapedReward)
    assert isinstance(default_reward(config, shaped=False), SubmittedAnswersOnly)
    assert isinstance(default_reward(tiny_config(tmp_path, graph="sumer", reward_metric="f1")), SubmittedAnswersOnly)
    with pytest.raises(ValueError, match="evidence_reward_weight must be >= 0 .* got 0.4 with graph 'agemem'"):
        tiny_config(tmp_path, graph="agemem", reward_metric=None, evidence_reward_weight=0.4)
    with pytest.raises(ValueError, match="evidence_reward_weight must be >= 0 .* got -1"):
        tiny_config(tmp_path, graph="sumer", reward_metric="f1", evidence_reward_weight=-1)


def test_sumer_counts_refused_calls_and_the_measures_read_them(tiny_tokenizer, tmp_path):
    record = next(row for row in conversation_records(8, seed=2) if len(row["evidence"]) == 1)
    speakers = {turn["speaker"] for turn in record["turns"]}
    evidence_text = next(turn["text"] for turn in record["turns"] if turn["dia_id"] == record["evidence"][0])

    def script(prompt: str) -> str:
        if "<tool_response" not in prompt:  # a filter on a speaker the conversation does not have: refused
            return '<tool_call>\n{"name": "search_memory", "arguments": {"query": "trip", "speaker": "Nobody"}}\n</tool_call>'
        if "Answer submitted" not in prompt and "search '" not in prompt:
            query = json.dumps(evidence_text)
            return f'<tool_call>\n{{"name": "search_memory", "arguments": {{"query": {query}, "k": 1}}}}\n</tool_call>'
        answer = json.dumps(record["answers"][0])
        return f'<tool_call>\n{{"name": "submit_answer", "arguments": {{"answer": {answer}}}}}\n</tool_call>'

    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", max_turns=4, turn_tokens=96, answer_tokens=32)
    graph = rollout_graph(scripted_policy(tiny_tokenizer, script), config, tiny_tokenizer)
    (rollout,) = run_rollouts(graph, [GRAPHS["sumer"].graph_input(record)], rollout_group_ids(1, 1))
    out = rollout.output
    assert "Nobody" not in speakers
    assert (out["stop_reason"], out["tool_calls"], out["rejected_tool_calls"], out["invalid_tool_calls"]) == ("submitted", 2, 1, 0)
    score_rollouts([rollout], [record], EvidenceShapedReward(default_reward(config), weight=0.5), "sumer")
    measures = rollout.measures
    assert measures["valid_call_rate"] == pytest.approx(2 / 3) and measures["tool_calls"] == 3
    assert (measures["searches"], measures["evidence_recall"], measures["submitted"], measures["f1"]) == (1, 1.0, 1.0, 1.0)
    assert rollout.reward == 1.5 and (measures["reward/paper"], measures["reward/evidence"]) == (1.0, 1.0)
    assert tool_use_measures({"response": "no tools"}, record, "memagent") == {}  # MemAgent's outputs have no tool use


def test_agemem_measures_and_reward_read_the_rows_evidence_turns(tiny_tokenizer, tmp_path):
    """AgeMem counts its calls by tool name; the measures and the memory reward read a training row's evidence turns."""
    record = next(row for row in conversation_records(8, seed=2) if len(row["evidence"]) == 1)
    evidence_text = next(turn["text"] for turn in record["turns"] if turn["dia_id"] == record["evidence"][0])

    def script(prompt: str) -> str:
        if AGEMEM_FORCED in prompt or "Stage 3 of 3" in prompt:
            return record["answers"][0]
        if "Stage 1 of 3" in prompt:  # every session: store the evidence turn, and update an unknown id (refused)
            return (f'<tool_call>\n{{"name": "add_memory", "arguments": {{"content": {json.dumps(evidence_text)}}}}}\n</tool_call>\n'
                    '<tool_call>\n{"name": "update_memory", "arguments": {"memory_id": "m99", "content": "x"}}\n</tool_call>')
        return "Noted."

    config = tiny_config(tmp_path, graph="agemem", reward_metric="f1", agemem_turns_per_message=1, max_turns=40,
                         agemem_distractor_messages=1, turn_tokens=96, max_context_tokens=8000)
    graph = rollout_graph(scripted_policy(tiny_tokenizer, script), config, tiny_tokenizer)
    (rollout,) = run_rollouts(graph, [GRAPHS["agemem"].graph_input(record)], rollout_group_ids(1, 1))
    sessions = rollout.output["arrivals"]["build"]
    assert rollout.output["tool_calls"] == {"add_memory": sessions, "update_memory": sessions}
    reward = default_reward(config)
    score_rollouts([rollout], [record], reward, "agemem")
    measures = rollout.measures
    assert (measures["tool_calls"], measures["valid_call_rate"], measures["searches"]) == (2 * sessions, 0.5, 0)
    assert (measures["memory_items"], measures["memory_recall"], measures["f1"]) == (sessions, 1.0, 1.0)
    # Every stored item is the evidence turn, so all are useful (read against the turn, not the gold answer: a bare
    # gold word would count too); no retrieval scores 0, and the refused updates leave no maintenance to score.
    assert evidence_texts(record) == [evidence_text]
    assert reward.last_parts.memory_parts == {"useful_items": 1.0, "maintenance": None, "retrieval": 0.0}
    assert (measures["reward/memory"], measures["reward/task"], measures["reward/penalty"]) == (0.5, 1.0, 0.0)


def test_paired_measures_leave_out_questions_without_the_measure():
    before = PolicyEvaluation(1.0, 2, [0.0] * 6, 1.0, [{"f1": 0.0}, {"f1": 0.2}, {"f1": 0.5}, {"f1": 0.5}, {}, {"f1": 1.0}])
    after = PolicyEvaluation(1.0, 2, [0.0] * 6, 1.0, [{"f1": 0.4}, {"f1": 0.4}, {}, {}, {"f1": 0.3}, {"f1": 0.3}])
    # Question 1: 0.1 -> 0.4; question 2 has no "after"; question 3: 1.0 -> 0.3.
    result = paired_measure(before, after, "f1")
    assert result["questions"] == 2 and result["before"] == pytest.approx(0.55) and result["after"] == pytest.approx(0.35)
    assert result["change"] == pytest.approx(-0.2) and result["standard_error"] == pytest.approx(0.5)
    assert paired_measure(before, after, "searches") is None


# ---------------------------------------------------------------------------------------
# The trainer's logs and the benchmark's summaries
# ---------------------------------------------------------------------------------------
def test_trainer_logs_tool_use_and_both_reward_parts(tiny_model_dir, tmp_path):
    dataset = Dataset.from_list(conversation_records(2, seed=4))
    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", max_turns=1, turn_tokens=8, answer_tokens=4,
                         evidence_reward_weight=0.5, tool_choice="auto", reward_curve=True)
    trainer = make_trainer(tiny_model_dir, dataset, config)
    trainer.train()
    logged = trainer.state.log_history[0]
    for name in ("tools/searches", "tools/submitted", "tools/f1", "reward/paper", "reward/evidence"):
        assert name in logged, name
    # The tiny random model never submits: the paper reward is SUMER's -1, and the total adds 0.5 x recall.
    assert logged["reward/paper"] == -1.0 and logged["reward"] == pytest.approx(-1.0 + 0.5 * logged["reward/evidence"])
    assert (Path(config.output_dir) / "tool_use_curve.png").is_file()


def test_agemem_writing_curriculum_gives_stage_one_the_evidence_sessions_alone(tiny_tokenizer, tmp_path):
    """With agemem_sessions="evidence" a rollout stores from the evidence sessions only; held-out episodes stay whole."""
    from benchmarks.bench_learning import whole_episodes
    from langgraph_memagent.training.writing import evidence_sessions

    record = next(row for row in conversation_records(8, seed=2) if len(row["evidence"]) == 1)
    evidence_turn = next(turn for turn in record["turns"] if turn["dia_id"] == record["evidence"][0])

    def script(prompt: str) -> str:
        if AGEMEM_FORCED in prompt or "Stage 3 of 3" in prompt:
            return record["answers"][0]
        if "Stage 1 of 3" in prompt:
            return f'<tool_call>\n{{"name": "add_memory", "arguments": {{"content": {json.dumps(evidence_turn["text"])}}}}}\n</tool_call>'
        return "Noted."

    config = tiny_config(tmp_path, graph="agemem", reward_metric="f1", agemem_turns_per_message=1, max_turns=40,
                         agemem_distractor_messages=0, turn_tokens=96, max_context_tokens=8000, agemem_sessions="evidence")
    graph_input = default_graph_input(config)
    given = graph_input(record)
    assert {turn["session"] for turn in given["turns"]} == {evidence_turn["session"]}
    assert [turn["dia_id"] for turn in given["turns"]] == [t["dia_id"] for t in record["turns"] if t["session"] == evidence_turn["session"]]
    graph = rollout_graph(scripted_policy(tiny_tokenizer, script), config, tiny_tokenizer)
    (rollout,) = run_rollouts(graph, [given], rollout_group_ids(1, 1))
    assert rollout.output["arrivals"]["build"] == 1 and rollout.output["tool_calls"] == {"add_memory": 1}
    score_rollouts([rollout], [record], default_reward(config), "agemem")
    assert (rollout.measures["memory_items"], rollout.measures["memory_recall"], rollout.measures["f1"]) == (1, 1.0, 1.0)
    # The held-out evaluation runs whole episodes: every session arrives.
    sessions = len({turn["session"] for turn in record["turns"]})
    assert len({turn["session"] for turn in default_graph_input(whole_episodes(config))(record)["turns"]}) == sessions > 1
    with pytest.raises(ValueError, match=r"agemem_sessions 'evidence' needs the row's evidence ids among its turns, got \['D99:1'\]"):
        evidence_sessions({**record, "evidence": ["D99:1"]})
    # Shuffled: the same evidence session's turns, in a new order for each rollout, reproducible from the seed.
    shuffled = tiny_config(tmp_path, graph="agemem", agemem_sessions="evidence-shuffled", seed=3)
    orders = [[turn["dia_id"] for turn in default_graph_input(shuffled)(record)["turns"]] for _ in range(2)]
    draws = default_graph_input(shuffled)
    again = [[turn["dia_id"] for turn in draws(record)["turns"]] for _ in range(4)]
    assert sorted(again[0]) == sorted(t["dia_id"] for t in given["turns"]) and len({tuple(order) for order in again}) > 1
    assert orders == [again[0], again[0]]
    # A row's orders do not depend on the rows drawn before it, so a resumed run draws what an uninterrupted one does.
    other = {**record, "question": "Something else?"}
    resumed = default_graph_input(shuffled)
    resumed(other)
    assert [[turn["dia_id"] for turn in resumed(record)["turns"]] for _ in range(4)] == again


def test_learning_benchmark_reports_tool_use_changes_and_the_locomo_subset():
    from langgraph_memagent.training.held_out import locomo_records, tool_use

    before = PolicyEvaluation(0.0, 1, [-1.0, -1.0], 1.0, [{"f1": 0.0, "searches": 2}, {"f1": 0.0, "searches": 0}]).to_dict()
    after = PolicyEvaluation(0.0, 1, [1.0, -1.0], 1.0, [{"f1": 1.0, "searches": 1}, {"f1": 0.0, "searches": 1}]).to_dict()
    summary = tool_use({"greedy": before}, {"greedy": after})["greedy"]
    assert summary["f1"]["change"] == 0.5 and summary["searches"]["change"] == 0.0 and "evidence_recall" not in summary
    # The same 16 questions bench_locomo --limit 16 answers (the harness's seeded subset).
    import random

    chosen = sorted(random.Random(0).sample(range(81), 16))
    assert [row["question"] for row in locomo_records(16)] == [load_training_file(LOCOMO_FILE)[index]["question"] for index in chosen]


def test_changes_by_question_group_and_constant_answers_against_hand_computed_values():
    from langgraph_memagent.training.held_out import by_question_group, constant_answer_f1, question_groups

    records = [
        {"category": "single-hop", "answers": ["Oslo"]},
        {"category": "open-domain", "answers": ["No"]},
        {"category": "single-hop", "answers": ["tacos"]},
        {"category": "temporal", "answers": ["7 May, 2023"]},
    ]
    groups = question_groups(records)
    assert groups["without yes/no"] == [0, 2, 3] and groups["single-hop"] == [0, 2] and groups["first half"] == [0, 1]
    # Two rollouts a question: a question's value is its rollouts' mean; changes are paired by question.
    f1_before, f1_after = [0, 0, 1, 1, 0, 0, 0, 0], [1, 0, 1, 1, 1, 1, 0, 0]
    before = PolicyEvaluation(1.0, 2, [0.0] * 8, 1.0, [{"f1": value} for value in f1_before])
    after = PolicyEvaluation(1.0, 2, [0.0] * 8, 1.0, [{"f1": value} for value in f1_after])
    changes = by_question_group(before, after, records, ("f1",))
    # Per-question changes 0.5, 0, 1, 0: mean 37.5 points, sd 0.4787, s.e. 0.4787 / 2.
    assert changes["all"]["f1"]["change"] == pytest.approx(37.5) and changes["all"]["f1"]["standard_error"] == pytest.approx(23.94, abs=0.01)
    assert changes["single-hop"]["f1"] == {"change": pytest.approx(75.0), "standard_error": pytest.approx(25.0), "questions": 2}
    assert changes["without yes/no"]["f1"]["change"] == pytest.approx(50.0) and changes["open-domain"]["f1"]["change"] == 0.0
    assert changes["first half"]["f1"]["change"] == pytest.approx(25.0) and changes["second half"]["f1"]["change"] == pytest.approx(50.0)
    assert constant_answer_f1(records) == {"yes": 0.0, "no": 25.0}


def test_learning_benchmark_on_conversations_end_to_end_reports_groups_and_constant_answers(tiny_model_dir, tmp_path, monkeypatch, capsys):
    from benchmarks import _common, bench_learning
    from benchmarks.learning_report import main as report_main

    monkeypatch.setattr(_common, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(bench_learning, "FIGURES", tmp_path / "figures")
    trainer = ["--model_name_or_path", str(tiny_model_dir), "--finetuning", "full", "--max_steps", "1", "--num_generations", "2",
               "--per_device_train_batch_size", "2", "--max_turns", "1", "--num_train_samples", "2",
               "--max_context_tokens", "1536"]  # the preset's 3072 is for SmolLM2; the tiny model has 2048
    argv = ["--preset", "cpu-sumer", "--eval-questions", "4", "--eval-samples", "1", "--output-dir", str(tmp_path / "run"),
            "--tag", "e2e", "--", *trainer]
    assert bench_learning.main(argv) == 0
    # The tag names the run's own files, so another run does not overwrite them.
    assert sorted(path.name for path in (tmp_path / "figures").iterdir()) == ["learning_sumer_e2e_reward_curve.png", "learning_sumer_e2e_tool_use.png"]
    result = json.loads((tmp_path / "results" / "bench_learning_sumer_dev_e2e.json").read_text())
    run = result["runs"][0]
    from langgraph_memagent.training.held_out import HELD_OUT_ENTITIES, SPLITS, constant_answer_f1

    records = conversation_records(4, seed=SPLITS["dev"]["seed"], entities=HELD_OUT_ENTITIES)
    assert run["constant_answer_f1"] == constant_answer_f1(records)
    greedy = run["by_question_group"]["greedy"]
    assert greedy["all"]["f1"]["questions"] == 4 and greedy["first half"]["f1"]["questions"] == 2
    assert "greedy F1 change by question group: all " in capsys.readouterr().out
    # The report regenerates the same questions from the settings, so it gives the run's own figures.
    assert report_main([str(tmp_path / "results" / "bench_learning_sumer_dev_e2e.json"), "--json", str(tmp_path / "report.json")]) == 0
    assert json.loads((tmp_path / "report.json").read_text())["runs"][0]["changes"] == greedy


def test_learning_report_reproduces_the_test_and_test2_figures_from_the_committed_results(tmp_path, capsys):
    from benchmarks.learning_report import main

    results = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "results").glob("bench_learning_sumer_test_run12_plainread*.json"))
    assert len(results) == 5
    assert main([*map(str, results), "--json", str(tmp_path / "report.json")]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert sorted(run["seed"] for run in report["runs"]) == [1, 2, 3, 4, 42]
    summary = report["across_runs"]
    # The figures BENCHMARKS.md and README give for the twelfth run on test.
    assert [round(summary["all"]["f1"][key], 1) for key in ("mean", "sd", "sem")] == [10.6, 7.3, 3.3]
    assert [round(bound, 1) for bound in summary["all"]["f1"]["ci95"]] == [1.5, 19.7]
    assert [round(summary["without yes/no"]["f1"][key], 1) for key in ("mean", "sd")] == [9.0, 5.7]
    assert [round(summary["all"]["evidence_recall"][key], 1) for key in ("mean", "sd")] == [16.6, 12.7]
    assert report["constant_answer_f1"] == {"yes": pytest.approx(6.25), "no": pytest.approx(12.5)}
    questions = report["runs"][0]["changes"]
    assert sum(questions[category]["f1"]["questions"] for category in ("multi-hop", "open-domain", "single-hop", "temporal")) == 32
    assert "| mean ± sd | +10.6 ± 7.3 | +9.0 ± 5.7 |" in capsys.readouterr().out
    # With the second reading stage's run (seed 7): the six-run figures BENCHMARKS.md and README give.
    assert main([*map(str, results), str(results[0].with_name("bench_learning_sumer_test_run13_read7.json")), "--json", str(tmp_path / "six.json")]) == 0
    six = json.loads((tmp_path / "six.json").read_text())["across_runs"]
    assert [round(six["all"]["f1"][key], 1) for key in ("mean", "sd")] == [9.8, 6.8]
    assert [round(bound, 1) for bound in six["all"]["evidence_recall"]["ci95"]] == [-2.6, 28.2]
    # With the third reading stage's run (seed 5) too: the seven-run figures.
    assert main([*map(str, results), *(str(results[0].with_name(f"bench_learning_sumer_test_{run}.json")) for run in ("run13_read7", "run14_read5")),
                 "--json", str(tmp_path / "seven.json")]) == 0
    seven = json.loads((tmp_path / "seven.json").read_text())["across_runs"]
    assert [round(seven["all"]["f1"][key], 1) for key in ("mean", "sd", "sem")] == [9.9, 6.3, 2.4]
    assert [round(bound, 1) for bound in seven["all"]["f1"]["ci95"]] == [4.1, 15.6]
    assert [round(bound, 1) for bound in seven["all"]["evidence_recall"]["ci95"]] == [0.7, 25.6]
    # The two kept adapters and a fourth reading-stage seed on the 128 fresh test2 questions:
    # the figures BENCHMARKS.md and README give.
    larger = [str(results[0].with_name(f"bench_learning_sumer_test2_{run}.json")) for run in ("run13_read7", "run14_read5", "run18_read11")]
    assert main([*larger, "--json", str(tmp_path / "test2.json")]) == 0
    test2 = json.loads((tmp_path / "test2.json").read_text())
    assert [[round(run["changes"][group]["f1"]["change"], 1) for group in ("all", "without yes/no")] for run in test2["runs"]] == [
        [8.3, 6.2], [3.6, 4.7], [15.7, 15.8]]
    assert [round(test2["across_runs"]["all"]["f1"][key], 1) for key in ("mean", "sd", "sem")] == [9.2, 6.1, 3.5]
    assert [round(test2["across_runs"]["all"][measure]["mean"], 1) for measure in ("f1", "evidence_recall")] == [9.2, 18.1]
    assert test2["constant_answer_f1"] == {"yes": pytest.approx(7.8, abs=0.05), "no": pytest.approx(7.0, abs=0.05)}
    # With the fifth reading-stage seed (13): the four-run figures.
    assert main([*larger, larger[0].replace("run13_read7", "run19_read13"), "--json", str(tmp_path / "four.json")]) == 0
    four = json.loads((tmp_path / "four.json").read_text())
    assert round(four["runs"][3]["changes"]["all"]["f1"]["change"], 1) == 7.8
    assert [round(four["across_runs"]["all"]["f1"][key], 1) for key in ("mean", "sd", "sem")] == [8.8, 5.0, 2.5]
    assert [round(bound, 1) for bound in four["across_runs"]["all"]["f1"]["ci95"]] == [0.9, 16.8]
    assert [round(four["across_runs"]["all"]["evidence_recall"][key], 1) for key in ("mean", "sd")] == [21.3, 9.8]
    assert four["runs"][3]["answer_shortcuts"]["other"] == {"questions": 109, "scoring": 17, "exact": 7, "scoring_with_evidence_found": 16}
    # Without yes/no questions and year-only answers: seed 11 keeps 13.1 of its 15.7; across the four runs +8.3 ± 3.7.
    assert [round(run["f1_without_shortcuts"]["change"], 1) for run in four["runs"]] == [6.2, 4.7, 13.1, 9.1]
    assert [round(four["f1_without_shortcuts"][key], 1) for key in ("mean", "sd")] == [8.3, 3.7]
    # The shortcut checks BENCHMARKS.md gives: seed 7's constant "yes", seed 11's year-only dates.
    shortcuts = [run["answer_shortcuts"] for run in test2["runs"]]
    assert shortcuts[0]["yes_no"] == {"questions": 19, "most_common_answer": "yes", "most_common_count": 19, "right": 10}
    assert shortcuts[2]["temporal"] == {"questions": 12, "scoring": 7, "year_alone_scoring": 6}
    assert shortcuts[2]["other"] == {"questions": 109, "scoring": 25, "exact": 12, "scoring_with_evidence_found": 20}


def test_learning_report_reads_episode_files_and_gives_the_agemem_chains_test3_figures(tmp_path, capsys):
    from benchmarks.learning_report import main

    result = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "bench_agemem_episodes_test3_reader56.json"
    # The chain over the untrained policy, the reading stage alone, the chain over the reading stage: BENCHMARKS.md's figures.
    for options, f1, recall in (([], (35.3, 8.0), (21.9, 7.4)), (["--adapter", "1"], (25.3, 7.4), (9.4, 10.4)),
                                (["--baseline", "sumer"], (10.1, 9.5), (12.5, 8.7))):
        assert main([str(result), *options, "--json", str(tmp_path / "report.json")]) == 0
        changes = json.loads((tmp_path / "report.json").read_text())["runs"][0]["changes"]["all"]
        assert [round(changes["f1"][key], 1) for key in ("change", "standard_error")] == list(f1)
        assert [round(changes["retrieval_recall"][key], 1) for key in ("change", "standard_error")] == list(recall)
    # Answers are scored by their F1, not AgeMem's composite reward: 12 of the 26 open answers score, 10 exactly.
    printed = capsys.readouterr().out
    assert "| runs/agemem-answer56/checkpoint-12 over runs/sumer56-read | +10.1 ± 9.5 |" in printed
    assert "other 12 of 26 score (10 exactly, 12 had found their evidence)" in printed
    # The recipe's three seeds (runs 56-58): the figures BENCHMARKS.md and README give.
    seeds = [str(result.with_name(f"bench_agemem_episodes_test3_reader{seed}.json")) for seed in (56, 57, 58)]
    assert main([*seeds, "--json", str(tmp_path / "seeds.json")]) == 0
    across = json.loads((tmp_path / "seeds.json").read_text())["across_runs"]["all"]
    assert [round(across["f1"][key], 1) for key in ("mean", "sd")] == [21.5, 17.0]
    assert [round(bound, 1) for bound in across["f1"]["ci95"]] == [-20.8, 63.8]
    assert [round(across["retrieval_recall"][key], 1) for key in ("mean", "sd")] == [25.0, 4.1]
    assert main([*seeds, "--baseline", "sumer", "--json", str(tmp_path / "steps.json")]) == 0
    steps = json.loads((tmp_path / "steps.json").read_text())["across_runs"]["all"]["f1"]
    assert [round(steps[key], 1) for key in ("mean", "sd")] == [1.7, 8.3]


def test_learning_report_gives_the_64_step_chains_test4_figures(tmp_path):
    from benchmarks.learning_report import main

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    # Seeds 59, 60 and 61 of the 64-step recipe, measured once on test4: the figures BENCHMARKS.md and README give,
    # each run's change ± paired s.e., then the seed mean ± sd with its 95% t interval.
    seeds = [str(results / f"bench_agemem_episodes_test4_reader{seed}_read64.json") for seed in (59, 60, 61)]
    for options, f1, across in (
        ([], [(43.4, 8.8), (55.9, 9.1), (46.5, 9.0)], (48.6, 6.5, 32.4, 64.8)),
        (["--decoding", "sampled"], [(47.9, 8.5), (46.4, 8.6), (35.9, 8.3)], (43.4, 6.6, 27.1, 59.7)),
        (["--adapter", "sumer"], [(33.7, 8.3), (30.7, 8.5), (33.5, 7.5)], (32.6, 1.6, 28.6, 36.7)),
        (["--baseline", "sumer"], [(9.7, 4.7), (25.1, 7.5), (13.0, 8.5)], (16.0, 8.1, -4.3, 36.2)),
    ):
        assert main([*seeds, *options, "--json", str(tmp_path / "report.json")]) == 0
        report = json.loads((tmp_path / "report.json").read_text())
        assert [tuple(round(run["changes"]["all"]["f1"][key], 1) for key in ("change", "standard_error")) for run in report["runs"]] == f1
        mean = report["across_runs"]["all"]["f1"]
        assert tuple(round(value, 1) for value in (mean["mean"], mean["sd"], *mean["ci95"])) == across
        if not options:
            runs = report["runs"]
    # The greedy chains: the same retrieval recall, +46.9 ± 8.7 points each; F1 without shortcuts.
    assert [round(run["changes"]["all"]["retrieval_recall"]["change"], 1) for run in runs] == [46.9, 46.9, 46.9]
    assert [round(run["f1_without_shortcuts"]["change"], 1) for run in runs] == [44.0, 55.1, 47.7]


def test_learning_report_draws_each_run_and_the_seed_mean_with_their_intervals(tmp_path):
    from benchmarks.learning_report import forest_rows, load_runs, main, plot, report

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    seeds = [results / f"bench_agemem_episodes_test3_reader{seed}.json" for seed in (56, 57, 58)]
    rows = forest_rows(report(load_runs(seeds)))
    assert list(rows) == ["f1", "retrieval_recall"]
    # Run 58's answer change, +2.5 ± 2.0 (s.e. 2.04), with its paired 95% interval; then the seed mean with its t interval.
    label, change, low, high = rows["f1"][2]
    assert "agemem-answer58" in label and [round(x, 1) for x in (change, high - change)] == [2.5, 4.0]
    assert rows["f1"][3][0] == "mean of 3 (95% t)" and [round(x, 1) for x in rows["f1"][3][1:]] == [21.5, -20.8, 63.8]
    assert [round(x, 1) for x in rows["retrieval_recall"][3][1:]] == [25.0, 14.7, 35.3]
    # One run has no mean row; the figure is written whole, by a rename.
    assert [label for label, *_ in forest_rows(report(load_runs(seeds[:1])))["f1"]] == ["runs/agemem-answer56/checkpoint-12 over untrained"]
    assert main([*map(str, seeds), "--plot", str(tmp_path / "forest.png")]) == 0
    assert (tmp_path / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [path.name for path in tmp_path.iterdir()] == ["forest.png"]
    with pytest.raises(ValueError, match="the runs have no whole-set change of f1 or evidence_recall or retrieval_recall to draw"):
        plot({"across_runs": {"all": {}}, "runs": [], "split": "test3", "decoding": "greedy"}, tmp_path / "none.png")


def test_learning_report_refuses_other_files_and_mixed_question_sets_in_one_line(tmp_path, capsys):
    from benchmarks.learning_report import main

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    (tmp_path / "other.json").write_text(json.dumps({"benchmark": "bench_decode", "rows": []}))
    cases = (
        ([str(tmp_path / "other.json")], f"{tmp_path / 'other.json'} is not a bench_learning results file (expected 'split' and a list of 'runs')"),
        ([str(results / "bench_agemem_episodes_test3_reader56.json"), "--adapter", "3"],
         "bench_agemem_episodes_test3_reader56.json has 2 adapters (runs/sumer56-read, runs/agemem-answer56/checkpoint-12); '3' names 0 of them, expected one"),
        ([str(results / "bench_agemem_episodes_test3_reader56.json"), "--adapter", "runs/"], "'runs/' names 2 of them, expected one"),
        ([str(results / "bench_agemem_episodes_locomo81_reader56.json")],
         "bench_agemem_episodes_locomo81_reader56.json answered split 'locomo'; the report regenerates the generated splits only"),
        ([str(results / "bench_agemem_episodes_test3_reader56.json"), str(results / "bench_agemem_episodes_dev_best_reader56.json")],
         "the runs answered different question sets"),
        ([str(tmp_path / "missing.json")], f"cannot read {tmp_path / 'missing.json'} as JSON (FileNotFoundError"),
        ([str(results / "bench_learning_sumer_dev_run12_plainread.json"), str(results / "bench_learning_sumer_test_run12_plainread.json")],
         "the runs answered different question sets"),
        ([str(results / "bench_learning_sumer_test_run12_plainread.json"), "--decoding", "beam"], "the run has no 'beam' evaluation"),
        ([str(results / "bench_learning_sumer_test_run12_plainread.json"), "--json", str(tmp_path / "other.json" / "report.json")],
         f"File exists: '{tmp_path / 'other.json'}'"),  # a file where the report's folder would go
    )
    for argv, expected in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err


def test_a_result_named_after_a_variant_names_the_module_that_ran(monkeypatch, tmp_path):
    from benchmarks import _common

    monkeypatch.setattr(_common, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr("sys.argv", ["/repo/benchmarks/bench_locomo.py", "--limit", "2"])
    written = json.loads(_common.write_result("bench_locomo_tools", {}).read_text())
    assert written["command"].endswith(" -m benchmarks.bench_locomo --limit 2")


def test_reading_benchmark_shows_the_evidence_alone_or_the_questions_own_search(capsys, tmp_path):
    from benchmarks.bench_sumer_reading import main
    from langgraph_memagent.baselines import load_embeddings
    from langgraph_memagent.training.reading import parse_reading_memory, reading_memory

    record, embeddings = conversation_records(1, seed=10_000, entities="test")[0], load_embeddings()
    memory, shown = reading_memory({}, embeddings, record, parse_reading_memory("evidence"))  # a perfect search: the evidence lines, no neighbours
    assert shown == record["evidence"] and memory.count("\n> [") == len(record["evidence"]) and "\n  [" not in memory
    memory, shown = reading_memory({}, embeddings, record, parse_reading_memory("question k=2 context=1"))  # the search tool's reply to the question itself
    assert memory.startswith(f"2 matches for semantic search {record['question']!r}") and memory.count("\n> [") == 2
    assert 3 <= len(shown) <= 6 and all(f"[{turn_id} |" in memory for turn_id in shown)
    plain = reading_memory({}, embeddings, record, parse_reading_memory("question k=2 context=1"), echo_query=False)[0]
    assert plain == memory.replace(f" for semantic search {record['question']!r}", "", 1) and record["question"] not in plain
    # The evidence among the question's own hits: k bare lines, the evidence always in, in conversation order.
    order = [turn["dia_id"] for turn in record["turns"]]
    searched = reading_memory({}, embeddings, record, parse_reading_memory("question k=4 context=0"))[1]
    memory, shown = reading_memory({}, embeddings, record, parse_reading_memory("evidence+question k=4"))
    assert len(shown) == 4 and set(record["evidence"]) <= set(shown) and "\n  [" not in memory
    assert set(shown) - set(record["evidence"]) <= set(searched) and shown == sorted(shown, key=order.index)
    memory, shown = reading_memory({}, embeddings, record, parse_reading_memory("evidence+question k=1"))
    assert shown == record["evidence"]
    with pytest.raises(ValueError, match=r"reading memory 'evidence' needs the row's evidence ids among its turns, got \['D99:1'\]"):
        reading_memory({}, embeddings, {**record, "evidence": ["D99:1"]}, parse_reading_memory("evidence"))
    with pytest.raises(SystemExit):
        main(["--settings", "evidence,question k=0 context=1"])
    assert capsys.readouterr().err.splitlines()[-1].endswith("(K >= 1, C >= 0), got 'question k=0 context=1'")
    (tmp_path / "other.json").write_text(json.dumps({"settings": {"split": "dev", "questions": 8}, "memories": {}}))
    (tmp_path / "plain.json").write_text(json.dumps({"settings": {"split": "dev", "questions": 32, "search_reply": "plain"}, "memories": {}}))
    (tmp_path / "rule.json").write_text(json.dumps({"settings": {"split": "dev", "questions": 32, "answer_rule": "yes-no"}, "memories": {}}))
    for before, expected in (("missing.json", "--before must be a result file of this benchmark"), ("other.json", "8 questions, this run 'dev' and 32"),
                             ("plain.json", "has search_reply 'plain', this run 'echo'"), ("rule.json", "has answer_rule 'yes-no', this run 'none'")):
        with pytest.raises(SystemExit):
            main(["--before", str(tmp_path / before)])
        assert expected in capsys.readouterr().err.splitlines()[-1]
    for bad, expected in ((["--samples", "4"], "--samples must be 1 when greedy and >= 1 when sampled, got 4 at temperature 0.0"),
                          (["--temperature", "-1"], "--temperature must be >= 0 (0 = greedy), got -1.0"),
                          (["--questions", "2", "--yes-no-only"], "--yes-no-only kept 0 of the first 2 questions: ask for more")):
        with pytest.raises(SystemExit):
            main(bad)
        assert capsys.readouterr().err.splitlines()[-1].endswith(expected)
    # The yes/no counts against hand-counted ones (its doctest).
    import doctest

    from benchmarks import bench_sumer_reading

    assert doctest.testmod(bench_sumer_reading).failed == 0


def test_reading_curriculum_rollouts_are_one_forced_submit_over_the_evidence(tiny_model_dir, tmp_path, monkeypatch):
    from benchmarks.bench_learning import whole_episodes
    from langgraph_memagent.training import evaluation

    rows = conversation_records(2, seed=4)
    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", turn_tokens=48, answer_tokens=4, tool_choice="required",
                         forced_answer_call="submit", sumer_require_submit=False, reading_memory="evidence")
    trainer, rollouts = trained_recording_rollouts(tiny_model_dir, rows, config)
    assert rollouts and all(len(rollout.calls) == 1 for rollout in rollouts)  # no turn: the forced answer alone
    prompts = {trainer.processing_class.decode(rollout.calls[0].prompt_ids) for rollout in rollouts}
    evidence_lines = {turn["text"] for row in rows for turn in row["turns"] if turn["dia_id"] in row["evidence"]}
    assert all(any(line in prompt for line in evidence_lines) and "You cannot search any more" in prompt for prompt in prompts)
    assert trainer.state.log_history[0]["tools/searches"] == 0
    # Evaluating the same config reads the same memory; the learning benchmark's held-out episodes are whole.
    given, run = [], evaluation.run_rollouts
    monkeypatch.setattr(evaluation, "run_rollouts", lambda graph, inputs, *rest, **kwargs: given.extend(inputs) or run(graph, inputs, *rest, **kwargs))
    measured = evaluation.evaluate_policy(trainer.model, trainer.processing_class, rows, config, temperature=0.0)
    assert [len(graph_input["found"]) for graph_input in given] == [1, 1]
    # Each rollout's answer is kept beside its reward, and survives the JSON round trip (for shortcut checks).
    assert len(measured.answers) == 2 and all(answer is None or isinstance(answer, str) for answer in measured.answers)
    assert evaluation.PolicyEvaluation.from_dict(json.loads(json.dumps(measured.to_dict()))) == measured
    assert graph_options(config).max_turns == 0 and graph_options(whole_episodes(config)).max_turns == config.max_turns == 20


def test_reading_curriculum_is_checked_before_anything_loads(tmp_path):
    with pytest.raises(ValueError, match=r"reading memory must be 'evidence', 'question k=K context=C' .* got 'question k=0'"):
        parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path), "--forced_answer_call", "submit", "--reading_memory", "question k=0"])
    with pytest.raises(ValueError, match="reading_memory is for graph 'sumer' with forced_answer_call 'submit', got graph 'sumer' and forced_answer_call 'text'"):
        parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path), "--reading_memory", "evidence"])


def test_search_curriculum_rollouts_are_the_search_turn_alone_scored_by_its_evidence_recall(tiny_model_dir, tmp_path):
    from benchmarks.bench_learning import whole_episodes
    from langgraph_memagent.training.tool_use import evidence_recall

    rows = conversation_records(2, seed=4)
    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", turn_tokens=128, answer_tokens=4, tool_choice="required",
                         forced_answer_call="submit", sumer_require_submit=False, max_turns=1, search_curriculum=True, task="conversations",
                         evidence_reward_weight=0.5)
    trainer, rollouts = trained_recording_rollouts(tiny_model_dir, rows, config)
    # The turn alone, also where the turn searched and hit the cap: no forced answer after it.
    assert rollouts and all(len(rollout.calls) == 1 for rollout in rollouts)
    assert "turn_limit" in {rollout.output["stop_reason"] for rollout in rollouts}
    prompts = [trainer.processing_class.decode(rollout.calls[0].prompt_ids) for rollout in rollouts]
    assert not any("You cannot search any more" in prompt for prompt in prompts)
    evidence = {row["question"]: row["evidence"] for row in rows}
    for rollout in rollouts:
        # The recall alone: not the paper's -1 for no answer, nor its sum with the evidence shaping.
        assert not rollout.output["forced_answer"]
        assert rollout.reward == rollout.measures["reward/evidence"] == evidence_recall(rollout.output["searches"], evidence[rollout.output["question"]])
    assert "reward/evidence" in trainer.state.log_history[0] and "reward/paper" not in trainer.state.log_history[0]
    assert whole_episodes(config).search_curriculum is False
    with pytest.raises(ValueError, match=r"search_curriculum is for graph 'sumer' .* got graph 'memagent', .* task 'niah_single_1'"):
        parse_config(["--output_dir", str(tmp_path), "--search_curriculum", "true"])
    with pytest.raises(ValueError, match=r"got graph 'sumer', max_turns 20, reading_memory None and task 'niah_single_1'"):
        parse_config(["--output_dir", str(tmp_path), "--graph", "sumer", "--reward_metric", "f1", "--search_curriculum", "true"])


def test_write_curriculum_rollouts_are_stage_one_alone_scored_by_the_evidence_their_items_hold(tiny_model_dir, tmp_path):
    from benchmarks.bench_learning import whole_episodes
    from langgraph_memagent.training.agemem_reward import evidence_held

    rows = conversation_records(2, seed=4)
    config = tiny_config(tmp_path, graph="agemem", reward_metric="f1", turn_tokens=128, agemem_turns_per_message=1, max_turns=8,
                         agemem_distractor_messages=1, tool_choice="required", agemem_write_mode="line",
                         agemem_sessions="evidence-shuffled", write_curriculum=True, task="conversations",
                         per_device_train_batch_size=2)  # one group of two: the loss pass is most of the time
    trainer, rollouts = trained_recording_rollouts(tiny_model_dir, rows, config)
    # Stage 1 alone: one forced add_memory of a line per evidence session, then no distractor, no question, no answer.
    assert rollouts and all(list(rollout.output["stage_turns"]) == ["build"] for rollout in rollouts)
    assert all(len(rollout.calls) == rollout.output["arrivals"]["build"] == rollout.output["tool_calls"]["add_memory"] for rollout in rollouts)
    assert all(rollout.output["answer"] is None for rollout in rollouts)
    prompts = [trainer.processing_class.decode(call.prompt_ids) for rollout in rollouts for call in rollout.calls]
    assert not any("Stage 2 of 3" in prompt or "Stage 3 of 3" in prompt for prompt in prompts)
    by_question = {row["question"]: row for row in rows}
    for rollout in rollouts:
        # The evidence the stored lines hold, not AgeMem's composite (whose task part would be 0 without an answer).
        held = evidence_held(rollout.output["memory_items"], evidence_texts(by_question[rollout.output["question"]]))
        assert rollout.reward == rollout.measures["reward/memory_recall"] == rollout.measures["memory_recall"] == held
    assert "reward/memory_recall" in trainer.state.log_history[0] and "reward/task" not in trainer.state.log_history[0]
    assert whole_episodes(config).write_curriculum is False
    with pytest.raises(ValueError, match=r"write_curriculum is for graph 'agemem' and rows with evidence ids .* got graph 'sumer' and task 'conversations'"):
        parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path), "--write_curriculum", "true"])
    with pytest.raises(ValueError, match=r"got graph 'agemem' and task 'niah_single_1'"):
        parse_config(["--output_dir", str(tmp_path), "--graph", "agemem", "--write_curriculum", "true"])


def test_a_curriculum_stage_starts_from_the_last_stages_adapter(tiny_model_dir, tmp_path):
    import itertools

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent.training.grpo_multiconv import policy_to_train
    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    # The earlier stage's adapter, with non-zero weights (a fresh LoRA's B is zero).
    torch.manual_seed(0)
    earlier = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                             LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM", init_lora_weights=False))
    earlier.save_pretrained(tmp_path / "stage-one")
    saved = {name: value.detach().clone() for name, value in earlier.named_parameters() if "lora_B" in name}
    assert saved and all(value.abs().sum() > 0 for value in saved.values())

    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", turn_tokens=48, answer_tokens=4, tool_choice="required",
                         forced_answer_call="submit", sumer_require_submit=False, reading_memory="evidence", finetuning="lora",
                         init_adapter=str(tmp_path / "stage-one"))
    policy, peft_config = policy_to_train(AutoModelForCausalLM.from_pretrained(tiny_model_dir), config)
    assert peft_config is None
    started = {name: value for name, value in policy.named_parameters() if "lora_B" in name}
    assert started.keys() == saved.keys() and all(torch.equal(started[name], saved[name]) and started[name].requires_grad for name in saved)
    # Rewards 0, 1, 2, 0 in scoring order: both groups of two have a spread, whatever their order, so the step has a gradient.
    counter = itertools.count()
    trainer = MultiConvGRPOTrainer(policy, args=config, train_dataset=Dataset.from_list(conversation_records(2, seed=4)),
                                   processing_class=AutoTokenizer.from_pretrained(tiny_model_dir),
                                   reward_fn=lambda output, sample: float(next(counter) % 3))
    trainer.train()
    assert any(not torch.equal(value, saved[name]) for name, value in trainer.model.named_parameters() if name in saved)


def test_the_shipped_adapters_name_trains_that_adapter_further(embedded_model_dir, tmp_path):
    import torch
    from safetensors.torch import load_file

    from langgraph_memagent.agents.loading import shipped_adapter
    from langgraph_memagent.training.grpo_multiconv import load_policy, policy_to_train

    config = parse_config(["--preset", "cpu-smoke", "--output_dir", str(tmp_path), "--model_name_or_path", "smollm2-135m-memagent"])
    policy, peft_config = policy_to_train(load_policy(config)[0], config)
    shipped = load_file(f"{shipped_adapter('smollm2-135m-memagent')}/adapter_model.safetensors")
    started = {name.replace(".default", ""): value for name, value in policy.named_parameters() if "lora_" in name}
    assert peft_config is None and len(started) == len(shipped) == 30 * 7 * 2
    assert all(torch.equal(value, shipped[name].to(value.dtype)) and value.requires_grad for name, value in started.items())


def test_the_trainers_search_reply_reaches_the_graph_and_the_reading_memory(tmp_path):
    config = parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path), "--search_reply", "plain",
                           "--forced_answer_call", "submit", "--reading_memory", "evidence", "--answer_rule", "yes-no"])
    row = conversation_records(1, seed=0)[0]
    assert (graph_options(config).search_reply, graph_options(config).answer_rule) == ("plain", "yes-no")
    assert default_graph_input(config)(row)["found"][0].startswith(f"{len(row['evidence'])} matches (the matching line")


def test_a_start_adapter_is_checked_before_anything_loads(tmp_path):
    with pytest.raises(ValueError, match=r"init_adapter must be a saved LoRA adapter directory .* got '/nonexistent' with finetuning 'lora'"):
        parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path), "--init_adapter", "/nonexistent"])
    with pytest.raises(ValueError, match="search_context must be >= 0 \\(0 = the hits alone\\), got -1"):
        parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path), "--search_context", "-1"])


def test_episode_benchmark_refuses_what_is_not_an_adapter_or_not_a_whole_episode(capsys, tmp_path):
    from benchmarks.bench_sumer_episodes import main, shortcut_checks

    records = [{"answers": ["No"]}, {"answers": ["piano"]}]
    evaluation = {"rewards": [1.0, 0.5], "measures": [{"searches": 0}, {"searches": 2}], "answers": ["no", "the piano"]}
    assert shortcut_checks(records, evaluation) == {"yes_no_questions": 1, "f1_without_yes_no": 50.0, "scoring_answers_without_search": 1}
    with pytest.raises(SystemExit):
        main(["--adapters", str(tmp_path)])
    assert f"--adapters must be saved LoRA adapter directories (with adapter_config.json), got ['{tmp_path}']" in capsys.readouterr().err
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(SystemExit):
        main(["--adapters", str(tmp_path), "--", "--forced_answer_call", "submit", "--reading_memory", "evidence"])
    assert "episodes are whole: drop --reading_memory 'evidence'" in capsys.readouterr().err.splitlines()[-1]


def test_episode_benchmark_end_to_end_gives_each_adapters_shortcut_free_change_and_the_spread_across_adapters(
        tiny_model_dir, tmp_path, monkeypatch, capsys):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from benchmarks import _common
    from langgraph_memagent.training.held_out import held_out_conversations, is_yes_no
    from benchmarks.bench_sumer_episodes import main
    from benchmarks.learning_report import f1_without_shortcuts

    adapters = []
    for seed in (1, 2):  # non-zero LoRA weights, so each adapter answers differently from the base
        torch.manual_seed(seed)
        lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM", init_lora_weights=False)
        get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir), lora).save_pretrained(tmp_path / f"adapter-{seed}")
        adapters.append(str(tmp_path / f"adapter-{seed}"))
    monkeypatch.setattr(_common, "RESULTS_DIR", tmp_path / "results")
    trainer = ["--model_name_or_path", str(tiny_model_dir), "--max_turns", "1", "--max_context_tokens", "1536",
               "--forced_answer_call", "submit", "--sumer_require_submit", "false", "--search_context", "0"]
    assert main(["--questions", "4", "--adapters", *adapters, "--name", "episodes", "--", *trainer]) == 0
    result = json.loads((tmp_path / "results" / "episodes.json").read_text())
    records = held_out_conversations("dev", 4)
    untrained = result["policies"]["untrained"]["greedy"]
    changes = []
    for path in adapters:
        policy = result["policies"][path]
        assert policy["f1_without_shortcuts"] == f1_without_shortcuts(records, untrained, policy["greedy"])
        assert policy["answer_shortcuts"]["yes_no"]["questions"] == sum(is_yes_no(record) for record in records)
        changes.append(policy["f1_without_shortcuts"]["change"])
    spread = result["across_adapters"]["f1_without_shortcuts"]
    assert spread["runs"] == 2 and spread["mean"] == pytest.approx(sum(changes) / 2)
    printed = capsys.readouterr().out
    assert "across adapters (mean ± sd): f1 " in printed
    answer_f1 = 100 * sum(measure["f1"] for measure in untrained["measures"]) / len(untrained["measures"])
    assert f"untrained: greedy F1 {answer_f1:.1f}, SUMER reward {untrained['accuracy']:.1f}" in printed


def test_the_committed_locomo_run_gives_the_shortcut_free_figures_benchmarks_md_reports():
    from langgraph_memagent.evals.stats import across
    from benchmarks.bench_sumer_episodes import episode_records
    from benchmarks.learning_report import f1_without_shortcuts

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    result = json.loads((results / "bench_sumer_episodes_locomo81_test2_adapters.json").read_text())
    records = episode_records(None, None, "locomo", 81)
    assert result["questions"] == [record["question"] for record in records]
    untrained = result["policies"].pop("untrained")["greedy"]
    free = [f1_without_shortcuts(records, untrained, policy["greedy"])["change"] for policy in result["policies"].values()]
    assert [round(change, 1) for change in free] == [1.0, 4.2, 0.8, 3.4]
    assert [round(across(free)[key], 1) for key in ("mean", "sd")] == [2.3, 1.7]
    assert [round(result["across_adapters"]["f1"][key], 1) for key in ("mean", "sd")] == [6.0, 3.7]


def test_episode_benchmark_reads_locomo_conv30_questions_with_their_evidence_and_categories(tmp_path):
    from benchmarks.bench_sumer_episodes import episode_records

    records = episode_records(None, None, "locomo", 200)
    assert len(records) == 81 and {r["task"] for r in records} == {"locomo"}
    assert {r["category"] for r in records} == {"single-hop", "multi-hop", "temporal"} and all(r["evidence"] for r in records)
    some = episode_records(None, None, "locomo", 8)
    assert len(some) == 8 and some == [r for r in records if r in some]
    generated = episode_records(parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path)]), None, "dev", 2)
    assert len(generated) == 2 and not {r["document"] for r in generated} & {r["document"] for r in records}


@pytest.mark.embedded
def test_writing_benchmark_classes_each_stored_line_by_position_and_evidence(capsys, tmp_path, monkeypatch):
    """bench_agemem_writing end to end on the embedded policy: one forced line a session, each found in its session."""
    import doctest

    from benchmarks import _common, bench_agemem_writing

    assert doctest.testmod(bench_agemem_writing).failed == 0
    monkeypatch.setattr(_common, "RESULTS_DIR", tmp_path)
    assert bench_agemem_writing.main(["--questions", "2", "--samples", "2", "--name", "writing"]) == 0
    result = json.loads((tmp_path / "writing.json").read_text())
    sessions = [len({t["session"] for t in r["turns"] if t["dia_id"] in r["evidence"]}) for r in conversation_records(2, seed=10_000, entities="test")]
    for name, rollouts in (("greedy", 1), ("sampled", 2)):
        row = result["decodings"][name]
        assert row["lines_stored"] == rollouts * sum(sessions) and "off" not in row["by_position"]
        assert abs(sum(row["by_position"].values()) - 100.0) < 1e-6 and 0 < row["chance_rate"] < 50
        assert len(row["per_question"]) == 2 and row["evidence_rate"] == sum(row["per_question"]) / 2
    assert "evidence lines" in capsys.readouterr().out
    (tmp_path / "other.json").write_text(json.dumps({"settings": {"split": "dev", "questions": 8}, "decodings": {}}))
    for argv, expected in ((["--before", str(tmp_path / "missing.json")], "--before must be a result file of this benchmark"),
                           (["--before", str(tmp_path / "other.json")], "this run with ['dev', 16, 'evidence', 8, 1.0]"),
                           (["--samples", "0"], "--samples must be >= 1 and --temperature > 0, got 0 and 1.0")):
        with pytest.raises(SystemExit):
            bench_agemem_writing.main(argv)
        assert expected in capsys.readouterr().err.splitlines()[-1]


def test_every_held_out_split_asks_its_own_conversations():
    """A split added by copying another's seed would repeat its conversations (the varied splits reword their plain twin)."""
    from langgraph_memagent.training import held_out

    documents = {
        split: {record["document"] for record in held_out.held_out_conversations(split, 8)}
        for split, spec in held_out.SPLITS.items() if "wording" not in spec
    }
    for split, held in documents.items():
        assert not any(held & other for name, other in documents.items() if name != split), split
