"""Rollout decode speed in a trainer's process: the engine served by its worker thread, or by the caller.

A trainer's main thread runs loss passes, which give it an OpenMP team. The engine's worker
thread has a team of its own, and two teams on 2 cores put the OpenMP runtime in its slow,
non-spinning mode, which costs most in the many small operations of a decode step.
``BatchedGenerator.serve_while`` decodes on the calling thread instead (the trainer and the
held-out evaluation use it). Each mode runs in its own interpreter, as a trainer's process
would: load the ``cpu-sumer`` policy with its LoRA adapter, one loss pass on the main thread,
then the greedy SUMER evaluation of ``--questions`` generated held-out questions
``--rounds`` times. Reported per mode: wall time, decode steps, tokens and decode ms a token.
The modes alternate round by round across the two interpreters.

``.venv/bin/python experiments/2026-11-26_sumer-runs-7-11/bench_rollout_serving.py`` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from langgraph_memagent.benchmarks._common import OtherLoad, write_result

NAME = "bench_rollout_serving"
MODES = ("worker", "caller")


def measure(mode: str, questions: int) -> dict:
    """One greedy SUMER evaluation after a main-thread loss pass, with the engine served by ``mode``."""
    import torch
    from peft import get_peft_model

    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.training import evaluation, rollouts
    from langgraph_memagent.training.data import conversation_records
    from langgraph_memagent.training.grpo_multiconv import load_policy, lora_config, parse_config

    config = parse_config(["--preset", "cpu-sumer", "--output_dir", "/tmp/bench_rollout_serving"])
    model, tokenizer = load_policy(config)
    model = get_peft_model(model, lora_config(config))
    ids = torch.tensor([list(range(1000, 2500))])  # a 1,500-token row: the loss pass's tensor work
    model(input_ids=ids, labels=ids).loss.backward()
    model.zero_grad()
    steps: list[tuple[int, float]] = []
    decode_step = BatchedGenerator._decode_step

    def timed(self, rows, batch):
        started = time.perf_counter()
        decode_step(self, rows, batch)
        steps.append((len(rows), time.perf_counter() - started))

    BatchedGenerator._decode_step = timed
    if mode == "worker":  # the engine's own worker thread serves, as before serve_while
        served = rollouts.run_rollouts
        evaluation.run_rollouts = lambda *args, served_by=None, **kwargs: served(*args, **kwargs)
    records = conversation_records(questions, seed=10000, entities="test")
    result = evaluation.evaluate_policy(model, tokenizer, records, config, temperature=0.0)
    tokens = sum(rows for rows, _ in steps)
    return {
        "mode": mode,
        "seconds": round(result.seconds, 2),
        "decode_steps": len(steps),
        "decode_tokens": tokens,
        "decode_ms_per_token": round(1000 * sum(seconds for _, seconds in steps) / tokens, 2),
        "rewards": result.rewards,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-26_sumer-runs-7-11/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=4, help="held-out questions per evaluation (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="evaluations per mode, alternating (default: %(default)s)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one measurement, in a child interpreter
    args = parser.parse_args(argv)
    if args.mode:
        print(json.dumps(measure(args.mode, args.questions)))
        return 0
    load, runs = OtherLoad(), []
    for round_index in range(args.rounds):
        for mode in MODES:
            child = [sys.executable, __file__, "--mode", mode, "--questions", str(args.questions)]
            done = subprocess.run(child, stdout=subprocess.PIPE, text=True, check=True)
            runs.append({"round": round_index, **json.loads(done.stdout.strip().splitlines()[-1])})
            print(f"round {round_index} {mode}: {runs[-1]['seconds']} s, {runs[-1]['decode_ms_per_token']} ms a decoded token", flush=True)
    per_mode = {
        mode: {key: round(sum(run[key] for run in runs if run["mode"] == mode) / args.rounds, 2) for key in ("seconds", "decode_ms_per_token")}
        for mode in MODES
    }
    write_result(NAME, {"questions": args.questions, "rounds": args.rounds, "runs": runs, "mean": per_mode, "other_cpu_cores": load.cores()})
    ratio = per_mode["worker"]["decode_ms_per_token"] / per_mode["caller"]["decode_ms_per_token"]
    print(f"{NAME}: decode {per_mode['caller']['decode_ms_per_token']} ms a token served by the caller vs "
          f"{per_mode['worker']['decode_ms_per_token']} by the worker thread ({ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
