"""Measuring graphs: long-context tasks (RULER, synthetic multi-hop QA), loaders for real data files,
scoring (LoCoMo too), and the ``compare`` harness with its results file and report."""

from ..graphs.registry import register_graph
from .harness import ComparisonConfig, run_comparison
from .loaders import load_hotpotqa, load_locomo, load_memagent_eval, load_records, load_ruler_jsonl, load_squad
from .records import Sample
from .ruler import TASKS, generate_task, niah_single_1, write_memagent_eval, write_ruler_jsonl
from .scoring import METRICS, Metric, score


__all__ = [
    "ComparisonConfig",
    "METRICS",
    "Metric",
    "Sample",
    "TASKS",
    "generate_task",
    "load_hotpotqa",
    "load_locomo",
    "load_memagent_eval",
    "load_records",
    "load_ruler_jsonl",
    "load_squad",
    "niah_single_1",
    "register_graph",
    "run_comparison",
    "score",
    "write_memagent_eval",
    "write_ruler_jsonl",
]
