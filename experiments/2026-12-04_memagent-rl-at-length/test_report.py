"""The test split's table, figure and bar verdicts (issue 85), from test_eval.sh's ``memagent compare`` runs.

Reads ``RUNS/untrained`` (MemAgent, RAG and full context on the untrained model) and ``RUNS/trained_seed{1,2,3}``
(MemAgent with each seed's adapter), and the test files for the needles' depths. A record's text is what compare
scored (the extracted answer, else the reply). Accuracies are whole needles: the share of golds the text holds with no
digit touching them, so ``19633647`` does not earn the needle ``9633647`` (RULER's string match, which would pay it,
is reported beside). The trained model's score on a question is its seeds' mean; its difference with the untrained
model is taken question by question, with a Student-t 95% interval over the questions. Writes ``test_length.md`` and
``test_length.json`` to ``--out`` and the figure to ``--figure``.

    .venv/bin/python experiments/2026-12-04_memagent-rl-at-length/test_report.py --runs experiments/2026-12-04_memagent-rl-at-length/runs/test_out \
        --data experiments/2026-12-04_memagent-rl-at-length/runs/test --out experiments/2026-12-04_memagent-rl-at-length/results \
        --figure experiments/2026-12-04_memagent-rl-at-length/figures/test_accuracy_vs_length.png
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from make_test import SAMPLES, TASKS
from shortcuts import NEEDLE, NUMBER, THIRDS, inside_longer, third, whole_number

from langgraph_memagent.agents.atomic_files import write_atomic
from langgraph_memagent.evals.lengths import format_tokens
from langgraph_memagent.evals.records import Sample
from langgraph_memagent.evals.results import read_results
from langgraph_memagent.evals.stats import across

SAMPLES_BY_LABEL = {format_tokens(length): length for length in SAMPLES}
LENGTHS = tuple(SAMPLES_BY_LABEL)
MULTI = TASKS[1:]  # the bar's multi-key tasks
SEEDS = (1, 2, 3)
JUDGED = ("16K", "64K", "256K")  # the bar's lengths; the 1M cells (one question a task) are shown, not judged
OTHERS = {"MemAgent, untrained": ("untrained", "memagent"), "RAG": ("untrained", "rag"), "full context": ("untrained", "full_context")}


def scored_text(record: dict) -> str:
    """The text compare scored: the extracted answer, else the raw reply.

    >>> scored_text({"scored": "answer", "answer": "42", "response": "x"}), scored_text({"scored": "response", "answer": None, "response": "x"})
    ('42', 'x')
    """
    return (record["answer"] if record.get("scored") == "answer" else record.get("response")) or ""


def whole(record: dict) -> float:
    """The share of a record's golds its scored text holds as whole numbers.

    >>> whole({"scored": "response", "response": "19633647 and 1234567", "answers": ["9633647", "1234567"]})
    0.5
    """
    text = scored_text(record)
    return statistics.fmean(whole_number(str(gold), text) for gold in record["answers"])


def runs(folder: Path) -> dict[str, dict[tuple, dict]]:
    """Every line's records, keyed (task, length, index): the untrained graphs and each trained seed present; errors
    included, as wrong answers."""
    lines: dict[str, dict[tuple, dict]] = {}
    for name, (run, graph) in {**OTHERS, **{f"seed {s}": (f"trained_seed{s}", "memagent") for s in SEEDS}}.items():
        # A run that ended in an error stays in, scored 0 (its text is empty), as compare counts it.
        records = [r for r in read_results(folder / run / "results.jsonl") if r["graph"] == graph]
        if records:
            lines[name] = {(r["task"], r["length"], r["index"]): r for r in records}
    return lines


def cell(lines: dict, task: str, length: str, score=whole) -> dict | None:
    """One task and length: each line's accuracy, the trained seeds' mean and sd, and the paired difference."""
    keys = sorted(key for key in lines.get("MemAgent, untrained", {}) if key[:2] == (task, length))
    seeds = [name for name in lines if name.startswith("seed ")]
    keys = [key for key in keys if all(key in lines[name] for name in seeds)]
    if not keys:
        return None
    row = {name: 100 * statistics.fmean(score(lines[name][k]) for k in keys) for name in lines if all(k in lines[name] for k in keys)}
    trained = [statistics.fmean(score(lines[name][k]) for name in seeds) for k in keys] if seeds else []
    if trained:
        row["trained"] = 100 * statistics.fmean(trained)
        row["seeds sd"] = across([row[name] for name in seeds])["sd"]
        row["difference"] = [100 * (t - score(lines["MemAgent, untrained"][k])) for t, k in zip(trained, keys)]
    return {"task": task, "length": length, "questions": len(keys), "seeds": len(seeds), **row}


def verdicts(cells: dict) -> dict:
    """The bar (README): multi-key tasks pooled at each judged length, +30 with the interval above 0; single-needle NIAH
    within 10 points of its own 4K accuracy up to 256K. None where a cell or a seed is missing."""
    out = {}
    for length in JUDGED:
        pooled = [d for task in MULTI if (c := cells.get((task, length))) and c["seeds"] == len(SEEDS) for d in c["difference"]]
        change = across(pooled) if len(pooled) > 1 and all(cells.get((t, length)) for t in MULTI) else None
        out[f"multi-key {length}"] = change and {**change, "met": change["mean"] >= 30 and change["ci95"][0] > 0}
    start = cells.get((TASKS[0], "4K"))
    for length in JUDGED:
        here = cells.get((TASKS[0], length))
        complete = start and here and start["seeds"] == here["seeds"] == len(SEEDS)
        out[f"single {length}"] = complete and {"4K": start["trained"], length: here["trained"], "met": here["trained"] >= start["trained"] - 10}
    return out


def shortcuts(lines: dict, samples: dict) -> list[str]:
    """Recall by needle depth, answers naming the document's first needle, credits inside a longer number; per line."""
    rows = ["| line | recall by depth (first / middle / last third) | first needle named (right) of answers with several needles | credits inside a longer number |",
            "|---|---|---|---:|"]
    for name, records in lines.items():
        found = {part: [0, 0] for part in THIRDS}
        first = right = several = longer = 0
        for key, record in records.items():
            sample, text = samples[key], scored_text(record)
            for gold, depth in zip(record["answers"], sample.meta["depths"]):
                found[third(depth)][0] += whole_number(str(gold), text)
                found[third(depth)][1] += 1
                longer += inside_longer(str(gold), text)
            needles, numbers = NEEDLE.findall(sample.document), NUMBER.findall(text)
            if len(needles) > 1:
                several += 1
                if numbers and numbers[0] == needles[0]:
                    first += 1
                    right += whole(record) > 0
        recall = " / ".join(f"{hit}/{total}" for hit, total in found.values())
        rows.append(f"| {name} | {recall} | {first} ({right}) of {several} | {longer} |")
    return rows


def figure(cells: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes_grid = plt.subplots(2, 2, figsize=(10, 7), sharex=True, sharey=True)[1].ravel()
    for axes, task in zip(axes_grid, TASKS):
        for name in (*OTHERS, "trained"):
            points = [(SAMPLES_BY_LABEL[length], c[name], c.get("seeds sd") if name == "trained" else None)
                      for length in LENGTHS if (c := cells.get((task, length))) and c.get(name) is not None]
            if points:
                x, y, err = zip(*points)
                label = "MemAgent, trained (mean of seeds ± sd)" if name == "trained" else name
                axes.errorbar(x, y, yerr=[e or 0 for e in err], marker="o", capsize=3, label=label)
        axes.set(title=task, xscale="log", ylim=(-5, 105))
        axes.set_xticks(list(SAMPLES_BY_LABEL.values()), LENGTHS)
        axes.minorticks_off()
    axes_grid[0].legend(fontsize=8)
    for axes in axes_grid[2:]:
        axes.set_xlabel("document length (tokens)")
    for axes in axes_grid[::2]:
        axes.set_ylabel("accuracy, whole needles (%)")
    plt.suptitle("Test split: accuracy against length (SmolLM2-135M, 1000-token chunks, 128-token memory)")
    plt.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    plt.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, required=True, help="test_eval.sh's compare folder (untrained/, trained_seed*/)")
    parser.add_argument("--data", type=Path, required=True, help="make_test.py's folder of test files")
    parser.add_argument("--out", type=Path, required=True, help="where test_length.md and test_length.json go")
    parser.add_argument("--figure", type=Path, required=True, help="the PNG to draw")
    args = parser.parse_args()
    lines = runs(args.runs)
    if "MemAgent, untrained" not in lines:
        raise SystemExit(f"no untrained MemAgent results in {args.runs / 'untrained'}: run test_eval.sh first")
    samples = {}
    for length in LENGTHS:
        path = args.data / f"{length}.jsonl"
        records = [Sample.from_dict(json.loads(line)) for line in path.read_text().splitlines()] if path.is_file() else []
        for task in TASKS:
            samples.update({(task, length, i): s for i, s in enumerate(r for r in records if r.task == task)})
    cells = {(t, n): c for t in TASKS for n in LENGTHS if (c := cell(lines, t, n))}
    lenient = {(t, n): c for t in TASKS for n in LENGTHS if (c := cell(lines, t, n, score=lambda r: r["score"]))}
    names = [*OTHERS, *(name for name in lines if name.startswith("seed ")), "trained"]
    table = [f"| task | length | questions | {' | '.join(names)} | trained - untrained (95% interval) | RULER's match: untrained / trained |",
             f"|---|---|---:|{'---:|' * len(names)}---:|---|"]
    for (task, length), c in cells.items():
        values = " | ".join("-" if c.get(name) is None else f"{c[name]:.1f}" for name in names)
        change = c.get("difference") and across(c["difference"])
        interval = "-" if not change or change["ci95"] is None else f"{change['mean']:+.1f} [{change['ci95'][0]:+.1f}, {change['ci95'][1]:+.1f}]"
        match = lenient[(task, length)]
        trained_match = "-" if match.get("trained") is None else f"{match['trained']:.1f}"
        table.append(f"| {task} | {length} | {c['questions']} | {values} | {interval} | {match['MemAgent, untrained']:.1f} / {trained_match} |")
    bar = verdicts(cells)
    text = "\n".join([*table, "", "Bar:", *(f"- {name}: {value or 'not measured (a cell or a seed is missing)'}" for name, value in bar.items()), "", *shortcuts(lines, samples)])
    write_atomic(args.out / "test_length.md", text + "\n")
    write_atomic(args.out / "test_length.json", json.dumps({"cells": [{**c} for c in cells.values()], "bar": bar}, indent=1))
    figure(cells, args.figure)
    print(text)


if __name__ == "__main__":
    main()
