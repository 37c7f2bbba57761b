"""Tool-use learning results across seeds, by question category and position, with shortcut baselines.

Reads ``bench_learning`` results files of a tool graph on generated conversations (one or
more runs each: one file per seed, or one file with ``--seeds``) and reports, for one
decoding (greedy by default), each run's paired change of each measure on question groups:

- ``all`` questions;
- each LoCoMo category of the generator (``multi-hop``, ``temporal``, ``open-domain``,
  ``single-hop``). Its open-domain questions are all answered "Yes" or "No", so
  ``without yes/no`` leaves them out: a constant answer cannot score there;
- ``first half`` and ``second half`` of the questions: early recipes were tuned while
  looking at the first questions of the dev split, so a gain only there is suspect.

Across runs each change is given as mean ± sd (sample sd), the standard error of the mean
and its 95% interval (Student's t), beside every run's paired standard error. The report
also scores constant answers ("yes", "no") on the split: the F1 a policy could reach by
never reading; and it checks each run's trained answers for shortcuts (``answer_shortcuts``):
how often the yes/no questions get the same answer, temporal answers that are a year alone
(token F1 gives them half credit without any day or month), and how many scoring answers
had found their evidence line; and the F1 change no shortcut explains
(``f1_without_shortcuts``: the questions that are not yes/no, a year-only answer scored 0).
The questions are regenerated from each run's settings (split seed, question count), so
nothing but the results files is needed.

It also reads the episode benchmarks' files (``bench_sumer_episodes``, ``bench_agemem_episodes``):
each file is one run, an adapter compared with the untrained policy (``--adapter``: which of the
file's adapters, the last by default; ``--baseline``: another of its adapters to compare against;
either by position or by a part of its name that names one adapter of every file).
Their answers are scored by F1 (AgeMem's reward adds memory terms), and an answer "found its
evidence" when its search or retrieval returned an evidence turn.

Example (the twelfth SUMER run's five seeds on test)::

    python -m benchmarks.learning_report benchmarks/results/bench_learning_sumer_test_run12_plainread*.json

AgeMem's answering chain (run 56's recipe) over three seeds on test3, then its reading stage alone::

    python -m benchmarks.learning_report benchmarks/results/bench_agemem_episodes_test3_reader5[678].json
    python -m benchmarks.learning_report benchmarks/results/bench_agemem_episodes_test3_reader5[678].json --adapter sumer

"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from langgraph_memagent.evals.stats import across
from langgraph_memagent.training.held_out import GROUP_MEASURES, SPLITS, by_question_group, constant_answer_f1, held_out_conversations, is_yes_no

NAME = "learning_report"


def held_out_questions(settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out questions a run answered, regenerated from its settings."""
    from langgraph_memagent.evals.conversations import CONVERSATIONS_TASK
    if settings.get("task") != CONVERSATIONS_TASK:
        raise ValueError(f"the report reads runs on generated conversations (task {CONVERSATIONS_TASK!r}), got task {settings.get('task')!r}")
    return held_out_conversations(settings["split"], settings["eval_questions"])


def run_changes(run: dict[str, Any], decoding: str) -> dict[str, dict[str, dict[str, float]]]:
    """Per question group and measure: the run's paired change in points, its standard error and question count."""
    from langgraph_memagent.training.evaluation import PolicyEvaluation

    if decoding not in run["after"]:
        raise ValueError(f"the run has no {decoding!r} evaluation; it has {sorted(run['after'])}")
    before, after = (PolicyEvaluation.from_dict(run[side][decoding]) for side in ("before", "after"))
    return by_question_group(before, after, held_out_questions(run["settings"]), GROUP_MEASURES)


def is_year_alone(answer: str | None) -> bool:
    """Whether ``answer`` is a year and nothing else: token F1 half-credits it against a full date.

    >>> is_year_alone("2022."), is_year_alone("16 August, 2022")
    (True, False)
    """
    return re.fullmatch(r"\s*(19|20)\d\d\.?\s*", answer or "") is not None


def f1_without_shortcuts(records: list[dict[str, Any]], before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The greedy F1 change no shortcut explains, in points, paired by question, with its standard error.

    The yes/no questions are left out (a constant answer scores there) and an answer that is
    a year alone scores 0 on both sides. ``before`` and ``after`` are evaluations of ``records``
    with one rollout per question.

    >>> records = [{"answers": ["No"]}, {"answers": ["16 August, 2022"]}, {"answers": ["piano"]}, {"answers": ["Oslo"]}]
    >>> before = {"answers": ["yes", None, "drums", "Oslo"], "measures": [{"f1": 0.0}, {"f1": 0.0}, {"f1": 0.0}, {"f1": 1.0}]}
    >>> after = {"answers": ["no", "2022", "piano", "Oslo"], "measures": [{"f1": 1.0}, {"f1": 0.5}, {"f1": 1.0}, {"f1": 1.0}]}
    >>> {name: round(value, 1) for name, value in f1_without_shortcuts(records, before, after).items()}
    {'change': 33.3, 'standard_error': 33.3, 'questions': 3}
    """
    from langgraph_memagent.training.evaluation import PolicyEvaluation

    def without_year_alone(evaluation: dict[str, Any]) -> PolicyEvaluation:
        measures = [{"f1": 0.0 if is_year_alone(answer) else measure["f1"]} for answer, measure in zip(evaluation["answers"], evaluation["measures"])]
        return PolicyEvaluation(0.0, 1, [m["f1"] for m in measures], 0.0, measures)

    return by_question_group(without_year_alone(before), without_year_alone(after), records, ("f1",))["without yes/no"]["f1"]


def answer_shortcuts(records: list[dict[str, Any]], evaluation: dict[str, Any]) -> dict[str, Any]:
    """Shortcuts in one evaluation's answers (one rollout per question): yes/no constants, year-only dates, evidence behind the rest.

    >>> records = [{"answers": ["No"]}, {"answers": ["Yes"]}, {"answers": ["16 August, 2022"], "category": "temporal"},
    ...            {"answers": ["piano"]}]
    >>> evaluation = {"rewards": [1.0, 0.0, 0.5, 1.0], "answers": ["No.", "no", "2022", "piano"],
    ...               "measures": [{}, {}, {"evidence_recall": 0.0}, {"evidence_recall": 1.0}]}
    >>> answer_shortcuts(records, evaluation)["yes_no"], answer_shortcuts(records, evaluation)["temporal"]
    ({'questions': 2, 'most_common_answer': 'no', 'most_common_count': 2, 'right': 1}, {'questions': 1, 'scoring': 1, 'year_alone_scoring': 1})
    >>> answer_shortcuts(records, evaluation)["other"]
    {'questions': 2, 'scoring': 2, 'exact': 1, 'scoring_with_evidence_found': 1}
    """
    rows = list(zip(records, evaluation["answers"], evaluation["rewards"], evaluation["measures"]))
    yes_no = [(answer or "", reward) for record, answer, reward, _ in rows if is_yes_no(record)]
    first_words = Counter(re.sub(r"[^a-z]", "", answer.strip().lower().split(" ")[0]) for answer, _ in yes_no)
    common, count = first_words.most_common(1)[0] if yes_no else (None, 0)
    temporal = [(answer or "", reward) for record, answer, reward, _ in rows if record.get("category") == "temporal"]
    other = [(reward, measures) for record, _, reward, measures in rows if not is_yes_no(record)]
    return {
        "yes_no": {"questions": len(yes_no), "most_common_answer": common, "most_common_count": count, "right": sum(reward == 1 for _, reward in yes_no)},
        "temporal": {
            "questions": len(temporal),
            "scoring": sum(reward > 0 for _, reward in temporal),
            "year_alone_scoring": sum(reward > 0 and is_year_alone(answer) for answer, reward in temporal),
        },
        "other": {
            "questions": len(other),
            "scoring": sum(reward > 0 for reward, _ in other),
            "exact": sum(reward == 1 for reward, _ in other),
            # SUMER's searches and AgeMem's retrievals: either returned an evidence turn.
            "scoring_with_evidence_found": sum(reward > 0 and (measures.get("evidence_recall") or measures.get("retrieval_recall") or 0) > 0
                                               for reward, measures in other),
        },
    }


def scored_by_f1(evaluation: dict[str, Any]) -> dict[str, Any]:
    """``evaluation`` with its rewards replaced by its answers' F1 (AgeMem's reward adds memory terms).

    >>> scored_by_f1({"rewards": [0.9], "measures": [{"f1": 0.5}]})["rewards"]
    [0.5]
    """
    return {**evaluation, "rewards": [measure["f1"] for measure in evaluation["measures"]]}


def episode_run(path: Path, result: dict[str, Any], adapter: str = "-1", baseline: str | None = None) -> dict[str, Any]:
    """An episode benchmark's file as one run: its ``adapter`` after and the untrained policy (or its ``baseline``
    adapter) before, each given by position (1 = the first, -1 = the last) or by a part of its name that only one
    adapter has; each evaluation's rewards are its answers' F1."""
    from langgraph_memagent.evals.conversations import CONVERSATIONS_TASK

    adapters = [name for name in result["policies"] if name != "untrained"]

    def pick(key: str) -> str:
        if key.lstrip("-").isdigit():
            position = int(key)
            chosen = [adapters[position - 1 if position > 0 else position]] if position and -len(adapters) <= position <= len(adapters) else []
        else:
            chosen = [name for name in adapters if key in name]
        if len(chosen) != 1:
            raise ValueError(f"{path.name} has {len(adapters)} adapters ({', '.join(adapters) or 'none'}); {key!r} names {len(chosen)} of them, expected one")
        return chosen[0]

    name, against = pick(adapter), "untrained" if baseline is None else pick(baseline)
    settings = {"task": CONVERSATIONS_TASK, "split": result["settings"]["split"], "eval_questions": result["settings"]["questions"]}
    if settings["split"] not in SPLITS:
        raise ValueError(f"{path.name} answered split {settings['split']!r}; the report regenerates the generated splits only: {', '.join(SPLITS)}")
    if [record["question"] for record in held_out_questions(settings)] != result["questions"]:
        raise ValueError(f"{path.name}'s questions are not the {settings['split']!r} split's first {settings['eval_questions']}")
    before, after = result["policies"][against], result["policies"][name]
    run = {"settings": settings, "before": {}, "after": {}}
    for decoding, evaluation in after.items():
        if isinstance(evaluation, dict) and "measures" in evaluation and decoding in before:  # not the derived "changes" or "shortcuts"
            run["before"][decoding], run["after"][decoding] = scored_by_f1(before[decoding]), scored_by_f1(evaluation)
    return {"file": path.name, "split": settings["split"], "seed": None, "label": f"{name} over {against}", "run": run}


def load_runs(paths: list[Path], adapter: str = "-1", baseline: str | None = None) -> list[dict[str, Any]]:
    """Every run of the results files at ``paths``, as report entries (file, split, seed, label, run); ``adapter`` and
    ``baseline`` pick the compared policies of episode files (:func:`episode_run`)."""
    entries = []
    for path in paths:
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read {path} as JSON ({type(error).__name__}: {error})") from None
        if isinstance(result, dict) and isinstance(result.get("policies"), dict) and "untrained" in result["policies"]:
            entries.append(episode_run(path, result, adapter, baseline))
            continue
        if not (isinstance(result, dict) and isinstance(result.get("runs"), list) and "split" in result):
            raise ValueError(f"{path} is not a bench_learning results file (expected 'split' and a list of 'runs') "
                             "nor an episode benchmark's (expected 'policies' with 'untrained')")
        entries += [{"file": path.name, "split": result["split"], "seed": (seed := run.get("training", {}).get("seed")),
                     "label": f"{path.name} seed {seed}", "run": run} for run in result["runs"]]
    if not entries:
        raise ValueError(f"no runs in {', '.join(map(str, paths))}")
    return entries


def report(entries: list[dict[str, Any]], decoding: str = "greedy") -> dict[str, Any]:
    """The report of runs on one question set (see the module's description); ``entries`` as :func:`load_runs` gives them."""
    question_sets = {(e["split"], e["run"]["settings"].get("seed"), e["run"]["settings"].get("eval_questions")) for e in entries}
    if len(question_sets) != 1:
        raise ValueError(f"the runs answered different question sets (split, seed, questions): {sorted(question_sets, key=str)}; report one at a time")
    questions = held_out_questions(entries[0]["run"]["settings"])
    per_run = []
    for e in entries:
        changes = run_changes(e["run"], decoding)  # first: it refuses a decoding the run lacks
        before, after = e["run"]["before"][decoding], e["run"]["after"][decoding]
        single = after["rollouts_per_question"] == 1  # the shortcut checks read one answer per question
        per_run.append({
            "file": e["file"], "seed": e["seed"], "label": e["label"], "changes": changes,
            "answer_shortcuts": answer_shortcuts(questions, after) if single else None,
            "f1_without_shortcuts": f1_without_shortcuts(questions, before, after) if single else None,
        })
    groups = dict.fromkeys(group for run in per_run for group in run["changes"])
    summary = {
        group: {
            measure: across([run["changes"][group][measure]["change"] for run in per_run])
            for measure in GROUP_MEASURES if all(measure in run["changes"].get(group, {}) for run in per_run)
        }
        for group in groups
    }
    shortcut_free = [run["f1_without_shortcuts"] for run in per_run]
    return {
        "decoding": decoding,
        "split": entries[0]["split"],
        "runs": per_run,
        "across_runs": summary,
        "constant_answer_f1": constant_answer_f1(questions),
        "f1_without_shortcuts": across([run["change"] for run in shortcut_free]) if all(shortcut_free) else None,
    }


def markdown(result: dict[str, Any]) -> str:
    """One table per measure: a row per run (change ± paired s.e.), then mean ± sd, s.e. and the 95% interval."""
    groups = list(result["across_runs"])
    lines = []
    for measure in GROUP_MEASURES:
        shown = [group for group in groups if measure in result["across_runs"][group]]
        if not shown:
            continue
        lines += [f"\n{measure}, {result['decoding']} change in points ({result['split']}):\n",
                  "| run | " + " | ".join(f"{group} (n={result['runs'][0]['changes'][group][measure]['questions']})" for group in shown) + " |",
                  "|---|" + "---:|" * len(shown)]
        for run in result["runs"]:
            cells = [run["changes"][group][measure] for group in shown]
            lines.append(f"| {run['label']} | " + " | ".join(f"{c['change']:+.1f} ± {c['standard_error']:.1f}" for c in cells) + " |")
        summaries = [result["across_runs"][group][measure] for group in shown]
        if summaries[0]["sd"] is not None:
            lines.append("| mean ± sd | " + " | ".join(f"{s['mean']:+.1f} ± {s['sd']:.1f}" for s in summaries) + " |")
            lines.append("| s.e. of the mean | " + " | ".join(f"{s['sem']:.1f}" for s in summaries) + " |")
            lines.append("| 95% interval (t) | " + " | ".join(f"{s['ci95'][0]:+.1f} to {s['ci95'][1]:+.1f}" for s in summaries) + " |")
    constants = ", ".join(f'"{answer}" {value:.1f}' for answer, value in result["constant_answer_f1"].items())
    lines.append(f"\nF1 of a constant answer on these questions (a policy that never reads): {constants}")
    for run in result["runs"]:
        if run["answer_shortcuts"]:
            yes_no, temporal, other = (run["answer_shortcuts"][part] for part in ("yes_no", "temporal", "other"))
            lines.append(
                f"- {run['label']}, trained answers: yes/no {yes_no['most_common_answer']!r} {yes_no['most_common_count']} of "
                f"{yes_no['questions']} ({yes_no['right']} right); temporal {temporal['scoring']} of {temporal['questions']} score, "
                f"{temporal['year_alone_scoring']} with a year alone; other {other['scoring']} of {other['questions']} score "
                f"({other['exact']} exactly, {other['scoring_with_evidence_found']} had found their evidence)"
            )
            free = run["f1_without_shortcuts"]
            lines.append(f"  F1 change without yes/no questions and year-only answers: {free['change']:+.1f} ± {free['standard_error']:.1f} ({free['questions']} questions)")
    free = result["f1_without_shortcuts"]
    if free and free["sd"] is not None:
        lines.append(f"\nF1 change without shortcuts, across runs: {free['mean']:+.1f} ± {free['sd']:.1f} (95% {free['ci95'][0]:+.1f} to {free['ci95'][1]:+.1f})")
    return "\n".join(lines)


def forest_rows(result: dict[str, Any]) -> dict[str, list[tuple[str, float, float, float]]]:
    """Per measure, the whole question set's change as (label, change, low, high) rows: each run's change with its paired
    95% interval (1.96 s.e. over questions), then, for several runs, their mean with its 95% Student-t interval.

    >>> run = lambda seed, change: {"label": f"seed {seed}", "changes": {"all": {"f1": {"change": change, "standard_error": 1.0}}}}
    >>> forest_rows({"across_runs": {"all": {"f1": {"mean": 4.0, "ci95": [-8.7, 16.7]}}}, "runs": [run(1, 3.0), run(2, 5.0)]})
    {'f1': [('seed 1', 3.0, 1.04, 4.96), ('seed 2', 5.0, 3.04, 6.96), ('mean of 2 (95% t)', 4.0, -8.7, 16.7)]}
    """
    rows = {}
    for measure in (measure for measure in GROUP_MEASURES if measure in result["across_runs"].get("all", {})):
        cells = [(run["label"], run["changes"]["all"][measure]) for run in result["runs"]]
        rows[measure] = [(label, cell["change"], cell["change"] - 1.96 * cell["standard_error"], cell["change"] + 1.96 * cell["standard_error"])
                         for label, cell in cells]
        summary = result["across_runs"]["all"][measure]
        if summary["ci95"]:
            rows[measure].append((f"mean of {len(cells)} (95% t)", summary["mean"], *summary["ci95"]))
    return rows


def plot(result: dict[str, Any], path: Path) -> None:
    """:func:`forest_rows` drawn as a forest plot, one panel per measure, zero dashed (written by ``save_figure``)."""
    from matplotlib.figure import Figure

    from langgraph_memagent.evals.plots import save_figure

    rows = forest_rows(result)
    if not rows:
        raise ValueError(f"the runs have no whole-set change of {' or '.join(GROUP_MEASURES)} to draw")
    labels = [label for label, *_ in next(iter(rows.values()))]
    figure = Figure(figsize=(4.2 * len(rows) + 2.5, 0.45 * len(labels) + 1.4), layout="constrained")
    axes = figure.subplots(1, len(rows), sharey=True, squeeze=False)[0]
    for axis, (measure, measure_rows) in zip(axes, rows.items()):
        for position, (_, change, low, high) in enumerate(measure_rows):
            mean = position == len(result["runs"])
            axis.errorbar(change, position, xerr=[[change - low], [high - change]], fmt="D" if mean else "o",
                          color="black" if mean else "tab:blue", capsize=3)
        axis.axvline(0, color="grey", linestyle="--", linewidth=1)
        axis.set_title(f"{measure.replace('_', ' ')}, {result['decoding']}")
        axis.set_xlabel("change, points")
    axes[0].set_yticks(range(len(labels)), labels)
    axes[0].invert_yaxis()
    figure.suptitle(f"{result['split']}: each run ± 1.96 s.e. over questions, then the mean across runs")
    save_figure(figure, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="bench_learning or episode benchmark results files (JSON) of one split")
    parser.add_argument("--adapter", default="-1", help="episode files: the compared adapter, by position (1 = the first, -1 = the last) or a part of its name (default: %(default)s)")
    parser.add_argument("--baseline", default=None, help="episode files: compare against this adapter (position or part of its name) instead of the untrained policy")
    parser.add_argument("--decoding", default="greedy", help="which evaluation to compare: greedy, sampled, ... (default: %(default)s)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON to this path")
    parser.add_argument("--plot", type=Path, default=None, help="also draw the whole set's changes per run and across runs to this PNG path")
    args = parser.parse_args(argv)
    try:
        result = report(load_runs(args.results, args.adapter, args.baseline), args.decoding)
        if args.json is not None:
            from langgraph_memagent.agents.atomic_files import write_atomic

            write_atomic(args.json, json.dumps(result, indent=2) + "\n")
        if args.plot is not None:
            plot(result, args.plot)
    except (ValueError, OSError) as error:
        print(f"{NAME}: {error}", file=sys.stderr)
        return 2
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
