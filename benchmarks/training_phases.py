"""Where a multi-conversation training run spent its time: rollouts against loss passes, per rollout batch.

Reads the ``log_history`` that TRL's trainer keeps in ``trainer_state.json`` (the newest
checkpoint of a run's output directory, or the file itself). The trainer logs
``rollout_seconds`` and ``tokens/completion_per_rollout`` on the first optimizer step of each
rollout batch, and TRL logs every step's ``step_time``, rollout included. So, per rollout
batch:

- ``rollout_s``: the rollouts' seconds;
- ``loss_s``: the rest of its steps' time (``step_time`` summed over the batch's steps, less the
  rollouts): the loss passes, the backward passes and the optimizer;
- ``completion_tokens``: completion tokens per rollout.

Each phase (a range of steps, by the batch's first step) gives the mean of each per batch and
the sums. Runs read side by side must still be compared as different runs: seeds change the
answers' lengths, and so the rollouts' time.

Example (the reading stages of SUMER runs 23 and 24, from their committed logs)::

    python -m benchmarks.training_phases benchmarks/results/trainer_log_sumer_run23_read.json \\
        benchmarks/results/trainer_log_sumer_run24_read.json --phases 1-32 33-48

"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

NAME = "training_phases"
_PHASE = re.compile(r"(\d+)-(\d+)")


def parse_phase(text: str) -> tuple[int, int]:
    """A step range ``FIRST-LAST`` (both included, steps count from 1).

    >>> parse_phase("1-32")
    (1, 32)
    """
    match = _PHASE.fullmatch(text.strip())
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"phase {text!r} is not a step range FIRST-LAST with 1 <= FIRST <= LAST, such as 1-32")
    return int(match[1]), int(match[2])


def log_history(path: Path) -> list[dict[str, Any]]:
    """The trainer's ``log_history`` from ``trainer_state.json``, or from a run directory's newest checkpoint."""
    if path.is_dir():
        if not (path / "trainer_state.json").exists():
            from transformers.trainer_utils import get_last_checkpoint

            last = get_last_checkpoint(str(path))
            if last is None:
                raise ValueError(f"{path} holds no trainer_state.json, nor a checkpoint-N directory with one")
            path = Path(last)
        path = path / "trainer_state.json"
    try:
        history = json.loads(path.read_text())["log_history"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"cannot read {path} as a trainer_state.json with a log_history ({type(error).__name__}: {error})") from None
    return history


def rollout_batches(history: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Per rollout batch: its first step, rollout seconds, loss-pass seconds and completion tokens per rollout.

    >>> rollout_batches([{"step": 1, "step_time": 90.0, "rollout_seconds": 40.0, "tokens/completion_per_rollout": 45.0},
    ...                  {"step": 2, "step_time": 55.0}])
    [{'step': 1, 'rollout_s': 40.0, 'loss_s': 105.0, 'completion_tokens': 45.0}]
    """
    batches: list[dict[str, float]] = []
    for entry in history:
        if "step_time" not in entry:  # the run's summary (train_runtime, ...) has no step of its own
            continue
        if "rollout_seconds" in entry:
            batches.append({"step": entry["step"], "rollout_s": entry["rollout_seconds"], "loss_s": 0.0,
                            "completion_tokens": entry["tokens/completion_per_rollout"]})
        elif not batches:
            raise ValueError(f"step {entry.get('step')} comes before any rollout batch: not a multi-conversation trainer's log")
        batches[-1]["loss_s"] += entry["step_time"]
    for batch in batches:
        batch["loss_s"] -= batch["rollout_s"]
    if not batches:
        raise ValueError("the log has no step with rollout_seconds: not a multi-conversation trainer's log")
    return batches


def phases(batches: list[dict[str, float]], ranges: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Per step range: the rollout batches that start in it, means per batch and sums."""
    rows = []
    for first, last in ranges:
        chosen = [batch for batch in batches if first <= batch["step"] <= last]
        row: dict[str, Any] = {"steps": f"{first}-{last}", "batches": len(chosen)}
        for key in ("rollout_s", "loss_s", "completion_tokens"):
            row[key] = round(statistics.fmean(batch[key] for batch in chosen), 1) if chosen else None
        for key in ("rollout_s", "loss_s"):
            row[f"{key}_sum"] = round(sum(batch[key] for batch in chosen), 1)
        rows.append(row)
    return rows


def markdown(runs: dict[str, list[dict[str, Any]]]) -> str:
    """One table row per run and phase."""
    lines = ["| run | steps | rollout batches | rollouts, s per batch | loss passes, s per batch | completion tokens per rollout | rollouts, s in all | loss passes, s in all |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, rows in runs.items():
        for row in rows:
            cells = [name, row["steps"], row["batches"], row["rollout_s"], row["loss_s"], row["completion_tokens"], row["rollout_s_sum"], row["loss_s_sum"]]
            lines.append("| " + " | ".join("-" if cell is None else str(cell) for cell in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="trainer_state.json files, or run output directories (their newest checkpoint)")
    parser.add_argument("--phases", nargs="+", default=None, metavar="FIRST-LAST",
                        help="step ranges, both ends included (default: the whole run)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    args = parser.parse_args(argv)
    try:
        ranges = [parse_phase(text) for text in args.phases] if args.phases else None
        runs = {}
        for path in args.runs:
            history = log_history(path)
            whole_run = [(1, max(entry["step"] for entry in history))]
            runs[str(path)] = phases(rollout_batches(history), ranges or whole_run)
    except ValueError as error:
        print(f"{NAME}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(runs, indent=2) if args.json else markdown(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
