"""The dev table of one model against another (the untrained model, or a curriculum's earlier stage): two probe_reward.py files, greedy, same questions.

Per task and length: both accuracies and their paired difference with a 95% interval (t over the
questions' paired differences; the same dev questions were asked of both models). Only the cells
both files hold are compared.

    ../../.venv/bin/python dev_table.py results/dev_untrained_300_1k.json results/dev_stage1_seed1_300_1k.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from langgraph_memagent.evals.stats import across


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="probe_reward.py output of the model compared against (--draws 1)")
    parser.add_argument("after", type=Path, help="probe_reward.py output of the checkpoint, same questions")
    args = parser.parse_args()
    before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
    cells = {(cell["task"], cell["length"]): cell for cell in before["cells"]}
    print(f"| task | length | {args.before.stem} | {args.after.stem} | difference (95% interval) |\n|---|---:|---:|---:|---:|")
    for cell in after["cells"]:
        base = cells.get((cell["task"], cell["length"]))
        if base is None:
            continue
        if base["golds"] != cell["golds"]:
            raise SystemExit(f"{cell['task']} at {cell['length']}: the two files asked different questions")
        old, new = (sum(c["rewards"], []) for c in (base, cell))
        change = across([b - a for a, b in zip(old, new)])
        low, high = change["ci95"]
        print(f"| {cell['task']} | {cell['length']} | {100 * statistics.fmean(old):.1f} | {100 * statistics.fmean(new):.1f} "
              f"| {100 * change['mean']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] |")


if __name__ == "__main__":
    main()
