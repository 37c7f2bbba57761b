"""How much of each adapter's gain survives rewording: two ``bench_sumer_episodes`` results on the same facts.

``--split dev`` and ``--split dev-varied`` ask about the same generated facts, with the same
evidence turns, in two wordings (``evals.conversations``: ``wording="varied"`` says each fact
in one of several phrasings, often inside a longer turn). For each adapter in both results it
gives, per measure (greedy answer F1, evidence recall of the searches), the gain over the
untrained policy in each wording and the difference, varied less plain, paired by question with
its standard error; and each as mean ± sd across the adapters (``evals.stats.across``).

    .venv/bin/python experiments/2026-11-28_sumer-varied-wording-48-step-reading/wording_effect.py benchmarks/results/bench_sumer_episodes_dev48_test2_adapters.json \\
        benchmarks/results/bench_sumer_episodes_dev-varied48_test2_adapters.json --json wording.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from langgraph_memagent.evals.stats import across
from langgraph_memagent.training.held_out import SPLITS

NAME = "wording_effect"
MEASURES = ("f1", "evidence_recall")


def _per_question(result: dict[str, Any], policy: str, measure: str) -> list[float | None]:
    """One greedy value per question (None where the rollout has no such measure)."""
    measures = result["policies"][policy]["greedy"]["measures"]
    return [row.get(measure) if isinstance(row.get(measure), (int, float)) else None for row in measures]


def _change(before: list[float], after: list[float]) -> dict[str, Any]:
    """``after`` less ``before`` in points, paired by question with its standard error (``paired_measure``)."""
    from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_measure

    def evaluation(values: list[float]) -> PolicyEvaluation:
        return PolicyEvaluation(0.0, 1, values, 0.0, [{"value": value} for value in values])

    measured = paired_measure(evaluation(before), evaluation(after), "value")
    return {"change": 100 * measured["change"], "standard_error": 100 * measured["standard_error"], "questions": measured["questions"]}


def load_result(path: Path) -> dict[str, Any]:
    """A ``bench_sumer_episodes`` result file, or one line saying why ``path`` is not one."""
    try:
        result = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not JSON: {error}") from None
    if not (isinstance(result, dict) and "untrained" in result.get("policies", {}) and "questions" in result and "settings" in result):
        raise ValueError(f"{path} is not a bench_sumer_episodes result (expected settings, questions and an untrained policy)")
    return result


def check_pair(plain: dict[str, Any], varied: dict[str, Any]) -> None:
    """Refuse, in one line, two results that do not ask about the same facts in the plain and the varied wording."""
    splits = [result.get("settings", {}).get("split") for result in (plain, varied)]
    if not all(split in SPLITS for split in splits):
        raise ValueError(f"both results must be bench_sumer_episodes runs on generated splits {list(SPLITS)}, got {splits}")
    wordings = [SPLITS[split].get("wording", "plain") for split in splits]
    if wordings != ["plain", "varied"] or SPLITS[splits[0]]["seed"] != SPLITS[splits[1]]["seed"]:
        raise ValueError(f"need a plain split and the varied split of the same seed (dev, dev-varied), got {splits}")
    counts = [len(result["questions"]) for result in (plain, varied)]
    if counts[0] != counts[1]:
        raise ValueError(f"both results must answer the same questions, got {counts[0]} and {counts[1]}")


def wording_effect(plain: dict[str, Any], varied: dict[str, Any]) -> dict[str, Any]:
    """Per adapter in both results and measure: its gain in each wording and their difference, in points.

    Questions missing a measure in any of the four evaluations are left out of that measure.
    """
    check_pair(plain, varied)
    adapters = [name for name in plain["policies"] if name != "untrained" and name in varied["policies"]]
    if not adapters:
        raise ValueError("the two results share no adapter")
    per_adapter: dict[str, Any] = {}
    for adapter in adapters:
        per_adapter[adapter] = {}
        for measure in MEASURES:
            columns = [_per_question(result, policy, measure) for result in (plain, varied) for policy in ("untrained", adapter)]
            rows = [row for row in zip(*columns) if None not in row]
            if not rows:
                continue
            plain_before, plain_after, varied_before, varied_after = (list(column) for column in zip(*rows))
            plain_gains = [after - before for before, after in zip(plain_before, plain_after)]
            varied_gains = [after - before for before, after in zip(varied_before, varied_after)]
            per_adapter[adapter][measure] = {
                "plain": _change(plain_before, plain_after),
                "varied": _change(varied_before, varied_after),
                "difference": _change(plain_gains, varied_gains),
            }
    across_adapters = {
        measure: {side: across([entry[measure][side]["change"] for entry in per_adapter.values() if measure in entry])
                  for side in ("plain", "varied", "difference")}
        for measure in MEASURES
    }
    return {"splits": [plain["settings"]["split"], varied["settings"]["split"]], "adapters": per_adapter, "across_adapters": across_adapters}


def markdown(effect: dict[str, Any]) -> str:
    """The report as a markdown table: one row per adapter and measure, then the mean ± sd across adapters."""
    def cell(entry: dict[str, Any]) -> str:
        return f"{entry['change']:+.1f} ± {entry['standard_error']:.1f}"

    lines = [f"| adapter | measure | gain, {effect['splits'][0]} | gain, {effect['splits'][1]} | varied less plain |", "|---|---|---:|---:|---:|"]
    for adapter, measures in effect["adapters"].items():
        lines += [f"| {adapter} | {measure} | {cell(e['plain'])} | {cell(e['varied'])} | {cell(e['difference'])} |" for measure, e in measures.items()]
    for measure, sides in effect["across_adapters"].items():
        def spread(summary: dict[str, Any]) -> str:
            return f"{summary['mean']:+.1f}" + ("" if summary["sd"] is None else f" ± {summary['sd']:.1f}")
        lines.append(f"| mean ± sd over {sides['plain']['runs']} | {measure} | {spread(sides['plain'])} | {spread(sides['varied'])} | {spread(sides['difference'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-28_sumer-varied-wording-48-step-reading/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("plain", type=Path, help="bench_sumer_episodes result on a plain split (e.g. --split dev)")
    parser.add_argument("varied", type=Path, help="bench_sumer_episodes result on its varied split (e.g. --split dev-varied)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON to this path")
    args = parser.parse_args(argv)
    try:
        effect = wording_effect(*(load_result(path) for path in (args.plain, args.varied)))
    except (OSError, ValueError) as error:
        parser.error(str(error))
    print(markdown(effect))
    if args.json:
        args.json.write_text(json.dumps(effect, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
