"""Planning probe (dev split only): how often the untrained embedded model earns the reward on each task.

GRPO learns only from groups whose rollouts differ in reward; a task at a length where no sampled
rollout ever earns any is no training signal. This samples ``--draws`` MemAgent rollouts per
question at the training temperature on the dev split (``training.held_out.SPLITS["dev"]``: seed
10,000, training keys) and writes, per task and length, the mean reward (RULER's all-of fraction)
and the share of questions whose draws differ (groups with signal). With ``--draws 1 --temperature 0``
it is the greedy dev accuracy, of the untrained model or, with ``--adapter``, of a trained LoRA
checkpoint merged into it (the GPU pilot, gpu_pilot.sh).

    .venv/bin/python experiments/2026-12-04_memagent-rl-at-length/probe_reward.py --lengths 2000 \
        --questions 4 --draws 4 --out experiments/2026-12-04_memagent-rl-at-length/results/probe_reward_2k.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from make_data import TASKS, task_samples  # this folder's training-mix generator: the same tasks and keys
from tqdm import tqdm

from langgraph_memagent import build_memagent_graph
from langgraph_memagent.agents.atomic_files import write_atomic
from langgraph_memagent.agents.embedded import embedded_model_dir
from langgraph_memagent.agents.local_model import LocalChatModel
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.evals.scoring import score
from langgraph_memagent.training.held_out import SPLITS


def chat_model(args: argparse.Namespace, model_dir: str) -> LocalChatModel:
    """The embedded model as a batching chat model, with ``args.adapter`` merged in when given (the package's ``adapter=``)."""
    return LocalChatModel(model_path=model_dir, temperature=args.temperature, device=args.device, max_batch_size=args.max_batch,
                          adapter=args.adapter and str(args.adapter))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2000], help="document lengths in tokens")
    parser.add_argument("--questions", type=int, default=4, help="dev questions per task and length")
    parser.add_argument("--draws", type=int, default=4, help="sampled rollouts per question (the group size)")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (cpu-smoke's)")
    parser.add_argument("--adapter", type=Path, help="a LoRA checkpoint to merge into the model (default: the untrained model)")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    parser.add_argument("--max-batch", type=int, default=8, help="most calls decoded together, and graph runs in flight")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS, help="tasks to probe (default: the mix's five)")
    parser.add_argument("--task-options", type=json.loads, default={}, help='task settings, e.g. \'{"vt": {"num_hops": 1}}\'')
    parser.add_argument("--free-answer", action="store_true",
                        help="decode the final answer freely, as training rollouts do (default: under the \\boxed{} grammar, the package default)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (atomically)")
    args = parser.parse_args()

    model_dir = str(embedded_model_dir())
    codec = resolve_tokenizer(model_dir)
    model = chat_model(args, model_dir)
    graph = build_memagent_graph(model, chunk_tokens=1000, memory_tokens=128, answer_tokens=64,
                                 constrained_answer=False if args.free_answer else None)
    dev = SPLITS["dev"]
    # Every cell's rollouts in one batch, so a GPU decodes them together.
    cells = [(task, length, task_samples(task, length, codec, args.questions, dev["seed"], dev["key_pool"], **args.task_options.get(task, {})))
             for task in args.tasks for length in args.lengths]
    drawn = [(cell, sample) for cell, (_, _, samples) in enumerate(cells) for sample in samples for _ in range(args.draws)]
    started = time.time()
    results = graph.batch([{"question": s.question, "document": s.document} for _, s in drawn], {"max_concurrency": args.max_batch})
    seconds = round(time.time() - started, 1)
    report = []
    for index, (task, length, _) in enumerate(cells):
        mine = [(s, r) for (cell, s), r in zip(drawn, results) if cell == index]
        rewards = [score(r["response"], s.answers, s.scoring_metric) for s, r in mine]
        groups = [rewards[i:i + args.draws] for i in range(0, len(rewards), args.draws)]
        report.append({"task": task, "length": length, "metric": mine[0][0].metric, "mean_reward": sum(rewards) / len(rewards),
                       "groups_with_signal": sum(len(set(g)) > 1 for g in groups), "groups": len(groups), "rewards": groups,
                       "answers": [r["response"] for _, r in mine], "golds": [list(map(str, s.answers)) for s, _ in mine]})
        tqdm.write(json.dumps({k: v for k, v in report[-1].items() if k not in ("rewards", "answers", "golds")}))
    payload = {"split": "dev", **vars(args), "out": str(args.out), "adapter": args.adapter and str(args.adapter), "chunk_tokens": 1000, "memory_tokens": 128,
               "answer_tokens": 64, "seconds": seconds, "cells": report}
    write_atomic(args.out, json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
