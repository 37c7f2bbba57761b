"""The comparison's report: accuracy and cost tables (markdown, CSV), LoCoMo scores and plots, from the results file."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

from langchain_core.language_models import BaseChatModel

from ..agents.atomic_files import write_atomic
from .lengths import ComparisonError
from .results import Cell, MANIFEST_FILE, RESULTS_FILE, count_range, read_results


@dataclass
class ComparisonResult:
    """Where a comparison wrote its outputs, and its summary."""

    out: Path
    results: Path
    cells: list["Cell"]
    markdown: str
    files: list[Path] = field(default_factory=list)


# Tables -------------------------------------------------------------------------------------


def resolve_flops_model(given: Any, model: BaseChatModel, model_spec: str) -> Any:
    """The FLOP estimator's model config: the one given, else the model's if it is known.

    Tried in turn: a local model's directory (exact parameter count from its config), the
    model spec without its provider prefix (``vllm:Qwen/Qwen2.5-14B-Instruct``), and the
    served model name. Returns None when none is known: the tables then say ``n/a``.
    """
    from .flops import flops_config

    if given is not None:
        try:
            return flops_config(given)
        except (ValueError, TypeError) as error:
            raise ComparisonError(f"bad FLOP model: {error}") from error
    for candidate in (model_spec.partition(":")[2] or model_spec, getattr(model, "model_name", None), getattr(model, "model_path", None)):
        if candidate:
            try:
                return flops_config(candidate)
            except (ValueError, TypeError, OSError, KeyError):
                continue  # not a preset nor a readable model directory: try the next name
    return None


def _record_flops(record: dict[str, Any], flops_model: Any) -> float | None:
    calls = record.get("calls") or []
    if flops_model is None or not calls or any(p is None or c is None for p, c in calls):
        return None
    from .flops import estimate_call_flops

    return float(sum(estimate_call_flops(flops_model, p, c) for p, c in calls))


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None


def summarize(records: Sequence[dict[str, Any]], *, flops_model: Any = None) -> list[Cell]:
    """Accuracy and mean cost per task x graph x length from results lines.

    Accuracy averages every sample (errors score 0); costs average the samples that
    finished without error. FLOPs need ``flops_model`` (anything
    :func:`~langgraph_memagent.evals.flops.flops_config` takes: a preset name such as
    ``qwen2.5-14b``, a model directory, a ``FlopsModelConfig``). Ordered by task, graph
    (first seen) and length.
    """
    from .flops import flops_config

    flops_model = flops_config(flops_model) if flops_model is not None else None
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["task"], record["graph"], record["length"]), []).append(record)
    cells = []
    for (task, graph, length), group in groups.items():
        ok = [r for r in group if not r.get("error")]
        given = group[0].get("length_tokens")
        position = given if given is not None else sum(r["document_tokens"] for r in group) / len(group)
        cells.append(
            Cell(
                task=task,
                graph=graph,
                length=length,
                length_tokens=position,
                samples=len(group),
                errors=len(group) - len(ok),
                accuracy=100 * sum(float(r["score"]) for r in group) / len(group),
                llm_calls=_mean([r["llm_calls"] for r in ok]),
                prompt_tokens=_mean([r["prompt_tokens"] for r in ok]),
                completion_tokens=_mean([r["completion_tokens"] for r in ok]),
                seconds=_mean([r["seconds"] for r in ok]),
                flops=_mean([_record_flops(r, flops_model) for r in ok]),
                concurrency=count_range(r["concurrency"] for r in group if r.get("concurrency") is not None),
            )
        )
    graph_order = list(dict.fromkeys(c.graph for c in cells))
    return sorted(cells, key=lambda c: (c.task, graph_order.index(c.graph), c.length_tokens, c.length))


def _lengths(cells: Sequence[Cell]) -> list[str]:
    positions: dict[str, float] = {}
    for cell in cells:
        positions.setdefault(cell.length, cell.length_tokens)
    return sorted(positions, key=lambda length: (positions[length], length))


def accuracy_rows(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """One row per task x graph: accuracy (%) per length, errors over all lengths, samples per length.

    ``samples_per_length`` is what each accuracy averages, as the plots' "samples per graph and
    length" (a range such as ``"8-10"`` when data files hold different numbers of records).
    """
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    counts: dict[tuple[str, str], list[int]] = {}
    for cell in cells:
        row = rows.setdefault((cell.task, cell.graph), {"task": cell.task, "graph": cell.graph, "errors": 0})
        row[cell.length] = round(cell.accuracy, 2)
        row["errors"] += cell.errors
        counts.setdefault((cell.task, cell.graph), []).append(cell.samples)
    for key, row in rows.items():
        row["samples_per_length"] = count_range(counts[key])
    return list(rows.values())


# What each evals.scoring metric gives one sample (the accuracy tables average it, in percent).
METRIC_MEANINGS = {
    "strict_boxed": "1 when the last `\\boxed{}` of the reply equals a gold answer, else 0",
    "exact_match": "1 when the text equals a gold answer after SQuAD normalisation, else 0",
    "sub_exact_match": "1 when the text contains a gold answer or is contained in one after SQuAD normalisation, else 0",
    "f1": "token F1 against the best-matching gold answer",
    "string_match_all": "the fraction of the gold answers found in the text, case-insensitively",
    "string_match_part": "1 when any gold answer is found in the text, case-insensitively, else 0",
}

_SCORED_TEXTS = (
    ("answer", "the extracted answer"),
    ("response", "the raw reply"),
    (None, "no text (a failed run or an empty reply, scored 0)"),
)


def metric_line(records: Sequence[dict[str, Any]]) -> str:
    """What a task's accuracy averages: each metric and the text it was scored on, from the results lines.

    Empty when no line records its metric.
    """
    metrics = list(dict.fromkeys(r["metric"] for r in records if r.get("metric")))
    if not metrics:
        return ""
    named = "; ".join(f"`{m}`, {METRIC_MEANINGS[m]}" if m in METRIC_MEANINGS else f"`{m}`" for m in metrics)
    total = len(records)
    scored = [
        f"{label} in {count} of {total} samples"
        for key, label in _SCORED_TEXTS
        if (count := sum(1 for r in records if r.get("scored") == key))
    ]
    # The extracted answer is the reply's \boxed{} (or its "the answer is ..."); without one the lenient metrics read the raw reply.
    return f"Score per sample: {named}. Scored on {', '.join(scored)}."


def _number(value: float | None, style: str) -> str:
    if value is None:
        return "n/a"
    return {"pct": f"{value:.2f}", "count": f"{value:,.1f}", "seconds": f"{value:.2f}", "flops": f"{value:.3g}"}[style]


def concurrency_note(cells: Sequence[Cell]) -> str:
    """The concurrency the wall times were measured at, and that they depend on it (a sentence)."""
    given = count_range(int(part) for c in cells if c.concurrency is not None for part in str(c.concurrency).split("-"))
    if given is None:
        return "Wall times depend on how many samples ran at once (`--concurrency`), which these results do not record."
    changed = "" if isinstance(given, int) else ", changed on resume"
    return f"Up to {given} samples ran at once (`--concurrency {given}`{changed}), sharing the model: wall times depend on it."


def markdown_tables(cells: Sequence[Cell], *, model: str = "", metrics: dict[str, str] | None = None) -> str:
    """The accuracy table (graphs x lengths) and the cost table, per task, in markdown.

    ``metrics``: a line per task saying what its scores are (:func:`metric_line`), above its tables.
    """
    parts = []
    for task in dict.fromkeys(c.task for c in cells):
        task_cells = [c for c in cells if c.task == task]
        lengths = _lengths(task_cells)
        title = f"### {task}" + (f" ({model})" if model else "")
        if (metrics or {}).get(task):
            title += f"\n\n{metrics[task]}"
        per_length = count_range(c.samples for c in task_cells)
        header = "| graph | " + " | ".join(lengths) + " | errors |"
        rule = "|---|" + "---:|" * (len(lengths) + 1)
        body = []
        for row in accuracy_rows(task_cells):
            values = [_number(row.get(length), "pct") if length in row else "-" for length in lengths]
            body.append(f"| {row['graph']} | " + " | ".join(values) + f" | {row['errors']} |")
        accuracy = f"Accuracy (%), {per_length} samples per graph and length (errors: over all lengths):"
        parts.append("\n".join([title, "", accuracy, "", header, rule, *body]))
        cost = [
            f"Mean cost per sample (samples that finished). {concurrency_note(task_cells)}",
            "",
            "| graph | length | samples | LLM calls | prompt tokens | completion tokens | wall s | est. FLOPs |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for c in task_cells:
            cost.append(
                f"| {c.graph} | {c.length} | {c.samples} | {_number(c.llm_calls, 'count')} | {_number(c.prompt_tokens, 'count')} | "
                f"{_number(c.completion_tokens, 'count')} | {_number(c.seconds, 'seconds')} | {_number(c.flops, 'flops')} |"
            )
        parts.append("\n".join(cost))
    return "\n\n".join(parts) + "\n"


def accuracy_csv(cells: Sequence[Cell]) -> str:
    """``task, graph, <length>..., errors, samples_per_length`` with accuracy in percent (see :func:`accuracy_rows`)."""
    lengths = _lengths(cells)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, ["task", "graph", *lengths, "errors", "samples_per_length"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(accuracy_rows(cells))
    return buffer.getvalue()


def cost_csv(cells: Sequence[Cell]) -> str:
    """One row per task x graph x length with every :class:`Cell` field (``concurrency``: samples run at once, which ``seconds`` depends on)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, [f.name for f in fields(Cell)], lineterminator="\n")
    writer.writeheader()
    for cell in cells:
        writer.writerow({k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(cell).items()})
    return buffer.getvalue()


def _tool_calls(details: dict[str, Any]) -> float | None:
    calls = details.get("tool_calls")
    return float(sum(calls.values())) if isinstance(calls, dict) else calls


def _locomo_groups(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """LoCoMo records by (graph, data file)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        if record.get("task") == "locomo":
            groups.setdefault((record["graph"], record["length"]), []).append(record)
    return groups


def _locomo_summary(group: Sequence[dict[str, Any]]) -> Any:
    from .locomo_scoring import summarize_locomo

    judged = any(r["locomo"]["judge"] is not None for r in group)
    return summarize_locomo([_locomo_row(r, judged) for r in group])


def locomo_tables(records: Sequence[dict[str, Any]]) -> str:
    """Per-category LoCoMo scores (F1, BLEU-1, J) per graph and data file, with mean turns and tool calls."""
    from .locomo_scoring import locomo_markdown_table

    parts = []
    for (graph, length), group in _locomo_groups(records).items():
        summary = _locomo_summary(group)
        turns = _mean([r["details"].get("turns_used", r["llm_calls"]) for r in group if not r.get("error")])
        tools = _mean([_tool_calls(r["details"]) for r in group if not r.get("error")])
        parts.append(
            f"### LoCoMo by category: {graph} on {length}\n\n{locomo_markdown_table(summary)}\n\n"
            f"Mean per question: {_number(turns, 'count')} turns (LLM calls where the graph has no turns), "
            f"{_number(tools, 'count')} tool calls; errors {sum(1 for r in group if r.get('error'))} (scored 0)."
        )
    return "".join(f"\n{part}\n" for part in parts)


def early_stop_table(records: Sequence[dict[str, Any]]) -> str:
    """Where graphs that may stop reading early (InfMem) stopped: per graph, task and length, the runs that stopped,
    the share of chunks they had read, and the retrievals per run. Empty when no graph reports an early stop.

    >>> print(early_stop_table([{"graph": "infmem", "task": "t", "length": "4K", "error": None,
    ...     "details": {"early_stop_chunk": 2, "chunks_read": 2, "num_chunks": 8, "retrievals": 1}}]).strip().splitlines()[-1])
    | infmem | t | 4K | 1 of 1 | 25% | 1.0 |
    """
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in records:
        if "early_stop_chunk" in record.get("details", {}) and not record.get("error"):
            groups.setdefault((record["graph"], record["task"], record["length"]), []).append(record["details"])
    if not groups:
        return ""
    lines = ["| graph | task | length | stopped early | chunks read when stopped | retrievals per run |", "|---|---|---|---:|---:|---:|"]
    for (graph, task, length), details in groups.items():
        stopped = [d for d in details if d["early_stop_chunk"] is not None]
        share = _mean([d["chunks_read"] / d["num_chunks"] for d in stopped if d.get("num_chunks")])
        retrievals = _mean([d.get("retrievals") for d in details])
        lines.append(f"| {graph} | {task} | {length} | {len(stopped)} of {len(details)} | "
                     f"{'-' if share is None else f'{share:.0%}'} | {_number(retrievals, 'count')} |")
    return "\n### Early stops\n\n" + "\n".join(lines) + "\n"


def _locomo_row(record: dict[str, Any], judged: bool) -> dict[str, Any]:
    """A results line as :func:`summarize_locomo` reads it; a failed run counts WRONG when others were judged."""
    scores = record["locomo"]
    verdict = scores["judge"]
    correct = verdict.get("correct") if verdict is not None else (False if judged and record.get("error") else None)
    return {"f1": scores["f1"], "bleu1": scores["bleu1"], "judge": correct, "meta": {"category": scores["category"], "category_name": scores["category_name"]}}


def _decoding_line(out: Path) -> str:
    """The decoding the comparison ran with, from its manifest, as the report's first line."""
    from ..agents.loading import describe_decoding

    path = out / MANIFEST_FILE
    if not path.is_file():
        return ""
    manifest = json.loads(path.read_text(encoding="utf-8"))
    decoding = describe_decoding(manifest.get("temperature"), manifest.get("top_p"))
    return f"Decoding: {decoding} (recorded in {MANIFEST_FILE}).\n\n"


def write_report(out: str | Path, *, flops_model: Any = None, context_window: int | None = None) -> ComparisonResult:
    """Tables and plots from ``<out>/results.jsonl`` (also usable on its own, e.g. after copying results)."""
    from .plots import plot_accuracy, plot_cost, plot_locomo

    out = Path(out)
    results_path = out / RESULTS_FILE
    records = read_results(results_path)
    if not records:
        raise ComparisonError(f"{results_path} holds no results yet")
    cells = summarize(records, flops_model=flops_model)
    model = records[0].get("model", "")
    metrics = {task: metric_line([r for r in records if r["task"] == task]) for task in dict.fromkeys(c.task for c in cells)}
    markdown = _decoding_line(out) + markdown_tables(cells, model=model, metrics=metrics) + locomo_tables(records) + early_stop_table(records)
    files = [out / "summary.md", out / "accuracy.csv", out / "cost.csv"]
    for path, text in zip(files, (markdown, accuracy_csv(cells), cost_csv(cells))):
        write_atomic(path, text)
    for task in dict.fromkeys(c.task for c in cells if c.task != "locomo"):
        task_cells = [c for c in cells if c.task == task]
        title = f"{task} · {model}"
        files.append(plot_accuracy(task_cells, out / f"{task}_accuracy.png", title=title, context_window=context_window))
        files.append(plot_cost(task_cells, out / f"{task}_cost.png", title=title, context_window=context_window))
    # One length per LoCoMo conversation: per-category bars instead of lines against length.
    locomo_groups = _locomo_groups(records)
    for length in dict.fromkeys(length for _, length in locomo_groups):
        groups = {graph: group for (graph, other), group in locomo_groups.items() if other == length}
        summaries = {graph: _locomo_summary(group) for graph, group in groups.items()}
        prompt_tokens = {graph: _mean([r["prompt_tokens"] for r in group if not r.get("error")]) or 0.0 for graph, group in groups.items()}
        files.append(plot_locomo(summaries, prompt_tokens, out / f"{length}_scores.png", title=f"LoCoMo {length} · {model}"))
    return ComparisonResult(out=out, results=results_path, cells=cells, markdown=markdown, files=files)
