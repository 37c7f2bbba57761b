"""Accuracy-vs-length and cost-vs-length plots of a comparison, and LoCoMo's per-category bars (matplotlib, PNG).

One line per graph with markers, a log2 length axis labelled 4K, 8K, ... and a dashed
vertical line at the model's context window when it is known and falls within the axis
(otherwise the title names it): the picture of the MemAgent paper's figure 5 (accuracy)
and figure 7 (cost).

Figures are drawn on :class:`matplotlib.figure.Figure` objects, never through
``pyplot``, so no global backend or GUI state is touched.

>>> from langgraph_memagent.evals.results import Cell
>>> cells = [Cell("niah_single_1", "memagent", "4K", 4096, 2, 0, 100.0, 5.0, 6000.0, 80.0, 12.5, 1e12)]
>>> plot_accuracy(cells, "accuracy.png", title="niah_single_1")   # doctest: +SKIP
PosixPath('accuracy.png')
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..agents.extras import needs_extra

with needs_extra("plots", "the comparison's figures"):
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter, LogLocator, NullLocator

from .results import count_range


if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .results import Cell
    from .locomo_scoring import LoCoMoSummary

_MARKERS = "osD^vP*X"


def _graphs(cells: Sequence["Cell"]) -> list[str]:
    return list(dict.fromkeys(cell.graph for cell in cells))


def _length_axis(axes: "Axes", cells: Sequence["Cell"], context_window: int | None) -> str:
    """Log2 x axis with a tick per compared length, and the context window as a dashed line.

    A window outside the axis is neither drawn nor in the legend: the returned note (for
    the title) says where it lies; empty when the window is drawn or unknown.
    """
    from .lengths import format_tokens

    positions: dict[float, str] = {}
    for cell in cells:
        # Generated lengths are labelled 4K, 8K ...; data files by their mean document size.
        positions.setdefault(cell.length_tokens, format_tokens(cell.length_tokens))
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted(positions), [positions[x] for x in sorted(positions)])
    axes.minorticks_off()
    axes.set_xlabel("document length (tokens)")
    low, high = min(positions), max(positions)
    # Half an octave of margin keeps edge markers off the frame.
    left, right = low / 2**0.5, high * 2**0.5
    axes.set_xlim(left, right)
    axes.grid(True, which="major", alpha=0.3)
    if not context_window:
        return ""
    if left <= context_window <= right:
        # Named in the legend rather than written on the plot, where it would cross lines.
        axes.axvline(context_window, color="0.4", linestyle="--", linewidth=1.2, zorder=1,
                     label=f"context window ({format_tokens(context_window)})")
        return ""
    side = "beyond the longest length" if context_window > right else "below the shortest length"
    return f"context window {format_tokens(context_window)} lies {side}"


def _lines(axes: "Axes", cells: Sequence["Cell"], value: Callable[["Cell"], float | None]) -> bool:
    """One line per graph; returns whether anything was drawn."""
    drawn = False
    for number, graph in enumerate(_graphs(cells)):
        points = sorted((c.length_tokens, value(c)) for c in cells if c.graph == graph and value(c) is not None)
        if points:
            xs, ys = zip(*points)
            axes.plot(xs, ys, marker=_MARKERS[number % len(_MARKERS)], linewidth=1.8, markersize=6, label=graph, zorder=3)
            drawn = True
    return drawn


def save_figure(figure: Any, path: str | Path) -> Path:
    """Write ``figure`` as a PNG at 120 dpi (making its folder) and release it; returns the path.

    The PNG goes through :func:`~langgraph_memagent.agents.atomic_files.replacing`, so an interrupted write never leaves a
    half-drawn figure at ``path``.
    """
    import matplotlib.pyplot as plt

    from ..agents.atomic_files import replacing

    path = Path(path)
    with replacing(path, "wb") as file:
        figure.savefig(file, format="png", dpi=120)
    plt.close(figure)  # a pyplot figure stays registered (and in memory) until closed
    return path


def plot_accuracy(cells: Sequence["Cell"], path: str | Path, *, title: str, context_window: int | None = None) -> Path:
    """Accuracy (%) against document length, one line per graph; writes a PNG and returns its path."""
    figure = Figure(figsize=(7, 4.5), dpi=120, layout="constrained")
    axes = figure.add_subplot()
    _lines(axes, cells, lambda cell: cell.accuracy)
    note = _length_axis(axes, cells, context_window)
    axes.set_ylim(-3, 103)
    axes.set_ylabel("accuracy (%)")
    # Each point averages one graph's samples at one length: accuracy.csv's samples_per_length.
    per_point = count_range(cell.samples for cell in cells)
    axes.set_title(f"{title}\naccuracy, {per_point} samples per graph and length" + (f"\n({note})" if note else ""), fontsize=11)
    axes.legend(loc="best", frameon=False)
    return save_figure(figure, path)


_COST_PANELS: tuple[tuple[str, str], ...] = (
    ("flops", "estimated FLOPs per sample"),
    ("prompt_tokens", "prompt tokens per sample"),
    ("seconds", "wall time per sample (s)"),
)


def _wall_time_label(label: str, cells: Sequence["Cell"]) -> str:
    """The wall-time panel's title with the concurrency its times were measured at."""
    given = count_range(int(part) for cell in cells if cell.concurrency is not None for part in str(cell.concurrency).split("-"))
    return f"{label}\nat concurrency {given} (times depend on it)" if given is not None else f"{label}\nconcurrency not recorded"


def plot_cost(cells: Sequence["Cell"], path: str | Path, *, title: str, context_window: int | None = None) -> Path:
    """Cost against document length: estimated FLOPs, prompt tokens and wall time per sample.

    Log-log panels, so linear growth (MemAgent) and quadratic growth (full context) show
    as straight lines of slope 1 and 2. A panel without data says so instead of staying blank.
    """
    figure = Figure(figsize=(13, 4.2), dpi=120, layout="constrained")
    panels = figure.subplots(1, len(_COST_PANELS))
    note = ""
    for axes, (name, label) in zip(panels, _COST_PANELS):
        if _lines(axes, cells, lambda cell, name=name: getattr(cell, name)):
            axes.set_yscale("log")
            # 1-2-5 ticks with SI prefixes (5k, 2G, ...): a plain log axis labels only whole
            # decades and leaves a narrower range with no numbers at all.
            axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axes.yaxis.set_major_formatter(EngFormatter(sep=""))
            axes.yaxis.set_minor_locator(NullLocator())
        else:
            axes.set_yticks([])
            message = "no FLOP model known:\npass --flops-model" if name == "flops" else "no data"
            axes.text(0.5, 0.5, message, transform=axes.transAxes, ha="center", va="center", color="0.4")
        note = _length_axis(axes, cells, context_window)
        axes.set_title(_wall_time_label(label, cells) if name == "seconds" else label, fontsize=10)
    # The panel with the most lines (the FLOPs panel may be empty) lends its handles to the legend.
    handles, labels = max((axes.get_legend_handles_labels() for axes in panels), key=lambda pair: len(pair[0]))
    figure.legend(handles, labels, loc="outside right center", frameon=False)
    figure.suptitle(f"{title}: cost per sample" + (f" ({note})" if note else ""), fontsize=11)
    return save_figure(figure, path)


def plot_locomo(
    summaries: dict[str, "LoCoMoSummary"], prompt_tokens: dict[str, float], path: str | Path, *, title: str
) -> Path:
    """LoCoMo per graph: scores by question category (left) and prompt tokens per question (right).

    LoCoMo has one length per conversation, so accuracy-vs-length lines would be single
    points; grouped bars show what the per-category tables say. The score is the LLM
    judge's J when any question was judged, else token F1 (both in percent).
    """
    judged = any(summary.overall.judge is not None for summary in summaries.values())
    metric = "J" if judged else "F1"
    # Each group's question count, categories in order of first appearance, overall last.
    counts: dict[str, int] = {}
    for summary in summaries.values():
        for scores in summary.categories:
            counts[scores.name] = max(counts.get(scores.name, 0), scores.count)
    counts["overall"] = max((summary.overall.count for summary in summaries.values()), default=0)
    groups = list(counts)
    figure = Figure(figsize=(12, 4.5), dpi=120, layout="constrained")
    scores_axes, cost_axes = figure.subplots(1, 2, width_ratios=(2.2, 1))
    width = 0.8 / max(len(summaries), 1)
    for number, (graph, summary) in enumerate(summaries.items()):
        by_name = {scores.name: scores for scores in [*summary.categories, summary.overall]}
        values = [0.0 if g not in by_name else 100 * ((by_name[g].judge or 0.0) if judged else by_name[g].f1) for g in groups]
        offsets = [index - 0.4 + width * (number + 0.5) for index in range(len(groups))]
        scores_axes.bar(offsets, values, width, label=graph, color=f"C{number}", zorder=3)
    scores_axes.set_xticks(range(len(groups)), [f"{g}\n(n = {counts[g]})" for g in groups])
    scores_axes.set_ylabel(f"{metric} (%)")
    scores_axes.set_ylim(0, max(5.0, 1.15 * max((p.get_height() for p in scores_axes.patches), default=0)))
    scores_axes.grid(True, axis="y", alpha=0.3)
    scores_axes.legend(loc="upper right", frameon=False)
    scores_axes.set_title(f"{metric} by question category", fontsize=10)
    graphs = list(summaries)
    cost_axes.barh(range(len(graphs)), [prompt_tokens.get(g, 0.0) for g in graphs], color=[f"C{n}" for n in range(len(graphs))], zorder=3)
    cost_axes.set_yticks(range(len(graphs)), graphs)
    cost_axes.invert_yaxis()
    cost_axes.set_xscale("log")
    cost_axes.xaxis.set_major_formatter(EngFormatter(sep=""))
    cost_axes.grid(True, axis="x", alpha=0.3)
    cost_axes.set_title("prompt tokens per question", fontsize=10)
    figure.suptitle(title, fontsize=11)
    return save_figure(figure, path)
