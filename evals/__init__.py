"""Tasks, scoring and (later) the comparison harness."""

from .ruler import Sample, niah_single_1
from .scoring import METRICS, Metric, score

__all__ = ["METRICS", "Metric", "Sample", "niah_single_1", "score"]
