"""Engine changes side by side: rollout workloads timed from two git revisions, alternating round by round.

An engine change is measured against the code before it on the same machine in the same
hour: each round runs ``bench_prefix_cache``'s two greedy workloads of the ``cpu-sumer``
policy (a reading-curriculum batch of ``--groups`` x 8 rollouts, and ``--questions`` whole
SUMER episodes) once from ``--before`` (a commit, checked out in a temporary worktree) and
once from the working tree, each in a fresh interpreter that imports that tree's package,
with the engine's defaults. Reported per workload: mean seconds of each, the speed-up, and
greedy agreement between the two beside that of two rounds of ``--before`` (a batch's make-up
already moves float32 rounding).

    .venv/bin/python experiments/2026-11-29_prefix-cache-and-batch-rows/bench_revisions.py --before 80796bb      # about 10 minutes on 2 cores

Results: ``benchmarks/results/bench_revisions.json``, every answer included.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from langgraph_memagent.benchmarks._common import OtherLoad, write_result

NAME = "bench_revisions"
REPOSITORY = Path(__file__).resolve().parents[2]
LABELS = ("before", "after")
# One round in a fresh interpreter. It uses only what both revisions have, so it is passed as
# text: the older tree has no copy of this module.
ROUND = """
import json, sys, tempfile
from peft import get_peft_model
from langgraph_memagent.training.held_out import held_out_conversations
from langgraph_memagent.training.evaluation import evaluate_policy
from langgraph_memagent.training.grpo_multiconv import load_policy, lora_config, parse_config

workloads, groups, questions = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
configs = {name: parse_config(["--preset", "cpu-sumer", "--output_dir", tempfile.mkdtemp(), *extra]) for name, extra in workloads.items()}
model, tokenizer = load_policy(configs["reading"])
model = get_peft_model(model, lora_config(configs["reading"]))
records = {"reading": held_out_conversations("dev", groups), "episodes": held_out_conversations("dev", questions)}
result = {}
for name, config in configs.items():
    evaluation = evaluate_policy(model, tokenizer, records[name], config, temperature=0.0, rollouts_per_question=8 if name == "reading" else 1)
    result[name] = {"seconds": round(evaluation.seconds, 2), "answers": evaluation.answers, "rewards": evaluation.rewards}
print(json.dumps(result))
"""


def _same(first: list[str], second: list[str]) -> str:
    return f"{sum(a == b for a, b in zip(first, second))} of {len(first)}"


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per workload: mean seconds per revision, the speed-up, and greedy agreement.

    >>> rounds = [{"before": {"w": {"seconds": 4.0, "answers": ["a", "b"]}}, "after": {"w": {"seconds": 2.0, "answers": ["a", "c"]}}},
    ...           {"before": {"w": {"seconds": 6.0, "answers": ["a", "b"]}}, "after": {"w": {"seconds": 3.0, "answers": ["a", "b"]}}}]
    >>> summarize(rounds)["w"]
    {'seconds': {'before': 5.0, 'after': 2.5}, 'speedup': 2.0, 'same_answers_after_vs_before': '3 of 4', 'same_answers_before_vs_before': '2 of 2'}
    """
    summary = {}
    for workload in rounds[0]["before"]:
        seconds = {label: sum(run[label][workload]["seconds"] for run in rounds) / len(rounds) for label in LABELS}
        answers = {label: [run[label][workload]["answers"] for run in rounds] for label in LABELS}
        pairs = [answer for before, after in zip(answers["before"], answers["after"]) for answer in zip(before, after)]
        summary[workload] = {
            "seconds": {label: round(value, 2) for label, value in seconds.items()},
            "speedup": round(seconds["before"] / seconds["after"], 3),
            "same_answers_after_vs_before": _same(*zip(*pairs)) if pairs else None,
            "same_answers_before_vs_before": _same(answers["before"][0], answers["before"][1]) if len(rounds) > 1 else None,
        }
    return summary


def _package_dir(parent: Path, source: Path) -> str:
    """A directory holding ``langgraph_memagent`` -> ``source``, to put first on PYTHONPATH."""
    parent.mkdir()
    (parent / "langgraph_memagent").symlink_to(source, target_is_directory=True)
    return str(parent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-29_prefix-cache-and-batch-rows/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare the working tree against, e.g. a commit")
    parser.add_argument("--groups", type=int, default=4, help="reading questions, 8 rollouts each (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=24, help="held-out dev questions of the episodes (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each revision, alternating (default: %(default)s)")
    args = parser.parse_args(argv)
    for name in ("groups", "questions", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    found = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--verify", "--quiet", f"{args.before}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        parser.error(f"--before {args.before!r} is not a commit of {REPOSITORY}")
    before = found.stdout.strip()
    from langgraph_memagent.benchmarks.bench_prefix_cache import WORKLOADS

    load = OtherLoad()
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix=f"{NAME}-") as scratch:
        worktree = Path(scratch) / "before-tree"
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach", "--quiet", str(worktree), before], check=True)
        try:
            paths = {"before": _package_dir(Path(scratch) / "before", worktree), "after": _package_dir(Path(scratch) / "after", REPOSITORY)}
            for round_index in range(args.rounds):
                rounds.append({})
                for label in LABELS:
                    command = [sys.executable, "-c", ROUND, json.dumps(WORKLOADS), str(args.groups), str(args.questions)]
                    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": paths[label]}, capture_output=True, text=True)
                    if done.returncode != 0:
                        raise SystemExit(f"round {round_index} of {label} failed:\n{done.stderr[-2000:]}")
                    rounds[-1][label] = json.loads(done.stdout.splitlines()[-1])
                    times = ", ".join(f"{name} {part['seconds']} s" for name, part in rounds[-1][label].items())
                    print(f"round {round_index} {label}: {times}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force", str(worktree)], check=False)
    summary = summarize(rounds)
    for workload, parts in summary.items():
        print(f"{workload}: {parts['seconds']} -> {parts['speedup']}x, same greedy answers after vs before "
              f"{parts['same_answers_after_vs_before']}, before vs before {parts['same_answers_before_vs_before']}")
    write_result(NAME, {"before": before, "groups": args.groups, "questions": args.questions, "rounds": rounds, "summary": summary,
                        "other_cpu_cores": load.cores()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
