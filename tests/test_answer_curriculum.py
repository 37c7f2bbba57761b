"""AgeMem's answering curriculum (``agemem_sessions="given-memory"``): no stage 1, a memory holding the evidence."""

from __future__ import annotations

import pytest

from langgraph_memagent.training.agemem_reward import evidence_held, evidence_texts
from langgraph_memagent.training.data import conversation_records
from langgraph_memagent.training.grpo_multiconv import parse_config
from langgraph_memagent.training.writing import GIVEN_MEMORY_ITEMS, given_memory_input
from helpers import tiny_config, trained_recording_rollouts


def test_a_given_memory_holds_every_evidence_turn_among_other_turns_drawn_anew_per_rollout():
    rows = conversation_records(4, seed=4)
    given = given_memory_input(seed=3)
    for row in rows:
        memories = [given(row)["memory"] for _ in range(3)]
        lines = {f"{turn['speaker']}: {turn['text']}" for turn in row["turns"]}
        for memory in memories:
            assert len(memory) == GIVEN_MEMORY_ITEMS == len(set(memory)) and set(memory) <= lines
            assert evidence_held(memory, evidence_texts(row)) == 1.0
        assert len({tuple(memory) for memory in memories}) > 1
    # The n-th draw of a row depends on the seed and the row alone, not on the rows drawn before it.
    assert given_memory_input(seed=3)(rows[1]) == given_memory_input(seed=3)(rows[1])
    with pytest.raises(ValueError, match=r"agemem_sessions 'given-memory' needs the row's evidence ids among its turns, got \['D9:9'\]"):
        given({**rows[0], "evidence": ["D9:9"]})


def test_answering_curriculum_rollouts_skip_stage_one_and_are_scored_by_agemems_composite(tiny_model_dir, tmp_path):
    rows = conversation_records(2, seed=4)
    config = tiny_config(tmp_path, graph="agemem", reward_metric="f1", turn_tokens=64, agemem_turns_per_message=1, max_turns=4,
                         agemem_distractor_messages=1, agemem_write_mode="line", agemem_sessions="given-memory",
                         task="conversations", max_context_tokens=512, per_device_train_batch_size=2)  # one group of two: the loss pass is most of the time
    trainer, rollouts = trained_recording_rollouts(tiny_model_dir, rows, config)
    assert rollouts and all(list(rollout.output["stage_turns"]) == ["distract", "answer"] for rollout in rollouts)
    prompts = [trainer.processing_class.decode(call.prompt_ids) for rollout in rollouts for call in rollout.calls]
    assert not any("Stage 1 of 3" in prompt for prompt in prompts) and any("Stage 3 of 3" in prompt for prompt in prompts)
    # The memory the answer stage searched held every evidence turn: the composite's memory part sees it.
    assert all(rollout.measures["memory_recall"] == 1.0 and rollout.measures["memory_items"] >= GIVEN_MEMORY_ITEMS for rollout in rollouts)
    assert "reward/task" in trainer.state.log_history[0] and "reward/memory_recall" not in trainer.state.log_history[0]
    with pytest.raises(ValueError, match=r"write_curriculum trains stage 1, which agemem_sessions 'given-memory' skips: drop one of them"):
        parse_config(["--preset", "cpu-agemem", "--output_dir", str(tmp_path), "--agemem_sessions", "given-memory", "--write_curriculum", "true"])


def test_agemem_task_weight_one_scores_the_answer_alone_and_the_default_keeps_agemems_equal_thirds(tmp_path):
    from langgraph_memagent.training.rollout_graphs import default_reward

    sample = {"question": "Where?", "answers": ["Oslo"], "evidence": ["D1:1"], "turns": [{"dia_id": "D1:1", "text": "I moved to Oslo!"}]}
    output = {"answer": "Oslo, I think", "context_tokens": 100, "stage_turns": {"answer": 1}, "memory_items": ["Ann: I moved to Oslo!"],
              "memory_operations": [{"tool": "retrieve_memory", "status": "success", "stage": "answer", "arrival": 1, "retrieved": ["Ann: I moved to Oslo!"]}]}
    base = ["--preset", "cpu-agemem", "--output_dir", str(tmp_path), "--agemem_sessions", "given-memory"]
    answer_only = default_reward(parse_config([*base, "--agemem_task_weight", "1"]))
    assert answer_only(output, sample) == pytest.approx(0.5)  # token F1 of "Oslo, I think" against "Oslo": P 1/3, R 1
    composite = default_reward(parse_config(base))
    assert (composite.config.task_weight, composite.config.context_weight, composite.config.memory_weight) == (1 / 3, 1 / 3, 1 / 3)
    assert composite(output, sample) > answer_only(output, sample) / 3  # the memory part pays for the useful item retrieved
    with pytest.raises(ValueError, match=r"agemem_task_weight must be between 0 and 1 \(the answer part's share of AgeMem's reward\), got 1.5"):
        parse_config([*base, "--agemem_task_weight", "1.5"])
