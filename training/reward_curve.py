"""The training reward curve: a running mean of the policy's reward per optimizer step, drawn when training ends."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


# Logged with dynamic sampling: a rollout batch's mean reward before flat groups were replaced.
FIRST_DRAW_REWARD = "dynamic_sampling/first_draw_reward"


class RewardCurveCallback(TrainerCallback):
    """Writes ``reward_curve.png`` (mean rollout reward per logged step) when training ends, and
    ``tool_use_curve.png`` for a tool-using graph."""

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            plot_reward_curve(state.log_history, Path(args.output_dir) / "reward_curve.png")
            plot_tool_use_curve(state.log_history, Path(args.output_dir) / "tool_use_curve.png")


def plot_reward_curve(log_history: Sequence[dict[str, Any]], path: str | Path, *, window: int = 4) -> Path | None:
    """Plot the mean reward of each rollout batch against ``step``; ``None`` if nothing was logged.

    With one question per batch (``cpu-smoke``) batch means jump between 0 and 1, so a running
    mean over ``window`` batches is drawn over them. Each change of the logged rollout
    ``temperature`` (a run resumed at a new temperature) is marked with a dashed line and
    restarts the running mean. KL to the reference goes on a second axis. With dynamic
    sampling the points are each batch's first draw (``dynamic_sampling/first_draw_reward``),
    what the policy scored before flat groups were replaced, so filtering cannot flatter the curve.

    Example::

        >>> plot_reward_curve([{"step": 1, "reward": 0.5, "kl": 0.0}], "/tmp/curve.png")  # doctest: +SKIP
    """
    entries = [entry for entry in log_history if "reward" in entry]
    if not entries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..evals.plots import save_figure

    # Segments of equal rollout temperature: the running mean restarts in each.
    segments: list[list[dict[str, Any]]] = []
    for entry in entries:
        if not segments or entry.get("temperature") != segments[-1][0].get("temperature"):
            segments.append([])
        segments[-1].append(entry)
    figure, axes = plt.subplots(figsize=(7, 4))
    lines = []
    point_label = "batch mean reward" + (" (first draw)" if any(FIRST_DRAW_REWARD in entry for entry in entries) else "")
    for number, segment in enumerate(segments):
        steps, rewards = [entry["step"] for entry in segment], [_policy_reward(entry) for entry in segment]
        first = number == 0
        lines += axes.plot(steps, rewards, "o", color="tab:blue", alpha=0.45, label=point_label if first else None)
        lines += axes.plot(steps, running_mean(rewards, window), color="tab:orange", linewidth=2, label=f"running mean ({window} batches)" if first else None)
        if "temperature" in segment[0]:
            if not first:
                axes.axvline(steps[0] - 0.5, color="black", linestyle="--", linewidth=1)
            axes.annotate(f"T = {segment[0]['temperature']:g}", (steps[0], 0.94), xycoords=("data", "axes fraction"), fontsize=9)
    if any("kl" in entry for entry in entries):
        kl_axes = axes.twinx()
        kl = [entry.get("kl", float("nan")) for entry in entries]
        lines += kl_axes.plot([entry["step"] for entry in entries], kl, color="tab:gray", linestyle=":", label="KL to reference")
        kl_axes.set_ylabel("KL to reference", color="tab:gray")
    # Room above the points for the temperature labels; SUMER's reward goes down to -1.
    low, high = min(map(_policy_reward, entries)), max(map(_policy_reward, entries))
    axes.set_ylim(min(-0.05, low - 0.05), max(1.15, high + 0.15))
    axes.legend(handles=[line for line in lines if not line.get_label().startswith("_")], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=8)
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("reward")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return save_figure(figure, path)


# Panels of the tool-use curve: (title, [(logged name, label)]).
TOOL_USE_PANELS = (
    ("reward", [("reward", "reward (trained on)"), ("reward/paper", "paper reward"), ("reward/memory", "memory part"), ("tools/f1", "answer F1")]),
    ("calls", [("tools/valid_call_rate", "valid-call rate"), ("tools/submitted", "submit rate"), ("tools/evidence_recall", "evidence recall"),
               ("tools/memory_recall", "evidence held in memory"), ("tools/retrieval_recall", "evidence retrieved")]),
    ("calls per rollout", [("tools/searches", "searches"), ("tools/tool_calls", "tool calls"), ("tools/memory_items", "stored items")]),
)


def plot_tool_use_curve(log_history: Sequence[dict[str, Any]], path: str | Path, *, window: int = 4) -> Path | None:
    """Reward, call quality and search counts of a tool-using graph's rollout batches against ``step``
    (running means over ``window`` batches); ``None`` when no tool use was logged.

    Example::

        >>> plot_tool_use_curve([{"step": 1, "reward": -1.0, "tools/searches": 2.0}], "/tmp/tools.png")  # doctest: +SKIP
    """
    entries = [entry for entry in log_history if "tools/searches" in entry]
    if not entries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..evals.plots import save_figure

    figure, panels = plt.subplots(1, len(TOOL_USE_PANELS), figsize=(12, 3.6))
    for axes, (title, series) in zip(panels, TOOL_USE_PANELS):
        for name, label in series:
            points = [(entry["step"], entry[name]) for entry in entries if entry.get(name) is not None]
            if points:
                steps, values = zip(*points)
                axes.plot(steps, running_mean(values, window), linewidth=2, label=label)
        axes.set_title(f"{title} (running mean, {window} batches)", fontsize=9)
        axes.set_xlabel("optimizer step")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    return save_figure(figure, path)


def _policy_reward(entry: dict[str, Any]) -> float:
    return entry.get(FIRST_DRAW_REWARD, entry["reward"])


def running_mean(values: Sequence[float], window: int) -> list[float]:
    """Mean of each value and the up to ``window - 1`` values before it: ``[1, 0, 1]``, 2 -> ``[1, 0.5, 0.5]``."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return [sum(values[max(0, i + 1 - window) : i + 1]) / (i + 1 - max(0, i + 1 - window)) for i in range(len(values))]
