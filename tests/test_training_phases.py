"""``benchmarks.training_phases``: rollouts against loss passes, from the trainer's own log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.training_phases import main, phases, rollout_batches

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def test_batches_and_phases_match_hand_computed_values() -> None:
    history = [
        {"step": 1, "step_time": 90.0, "rollout_seconds": 40.0, "tokens/completion_per_rollout": 45.0},
        {"step": 2, "step_time": 55.0},
        {"step": 3, "step_time": 50.0, "rollout_seconds": 20.0, "tokens/completion_per_rollout": 25.0},
        {"step": 4, "step_time": 30.0},
        {"train_runtime": 225.0, "step": 4},
    ]
    batches = rollout_batches(history)
    # loss passes: 90 + 55 - 40 = 105, then 50 + 30 - 20 = 60
    assert [(batch["step"], batch["rollout_s"], batch["loss_s"]) for batch in batches] == [(1, 40.0, 105.0), (3, 20.0, 60.0)]
    first, both, none = phases(batches, [(1, 2), (1, 4), (5, 9)])
    assert (first["batches"], first["loss_s"], first["completion_tokens"]) == (1, 105.0, 45.0)
    assert (both["rollout_s"], both["loss_s"], both["completion_tokens"], both["loss_s_sum"]) == (30.0, 82.5, 35.0, 165.0)
    assert (none["batches"], none["loss_s"], none["loss_s_sum"]) == (0, None, 0.0)


def test_reproduces_the_run_23_and_24_reading_stage_table(capsys) -> None:
    """BENCHMARKS.md section 11, run 24: the per-batch phases of the two reading stages, from their committed logs."""
    logs = [RESULTS / f"trainer_log_sumer_run{run}_read.json" for run in (23, 24)]
    assert main([*map(str, logs), "--phases", "1-32", "33-48", "--json"]) == 0
    run23, run24 = json.loads(capsys.readouterr().out).values()
    assert [(row["rollout_s"], row["loss_s"], row["completion_tokens"]) for row in run23] == [(30.3, 68.6, 32.7), (19.1, 47.0, 22.8)]
    assert [(row["rollout_s"], row["loss_s"], row["completion_tokens"]) for row in run24] == [(32.6, 57.9, 33.3), (26.8, 48.1, 26.9)]
    assert (run23[0]["batches"], run23[1]["batches"]) == (16, 8)


@pytest.mark.parametrize(("argv", "expect"), [
    (["{log}", "--phases", "32-1"], "phase '32-1' is not a step range FIRST-LAST"),
    (["{tmp}"], "holds no trainer_state.json, nor a checkpoint-N directory with one"),
    (["{tmp}/absent.json"], "cannot read {tmp}/absent.json as a trainer_state.json with a log_history"),
    (["{plain}"], "not a multi-conversation trainer's log"),
])
def test_bad_inputs_get_one_line(argv, expect, tmp_path, capsys) -> None:
    plain = tmp_path / "plain.json"  # TRL's own GRPO trainer logs no rollout_seconds
    plain.write_text(json.dumps({"log_history": [{"step": 1, "step_time": 3.0, "loss": 0.1}]}))
    names = {"{log}": str(RESULTS / "trainer_log_sumer_run24_read.json"), "{tmp}": str(tmp_path), "{plain}": str(plain)}
    for key, value in names.items():
        argv = [arg.replace(key, value) for arg in argv]
        expect = expect.replace(key, value)
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and expect in error, error
