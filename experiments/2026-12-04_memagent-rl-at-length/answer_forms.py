"""The answers' forms in probe_reward.py files: repetition loops, all-of partial credit, single-needle misses.

A loop is an answer repeating some four-word phrase three times or more. For multi-value and
multi-query NIAH (all-of: the reward is the fraction of golds in the answer) it counts answers
earning exactly 0.25 (one value of four) and full credit; for single-needle NIAH it lists the misses.

    ../../.venv/bin/python answer_forms.py results/dev_untrained_300_1k.json results/dev_stage1bf16_seed1_300_1k.json
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path


def loops(answer: str, span: int = 4, repeats: int = 3) -> bool:
    """Whether ``answer`` repeats some ``span``-word phrase ``repeats`` times or more.

    >>> loops("the number for the number for the number for the number"), loops("one two three")
    (True, False)
    """
    words = answer.split()
    counts = collections.Counter(tuple(words[i:i + span]) for i in range(len(words) - span + 1))
    return bool(counts) and counts.most_common(1)[0][1] >= repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, nargs="+", help="probe_reward.py outputs (--draws 1)")
    for path in parser.parse_args().files:
        cells = json.loads(path.read_text())["cells"]
        replies = [(cell, answer, rewards[0]) for cell in cells for answer, rewards in zip(cell["answers"], cell["rewards"])]
        all_of = [reward for cell, _, reward in replies if cell["task"] in ("niah_multivalue", "niah_multiquery")]
        print(f"{path}: loops {sum(loops(answer) for _, answer, _ in replies)} of {len(replies)}; all-of answers "
              f"{len(all_of)}, at 0.25: {all_of.count(0.25)}, full: {all_of.count(1.0)}")
        for cell, answer, reward in replies:
            if cell["task"] == "niah_single_1" and reward < 1:
                print(f"  single-needle miss at {cell['length']}{' (loop)' if loops(answer) else ''}: {answer[:70]!r}")


if __name__ == "__main__":
    main()
