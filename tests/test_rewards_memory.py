"""Tests for the SUMER and AgeMem rewards of langgraph_memagent.training.rewards.

Every expected value is computed by hand in the comment beside it."""

from __future__ import annotations

import logging

import pytest

from langgraph_memagent.evals.loaders import load_locomo
from langgraph_memagent.evals.locomo_scoring import JudgeVerdict, LLMJudge
from langgraph_memagent.training.agemem_reward import AgeMemReward, AgeMemRewardConfig, agemem_reward, evidence_texts, memory_coverage
from langgraph_memagent.training.rewards import SumerReward, sumer_reward

from scripted_model import ScriptedChatModel
from helpers import LOCOMO_FILE


# --- SUMER -------------------------------------------------------------------------------------


def test_sumer_reward_is_j_times_f1_and_minus_one_without_an_answer():
    # Mem0 F1 of "the sunset at the lake" vs "sunset": sets {the, sunset, at, lake} / {sunset}: P=1/4, R=1.
    assert sumer_reward("the sunset at the lake", ["sunset"], True) == pytest.approx(0.4)
    assert sumer_reward("the sunset at the lake", ["sunset"], JudgeVerdict(True, "CORRECT", "{}")) == pytest.approx(0.4)
    assert sumer_reward("sunset", ["sunset"], False) == 0.0
    for missing in (None, "", "   "):
        assert sumer_reward(missing, ["sunset"], True) == -1.0
    # Unreadable judge: 0, like WRONG (not -1, which is for not answering).
    assert sumer_reward("sunset", ["sunset"], JudgeVerdict(None, None, "??", "no label")) == 0.0
    assert sumer_reward("sunset", ["sunset"], None) == 0.0
    # LoCoMo's stemmed F1: "walks" and "walking" share the stem "walk".
    assert sumer_reward("walks", ["walking"], 1, f1_variant="locomo") == 1.0
    with pytest.raises(ValueError, match="judge verdict must be"):
        sumer_reward("sunset", ["sunset"], "CORRECT")


def _gold_judge(prompt: str) -> str:
    """CORRECT when the gold appears in the answer; a non-answer reply for 'ramble' (scripted)."""
    gold = prompt.rsplit("Gold answer: ", 1)[1].split("\n")[0]
    generated = prompt.rsplit("Generated answer: ", 1)[1].split("\n")[0]
    if "ramble" in generated:
        return "Let me think."
    return '{"label": "%s"}' % ("CORRECT" if gold.lower() in generated.lower() else "WRONG")


def test_sumer_reward_batch_judges_only_what_it_must_and_counts_unreadable(caplog):
    model = ScriptedChatModel(responder=_gold_judge)
    reward = SumerReward(LLMJudge(model))
    samples = [{"question": f"q{i}", "answers": ["a sunset"]} for i in range(5)]
    outputs = [
        {"answer": "a sunset"},  # judged CORRECT, F1 1
        {"answer": "a lake"},  # judged WRONG
        {"answer": None},  # no answer: -1, not judged
        {"answer": "a sunset, I ramble"},  # unreadable verdict: 0, counted
        {"answer": "sunset", "judge": True},  # precomputed verdict: F1 {sunset} vs {a, sunset}: P=1, R=1/2
    ]
    with caplog.at_level(logging.WARNING):
        rewards = reward.batch(outputs, samples)
    assert rewards == pytest.approx([1.0, 0.0, -1.0, 0.0, 2 / 3])
    assert len(model.prompts) == 3 and reward.unjudged == 1
    assert "unreadable judge verdict" in caplog.text
    assert reward.__name__ == "sumer_reward"
    assert reward({"answer": "a sunset"}, samples[0]) == 1.0  # the trainer's per-rollout call


def test_sumer_reward_without_judge_needs_verdicts():
    with pytest.raises(ValueError, match="no judge and the graph output carries no 'judge'"):
        SumerReward()({"answer": "x"}, {"answers": ["x"]})
    assert SumerReward()({"answer": None}, {"answers": ["x"]}) == -1.0  # nothing to judge
    with pytest.raises(ValueError, match="unknown F1 variant"):
        SumerReward(f1_variant="rouge")
    with pytest.raises(ValueError, match="2 outputs but 1 samples"):
        SumerReward().batch([{}, {}], [{"answers": ["x"]}])


# --- AgeMem ------------------------------------------------------------------------------------


def test_memory_coverage_best_item_per_evidence():
    items = ["Melanie painted a sunset", "Caroline went to a pride parade"]
    # "sunset painting": {sunset, painting} -> best item has 'sunset' only: 1/2.
    # "pride parade in June": {pride, parade, in, june} -> 2/4. Mean 0.5.
    assert memory_coverage(items, ["sunset painting", "pride parade in June"]) == pytest.approx(0.5)
    assert memory_coverage([], ["sunset"]) == 0.0
    assert memory_coverage(items, ["...", "the"]) == 0.0  # no tokens: skipped, nothing left


def test_agemem_reward_hand_computed_cases():
    base = dict(context_tokens=250, context_limit=1000, turns=5, turn_limit=10)
    operations = [
        # Stage 2 (two messages arrived): after the first, 300 characters summarized away.
        {"stage": "distract", "arrival": 1, "tool": "summarize_context", "status": "success", "freed_chars": 300},
        {"stage": "distract", "arrival": 1, "tool": "filter_context", "status": "error"},  # failed: not counted
        {"stage": "build", "arrival": 1, "tool": "update_memory", "status": "success", "previous": "x", "content": "Ada lives in Paris"},
        {"stage": "build", "arrival": 2, "tool": "delete_memory", "status": "success", "previous": "Ada lives in Paris"},
        {"stage": "answer", "arrival": 1, "tool": "retrieve_memory", "status": "success", "retrieved": ["Ada lives in Paris", "lunch", "tea"]},
    ]
    record = dict(operations=operations, arrivals={"build": 2, "distract": 2, "answer": 1}, context_chars={"distract": 100},
                  final_context="Where does Ada live? m1: Ada lives in Paris")
    parts = agemem_reward("Paris", ["Paris"], memory_items=["Ada lives in Paris", "lunch"], **record, **base)
    # context: compression 300/(300+100) = 0.75; early: 1 of 2 arrivals = 0.5; the gold is in the final context: 1.
    assert parts.context_parts == {"compression": 0.75, "early_summarising": 0.5, "relevant_kept": 1.0}
    # memory: 1 of 2 items useful; the update left a useful item, the delete removed one: 1/2; 1 of 3 retrieved useful.
    assert parts.memory_parts == {"useful_items": 0.5, "maintenance": 0.5, "retrieval": pytest.approx(1 / 3)}
    assert (parts.task, parts.context, parts.memory, parts.penalty) == (1.0, 0.75, pytest.approx(4 / 9), 0.0)
    assert parts.total == pytest.approx((1 + 0.75 + 4 / 9) / 3)
    # Too many turns: -0.5; overflow (flag or tokens over the limit): -0.5 more.
    assert agemem_reward("Paris", ["Paris"], **record, **{**base, "turns": 11}).penalty == 0.5
    for overflow in ({"overflowed": True}, {"context_tokens": 1200}):
        assert agemem_reward("Paris", ["Paris"], **record, **{**base, **overflow}).penalty == 0.5
    # Without the rollout's record only what can be computed counts: no context parts, stored items only.
    bare = agemem_reward(None, ["Paris"], memory_items=["Paris"], **base)
    assert (bare.task, bare.context, bare.memory) == (0.0, 0.0, 1.0)
    assert bare.context_parts == {"compression": None, "early_summarising": None, "relevant_kept": None}
    # Task from a judge, custom weights and penalties, explicit evidence.
    config = AgeMemRewardConfig(task_weight=0.5, context_weight=0.25, memory_weight=0.25, turn_penalty=1.0)
    parts = agemem_reward(
        "somewhere", ["Paris"], memory_items=["lives in Paris"], evidence=["Ada lives in Paris"],
        task_score=1.0, config=config, **{**base, "turns": 20},
    )
    # 0.5 * 1 + 0.25 * 0 (no context record) + 0.25 * 1 ({ada, lives, in, paris}: 3 of 4 >= half) - 1.0
    assert parts.total == pytest.approx(0.5 + 0.25 - 1.0)
    # A numeric gold and the SQuAD F1 task metric (the judge's stand-in): "in 1999" vs "1999": P=1/2, R=1.
    assert agemem_reward("in 1999", [1999], **base).task == pytest.approx(2 / 3)


def test_agemem_reward_config_and_input_errors():
    with pytest.raises(ValueError, match="unknown task_metric 'judge'"):
        AgeMemRewardConfig(task_metric="judge")
    with pytest.raises(ValueError, match="turn_penalty must be >= 0"):
        AgeMemRewardConfig(turn_penalty=-1)
    with pytest.raises(ValueError, match="context_limit and turn_limit must be positive"):
        agemem_reward("x", ["x"], context_tokens=1, context_limit=0, turns=1, turn_limit=1)


def test_agemem_reward_callable_reads_graph_output_and_locomo_evidence():
    sample = next(s for s in load_locomo(LOCOMO_FILE) if len(s.meta["evidence"]) == 1)
    evidence = evidence_texts(sample.to_dict())
    turn = next(t for t in sample.meta["turns"] if t["dia_id"] == sample.meta["evidence"][0])
    assert evidence == [turn["text"]]
    reward = AgeMemReward(context_limit=2048)
    output = {
        "answer": sample.answers[0],
        "context_tokens": 512,
        "turn_limit": 30,
        "stage_turns": {"build": 10, "distract": 5, "answer": 4},
        "overflow_trims": 0,
        "memory_items": [{"content": turn["text"]}, "unrelated note"],
        "memory_operations": [{"stage": "answer", "arrival": 1, "tool": "retrieve_memory", "status": "success", "retrieved": [turn["text"]]}],
        "arrivals": {"build": 3, "distract": 2, "answer": 1},
        "context_chars": {"distract": 400},
        "final_context": "unrelated",
    }
    total = reward(output, sample.to_dict())
    parts = reward.last_parts
    # The gold answer; no compression, evidence not in the final context; 1 of 2 items useful, the retrieval useful.
    assert parts.context_parts == {"compression": 0.0, "early_summarising": 0.0, "relevant_kept": pytest.approx(parts.context_parts["relevant_kept"])}
    assert parts.context_parts["relevant_kept"] < 0.5
    assert parts.memory_parts == {"useful_items": 0.5, "maintenance": None, "retrieval": 1.0}
    assert (parts.task, parts.memory, parts.penalty) == (1.0, 0.75, 0.0)
    assert total == pytest.approx((1.0 + parts.context + 0.75) / 3) and reward.__name__ == "agemem_reward"
    # Groups trimmed for overflow: the overflow penalty applies.
    assert reward({**output, "overflow_trims": 2}, sample.to_dict()) == pytest.approx(total - 0.5)
    with pytest.raises(ValueError, match="needs turn_limit, context_tokens"):
        AgeMemReward(context_limit=10)({"answer": "x", "turns": 1}, {"answers": ["x"]})
    with pytest.raises(ValueError, match="memory item must be a string or a dict with 'content'"):
        reward({**output, "memory_items": [42]}, sample.to_dict())
