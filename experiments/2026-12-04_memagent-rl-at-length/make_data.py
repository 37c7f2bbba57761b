"""The training mix of this experiment as a `memagent train --train_file` JSONL: RULER tasks at short lengths.

Each record holds ``question``, ``document``, ``answers``, ``task`` and ``metric`` (all-of for NIAH and VT),
so the trainer's reward scores it as RULER does. NIAH tasks with word keys draw them from the ``train``
vocabulary (``evals.ruler.KEY_POOLS``): the test split's keys never appear in training.

    .venv/bin/python experiments/2026-12-04_memagent-rl-at-length/make_data.py --out runs/length-rl/train.jsonl \
        --per-task 64 --lengths 2000 4000 8000 --seed 1
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from langgraph_memagent.agents.atomic_files import write_atomic
from langgraph_memagent.agents.embedded import embedded_model_dir
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.evals.ruler import generate_task

TASKS = ("niah_single_1", "niah_multikey_2", "niah_multivalue", "niah_multiquery", "vt")
WORD_KEY_TASKS = {"niah_single_1", "niah_multikey_2", "niah_multivalue", "niah_multiquery"}


def task_samples(task: str, length: int, codec, count: int, seed: int, key_pool: str, **options) -> list:
    """``count`` RULER samples of ``task`` at ``length`` tokens; NIAH keys from ``key_pool`` (VT has none); ``options``: the
    task's own (``evals.ruler.generate_task``, e.g. VT's ``num_hops``)."""
    if task in WORD_KEY_TASKS:
        options["key_pool"] = key_pool
    return generate_task(task, length, codec=codec, num_samples=count, seed=seed, **options)


def records(per_task: int, lengths: list[int], seed: int, key_pool: str, tasks: Sequence[str] = TASKS) -> list[dict]:
    codec = resolve_tokenizer(str(embedded_model_dir()))
    rows = []
    count = -(-per_task // len(lengths))  # records of one task at one length: per_task spread over the lengths
    cells = [(task, length) for task in tasks for length in lengths]
    for task, length in tqdm(cells, desc="generating", unit="cell"):
        # A cell's seed is its place in the full TASKS x lengths grid, so a subset of tasks draws the same documents.
        cell_seed = seed * 1000 + TASKS.index(task) * len(lengths) + lengths.index(length)
        for sample in task_samples(task, length, codec, count, cell_seed, key_pool):
            rows.append({"question": sample.question, "document": sample.document, "answers": [str(a) for a in sample.answers],
                         "task": sample.task, "metric": sample.metric, "length": length})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write (atomically)")
    parser.add_argument("--per-task", type=int, default=64, help="records per task, spread evenly over --lengths")
    parser.add_argument("--lengths", type=int, nargs="+", default=[2000, 4000, 8000], help="document lengths in tokens")
    parser.add_argument("--seed", type=int, default=1, help="generation seed (the training seed)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS, help="RULER tasks to draw (default: all five)")
    parser.add_argument("--key-pool", default="train", choices=("train", "test"), help="NIAH key vocabulary")
    args = parser.parse_args()
    rows = records(args.per_task, args.lengths, args.seed, args.key_pool, args.tasks)
    write_atomic(args.out, (json.dumps(row) + "\n" for row in rows))
    print(f"{len(rows)} records -> {args.out}")


if __name__ == "__main__":
    main()
