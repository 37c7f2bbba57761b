"""Rollouts with and without the engine's prefix cache: wall time, prompt tokens prefilled, greedy agreement.

Agent rollouts repeat their prompts' beginnings: a GRPO group's rollouts open with the same
prompt, every SUMER prompt starts with the same system prompt and tool schemas, and a turn
starts with the turn before it. With the prefix cache (``prefix_cache_size``, on by default)
the embedded engine prefills only what a prompt does not share with a recent one. Two
workloads of the ``cpu-sumer`` policy (SmolLM2-135M with a fresh LoRA adapter, as a trainer
serves it), each greedy, in one interpreter, the two modes alternating round by round:

* ``reading``: one reading-curriculum rollout batch (``--reading_memory "evidence+question
  k=3"``), ``--groups`` questions x 8 rollouts, each one forced ``submit_answer`` call;
* ``episodes``: whole SUMER episodes of the stage-2 graph (one search turn, then the forced
  submit), ``--questions`` held-out dev questions, one rollout each.

Reported per workload and mode: wall seconds, prompt tokens prefilled and reused, and whether
every greedy answer is the same text with the cache as without it (splitting a prefill
changes float32 rounding only). ``python -m benchmarks.bench_prefix_cache`` (about 12 minutes
on 2 cores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from ._common import OtherLoad, write_result

NAME = "bench_prefix_cache"
MODES = {"whole prefill": 0, "prefix cache": 16}
GRAPH_ARGS = ["--max_context_tokens", "6144", "--forced_answer_call", "submit", "--sumer_require_submit", "false", "--search_reply", "plain"]
WORKLOADS = {
    "reading": ["--reading_memory", "evidence+question k=3", *GRAPH_ARGS],
    "episodes": ["--max_turns", "1", "--search_context", "0", "--rollout_concurrency", "32", *GRAPH_ARGS],
}


@contextmanager
def prefix_cache_of_new_engines(size: int) -> Iterator[list[Any]]:
    """Inside, every ``LocalChatModel.from_model`` engine uses ``size``; yields the list of chat models made."""
    from langgraph_memagent.agents.local_model import LocalChatModel

    made: list[Any] = []
    original = LocalChatModel.from_model.__func__

    def from_model(cls: type, model: Any, tokenizer: Any, **fields: Any) -> Any:
        made.append(original(cls, model, tokenizer, **{**fields, "prefix_cache_size": size}))
        return made[-1]

    with patch.object(LocalChatModel, "from_model", classmethod(from_model)):
        yield made


def summarize(runs: list[dict[str, Any]], rollouts: dict[str, int]) -> dict[str, Any]:
    """Per workload: mean seconds per mode, the speed-up, the share of prompt tokens reused, and greedy agreement.

    Greedy answers already differ between two runs without the cache (a batch's make-up changes
    float32 rounding), so the agreement with the cache is given beside that of two whole-prefill rounds.

    >>> run = lambda round, mode, seconds, answers: {"round": round, "workload": "w", "mode": mode, "seconds": seconds,
    ...     "answers": answers, "reused_tokens": 3 if mode == "prefix cache" else 0, "prefilled_tokens": 1}
    >>> runs = [run(0, "whole prefill", 4.0, ["a", "b"]), run(0, "prefix cache", 2.0, ["a", "c"]),
    ...         run(1, "whole prefill", 4.0, ["a", "b"]), run(1, "prefix cache", 2.0, ["a", "b"])]
    >>> summarize(runs, {"w": 2})["w"]
    {'rollouts': 2, 'seconds': {'whole prefill': 4.0, 'prefix cache': 2.0}, 'speedup': 2.0, 'reused_share': 0.75, 'same_answers_cache_vs_whole': '3 of 4', 'same_answers_whole_vs_whole': '2 of 2'}
    """
    summary = {}
    for workload, count in rollouts.items():
        by_mode = {mode: sorted((run for run in runs if run["workload"] == workload and run["mode"] == mode), key=lambda run: run["round"]) for mode in MODES}
        seconds = {mode: sum(run["seconds"] for run in mine) / len(mine) for mode, mine in by_mode.items()}
        cached, whole = by_mode["prefix cache"], by_mode["whole prefill"]

        def agreement(pairs: list[tuple[dict, dict]]) -> str | None:
            same = sum(a == b for first, second in pairs for a, b in zip(first["answers"], second["answers"]))
            return f"{same} of {sum(len(first['answers']) for first, _ in pairs)}" if pairs else None

        reused = sum(run["reused_tokens"] for run in cached)
        summary[workload] = {
            "rollouts": count,
            "seconds": {mode: round(value, 2) for mode, value in seconds.items()},
            "speedup": round(seconds["whole prefill"] / seconds["prefix cache"], 3),
            "reused_share": round(reused / (reused + sum(run["prefilled_tokens"] for run in cached)), 3),
            "same_answers_cache_vs_whole": agreement(list(zip(cached, whole))),
            "same_answers_whole_vs_whole": agreement(list(zip(whole, whole[1:]))),
        }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=4, help="reading questions, 8 rollouts each (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=24, help="held-out dev questions of the episodes (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per workload and mode, alternating (default: %(default)s)")
    args = parser.parse_args(argv)
    for name in ("groups", "questions", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    from peft import get_peft_model

    from langgraph_memagent.training.evaluation import evaluate_policy
    from langgraph_memagent.training.grpo_multiconv import load_policy, lora_config, parse_config

    from langgraph_memagent.training.held_out import held_out_conversations

    load = OtherLoad()
    configs = {name: parse_config(["--preset", "cpu-sumer", "--output_dir", tempfile.mkdtemp(prefix=f"{NAME}-"), *extra])
               for name, extra in WORKLOADS.items()}
    model, tokenizer = load_policy(configs["reading"])
    model = get_peft_model(model, lora_config(configs["reading"]))
    records = {"reading": held_out_conversations("dev", args.groups), "episodes": held_out_conversations("dev", args.questions)}
    rollouts = {"reading": 8, "episodes": 1}
    runs = []
    for round_index in range(args.rounds):
        for workload, config in configs.items():
            for mode, size in MODES.items():
                with prefix_cache_of_new_engines(size) as made:
                    evaluation = evaluate_policy(model, tokenizer, records[workload], config, temperature=0.0, rollouts_per_question=rollouts[workload])
                prefixes = made[-1].engine.prefixes
                runs.append({
                    "round": round_index, "workload": workload, "mode": mode, "seconds": round(evaluation.seconds, 2),
                    "prefilled_tokens": prefixes.prefilled_tokens if prefixes else None,
                    "reused_tokens": prefixes.reused_tokens if prefixes else 0,
                    "answers": evaluation.answers, "rewards": evaluation.rewards,
                })
                made[-1].engine.close()
                print(f"round {round_index} {workload} {mode}: {runs[-1]['seconds']} s, {runs[-1]['reused_tokens']} prompt tokens reused", flush=True)
    summary = summarize(runs, {workload: len(records[workload]) * rollouts[workload] for workload in WORKLOADS})
    for workload, parts in summary.items():
        print(f"{workload}: {parts['seconds']} -> {parts['speedup']}x, {100 * parts['reused_share']:.0f}% of prompt tokens reused, "
              f"same greedy answers with and without the cache {parts['same_answers_cache_vs_whole']}, "
              f"between two whole-prefill runs {parts['same_answers_whole_vs_whole']}")
    write_result(NAME, {"groups": args.groups, "questions": args.questions, "rounds": args.rounds, "summary": summary, "runs": runs,
                        "other_cpu_cores": load.cores()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
