r"""The dev table of one model against another (the untrained model, or a curriculum's earlier stage): two probe_reward.py files, greedy, same questions.

Per task and length: both accuracies and their paired difference with a 95% interval (t over the
questions' paired differences; the same dev questions were asked of both models). Only the cells
both files hold are compared; the others are named below the table. With ``--strict`` both files'
answers are re-scored by MemAgent's training verifier instead of the files' RULER string match: the
last ``\boxed{}`` must equal the gold, or hold each of several golds (Eq. 7).

    ../../.venv/bin/python dev_table.py results/dev_untrained_300_1k.json results/dev_stage1_seed1_300_1k.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from langgraph_memagent.evals.records import answer_mode
from langgraph_memagent.evals.scoring import strict_score
from langgraph_memagent.evals.stats import across


def rewards(cell: dict, strict: bool) -> list[float]:
    r"""A cell's per-question rewards: the file's (RULER's match), or the strict verifier's on its answers.

    A cell's records share its task's answer mode (``metric``); files written before probe_reward.py
    recorded it hold only tasks that RULER's generators make all-of, so their cells are read as ``"all"``.
    One gold is scored by equality either way (:func:`strict_score`).

    >>> cell = {"task": "niah_multikey_2", "answers": [r"\boxed{19633647}", r"\boxed{1, 2}"], "golds": [["9633647"], ["2", "3"]], "rewards": [[1.0], [0.5]]}
    >>> rewards(cell, False), rewards(cell, True)
    ([1.0, 0.5], [0.0, 0.5])
    """
    if not strict:
        return sum(cell["rewards"], [])
    all_of = answer_mode(cell.get("metric", "all"), f"{cell['task']}'s metric") == "all"
    return [strict_score(answer, golds, all_of=all_of) for answer, golds in zip(cell["answers"], cell["golds"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="probe_reward.py output of the model compared against (--draws 1)")
    parser.add_argument("after", type=Path, help="probe_reward.py output of the checkpoint, same questions")
    parser.add_argument("--strict", action="store_true", help="score both files' answers with the training verifier (strict_boxed)")
    args = parser.parse_args()
    before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
    cells = {(cell["task"], cell["length"]): cell for cell in before["cells"]}
    print(f"| task | length | {args.before.stem} | {args.after.stem} | difference (95% interval) |\n|---|---:|---:|---:|---:|")
    skipped = []
    for cell in after["cells"]:
        base = cells.get((cell["task"], cell["length"]))
        if base is None:
            skipped.append(f"{cell['task']} at {cell['length']}")
            continue
        if base["golds"] != cell["golds"]:
            raise SystemExit(f"{cell['task']} at {cell['length']}: the two files asked different questions")
        old, new = (rewards(c, args.strict) for c in (base, cell))
        change = across([b - a for a, b in zip(old, new)])
        low, high = change["ci95"]
        print(f"| {cell['task']} | {cell['length']} | {100 * statistics.fmean(old):.1f} | {100 * statistics.fmean(new):.1f} "
              f"| {100 * change['mean']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] |")
    if skipped:
        print(f"not in {args.before.name}: {', '.join(skipped)}")


if __name__ == "__main__":
    main()
