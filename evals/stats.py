"""Statistics for claims across runs: the mean of per-run changes with its spread and Student-t
interval, and the exact sign test for paired wins and losses.

Shared by the benchmarks, the recorded studies and the tests, so every reported "mean ± sd (95% t)"
and every sign-test p-value is computed one way.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from ..agents.extras import needs_extra


def t_quantile_975(degrees_of_freedom: int) -> float:
    """The 0.975 quantile of Student's t with ``degrees_of_freedom`` (the 95% two-sided margin factor).

    >>> round(t_quantile_975(2), 3), round(t_quantile_975(4), 3)
    (4.303, 2.776)
    """
    with needs_extra("train", "the t interval across runs"):  # scipy comes with the trainer's packages
        from scipy.stats import t

    return float(t.ppf(0.975, degrees_of_freedom))


def across(values: list[float]) -> dict[str, Any]:
    """Mean, sample sd, standard error of the mean and its 95% Student-t interval of per-run values.

    >>> summary = across([0.1, 17.7, 12.5, 6.5, 16.3])
    >>> round(summary["mean"], 1), round(summary["sd"], 1), round(summary["sem"], 1), [round(x, 1) for x in summary["ci95"]]
    (10.6, 7.3, 3.3, [1.5, 19.7])
    """
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"runs": len(values), "mean": mean, "sd": None, "sem": None, "ci95": None}
    sd = statistics.stdev(values)
    sem = sd / math.sqrt(len(values))
    margin = t_quantile_975(len(values) - 1) * sem
    return {"runs": len(values), "mean": mean, "sd": sd, "sem": sem, "ci95": [mean - margin, mean + margin]}


def across_runs(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each decoding's change across runs (:func:`across`), with every run's change and its own paired error.

    ``results`` are per-run results holding ``changes_points`` and ``change_standard_errors_points``
    (a mapping from decoding to points each).

    >>> runs = [{"changes_points": {"greedy": g}, "change_standard_errors_points": {"greedy": 2.0}} for g in (4.0, 8.0)]
    >>> summary = across_runs(runs)["greedy"]
    >>> summary["mean"], summary["runs_points"], summary["within_run_standard_errors_points"]
    (6.0, [4.0, 8.0], [2.0, 2.0])
    """
    summary = {}
    for name in results[0]["changes_points"]:
        changes = [result["changes_points"][name] for result in results]
        summary[name] = {
            **across(changes),
            "runs_points": changes,
            "within_run_standard_errors_points": [result["change_standard_errors_points"][name] for result in results],
        }
    return summary


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test of ``wins`` against ``losses`` discordant pairs (1.0 when there are none).

    >>> round(sign_test(0, 2), 3), round(sign_test(0, 6), 4), sign_test(0, 0)
    (0.5, 0.0312, 1.0)
    """
    pairs = wins + losses
    tail = sum(math.comb(pairs, k) for k in range(min(wins, losses) + 1)) / 2**pairs
    return min(1.0, 2 * tail)
