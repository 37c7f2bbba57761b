"""The test split of this experiment (used once): one JSONL file per length, the bar's four NIAH tasks, test keys.

Every record is a full ``Sample`` (``question``, ``document``, ``answers``, ``task``, ``metric`` and ``meta``, which
holds the needles' depths for the shortcut checks), so ``memagent compare --data`` reads it and names each length by
its file (``4K.jsonl`` -> ``4K``). A task's seed is the split's seed plus its place in the task list, the same at every
length: question i of a task asks for the same key and needle at each length, only the haystack grows. NIAH keys come
from the ``test`` vocabulary, which no training or dev record uses (``evals.ruler.KEY_POOLS``).

    .venv/bin/python experiments/2026-12-04_memagent-rl-at-length/make_test.py --out experiments/2026-12-04_memagent-rl-at-length/runs/test
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from make_data import task_samples  # this folder's generator: the training mix's tasks and key vocabularies
from tqdm import tqdm

from langgraph_memagent.agents.atomic_files import write_atomic
from langgraph_memagent.agents.embedded import embedded_model_dir
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.evals.lengths import format_tokens

SEED = 70_000  # the test-length split (README, "Splits")
TASKS = ("niah_single_1", "niah_multikey_2", "niah_multivalue", "niah_multiquery")
# Questions per task at each length (README, "The test evaluation"): fewer where a document costs more.
SAMPLES = {4096: 16, 16384: 8, 65536: 4, 262144: 2, 1048576: 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder to write one <length>.jsonl into per length")
    args = parser.parse_args()
    codec = resolve_tokenizer(str(embedded_model_dir()))
    args.out.mkdir(parents=True, exist_ok=True)
    for length, count in tqdm(SAMPLES.items(), desc="lengths", unit="length"):
        path = args.out / f"{format_tokens(length)}.jsonl"
        if path.is_file():
            continue  # written whole or not at all (write_atomic): a rerun skips it
        samples = [sample for index, task in enumerate(TASKS) for sample in task_samples(task, length, codec, count, SEED + index, "test")]
        write_atomic(path, (json.dumps(sample.to_dict()) + "\n" for sample in samples))
        print(f"{len(samples)} records -> {path}")


if __name__ == "__main__":
    main()
