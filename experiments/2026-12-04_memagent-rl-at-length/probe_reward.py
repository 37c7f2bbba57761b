"""Planning probe (dev split only): how often the untrained embedded model earns the reward on each task.

GRPO learns only from groups whose rollouts differ in reward; a task at a length where no sampled
rollout ever earns any is no training signal. This samples ``--draws`` MemAgent rollouts per
question at the training temperature on the dev split (``training.held_out.SPLITS["dev"]``: seed
10,000, training keys) and writes, per task and length, the mean reward (RULER's all-of fraction)
and the share of questions whose draws differ (groups with signal).

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2000], help="document lengths in tokens")
    parser.add_argument("--questions", type=int, default=4, help="dev questions per task and length")
    parser.add_argument("--draws", type=int, default=4, help="sampled rollouts per question (the group size)")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (cpu-smoke's)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (atomically)")
    args = parser.parse_args()

    model_dir = str(embedded_model_dir())
    codec = resolve_tokenizer(model_dir)
    model = LocalChatModel(model_path=model_dir, temperature=args.temperature)
    graph = build_memagent_graph(model, chunk_tokens=1000, memory_tokens=128, answer_tokens=64)
    dev = SPLITS["dev"]
    cells = []
    for task in TASKS:
        for length in args.lengths:
            samples = task_samples(task, length, codec, args.questions, dev["seed"], dev["key_pool"])
            started = time.time()
            drawn = [sample for sample in samples for _ in range(args.draws)]
            results = graph.batch([{"question": s.question, "document": s.document} for s in drawn], {"max_concurrency": 8})
            rewards = [score(r["response"], s.answers, s.scoring_metric) for s, r in zip(drawn, results)]
            groups = [rewards[i:i + args.draws] for i in range(0, len(rewards), args.draws)]
            cells.append({"task": task, "length": length, "mean_reward": sum(rewards) / len(rewards),
                          "groups_with_signal": sum(len(set(g)) > 1 for g in groups), "groups": len(groups),
                          "rewards": groups, "seconds": round(time.time() - started, 1)})
            tqdm.write(json.dumps({k: v for k, v in cells[-1].items() if k != "rewards"}))
    payload = {"split": "dev", **vars(args), "out": str(args.out), "chunk_tokens": 1000, "memory_tokens": 128,
               "answer_tokens": 64, "cells": cells}
    write_atomic(args.out, json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
