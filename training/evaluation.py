"""Held-out accuracy of a policy: the before/after measurement of a training run.

The policy answers held-out questions through the same graph, budgets and reward as
in training (``config``), batched like the trainer's rollouts. Sampled accuracy
(temperature 1.0, several rollouts per question) is what GRPO optimizes; greedy
accuracy (temperature 0) shows whether the policy's best guess got better or worse.

>>> from langgraph_memagent.training.evaluation import PolicyEvaluation
>>> evaluation = PolicyEvaluation(temperature=1.0, rollouts_per_question=2, rewards=[1.0, 0.0, 1.0, 1.0], seconds=3.0)
>>> evaluation.accuracy, evaluation.standard_error
(75.0, 25.0)

Standard errors treat the question, not the rollout, as the unit: rollouts of one
question are correlated, so counting them as independent would overstate the precision.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from .config import MultiConvGRPOConfig
from .rollout_graphs import default_graph_input, default_reward, rollout_graph
from .rollouts import RewardFn, run_rollouts, score_rollouts
from .trainer import eval_mode, sampling_options


@dataclass
class PolicyEvaluation:
    """The rewards of a policy's rollouts on a question set, at one decoding setting."""

    temperature: float
    """Sampling temperature (0 = greedy)."""
    rollouts_per_question: int
    """Rollouts of each question (question-major in ``rewards``)."""
    rewards: list[float]
    """One reward per rollout, in [0, 1] for the answer rewards."""
    seconds: float
    """Wall time of the rollouts."""
    measures: list[dict[str, Any]] = field(default_factory=list)
    """Per rollout, in ``rewards``' order: tool use and reward parts (:func:`training.tool_use.tool_use_measures`)."""
    answers: list[str | None] = field(default_factory=list)
    """Per rollout, in ``rewards``' order: the graph's answer (``None``: none given), for shortcut checks."""

    @property
    def accuracy(self) -> float:
        """Mean reward in percent."""
        return 100.0 * sum(self.rewards) / len(self.rewards) if self.rewards else 0.0

    @property
    def standard_error(self) -> float:
        """Standard error of ``accuracy`` in points, over the per-question mean rewards."""
        return 100.0 * _standard_error(question_means(self.rewards, self.rollouts_per_question))

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> PolicyEvaluation:
        """The evaluation :meth:`to_dict` wrote (its derived fields are recomputed, not read)."""
        return cls(
            fields["temperature"], fields["rollouts_per_question"], fields["rewards"], fields["seconds"], fields.get("measures", []),
            fields.get("answers", []),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with ``accuracy``."""
        return {**asdict(self), "accuracy": self.accuracy, "standard_error": self.standard_error}


def question_means(rewards: Sequence[float], rollouts_per_question: int) -> list[float]:
    """Mean reward of each question, from question-major ``rewards``.

    >>> question_means([1.0, 0.0, 1.0, 1.0], 2)
    [0.5, 1.0]
    """
    if rollouts_per_question < 1 or len(rewards) % rollouts_per_question:
        raise ValueError(f"{len(rewards)} rewards do not split into questions of {rollouts_per_question} rollouts")
    return [statistics.fmean(rewards[i : i + rollouts_per_question]) for i in range(0, len(rewards), rollouts_per_question)]


def paired_gain(before: PolicyEvaluation, after: PolicyEvaluation) -> tuple[float, float]:
    """Accuracy gain from ``before`` to ``after`` on the same questions, and its paired standard error (points).

    Pairing by question removes the spread between easy and hard questions from the error.

    >>> before = PolicyEvaluation(1.0, 2, [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], 1.0)
    >>> after = PolicyEvaluation(1.0, 2, [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], 1.0)
    >>> gain, error = paired_gain(before, after)
    >>> round(gain, 1), round(error, 1)
    (50.0, 0.0)
    """
    before_means = question_means(before.rewards, before.rollouts_per_question)
    after_means = question_means(after.rewards, after.rollouts_per_question)
    if len(before_means) != len(after_means):
        raise ValueError(f"before has {len(before_means)} questions, after {len(after_means)}: not the same question set")
    differences = [b - a for a, b in zip(before_means, after_means)]
    return after.accuracy - before.accuracy, 100.0 * _standard_error(differences)


def paired_measure(before: PolicyEvaluation, after: PolicyEvaluation, name: str) -> dict[str, float | int] | None:
    """A tool-use measure before and after on the same questions: both means, the change and its paired standard error.

    Each question's value is the mean over its rollouts that have the measure (evidence
    recall needs evidence ids, the valid-call rate a call); questions without it on either
    side are left out (``questions`` counts the pairs). None when no question has it on both.

    >>> before = PolicyEvaluation(0.0, 1, [0.0, 0.0], 1.0, [{"f1": 0.0}, {"f1": 0.5}])
    >>> after = PolicyEvaluation(0.0, 1, [0.0, 0.0], 1.0, [{"f1": 0.5}, {"f1": 0.5}])
    >>> paired_measure(before, after, "f1")
    {'before': 0.25, 'after': 0.5, 'change': 0.25, 'standard_error': 0.25, 'questions': 2}
    """
    def per_question(evaluation: PolicyEvaluation) -> list[float | None]:
        size = evaluation.rollouts_per_question
        measures = evaluation.measures or [{}] * len(evaluation.rewards)
        means = []
        for start in range(0, len(measures), size):
            values = [m[name] for m in measures[start : start + size] if isinstance(m.get(name), (int, float))]
            means.append(statistics.fmean(values) if values else None)
        return means

    pairs = [(b, a) for b, a in zip(per_question(before), per_question(after), strict=True) if b is not None and a is not None]
    if not pairs:
        return None
    return {
        "before": statistics.fmean(b for b, _ in pairs),
        "after": statistics.fmean(a for _, a in pairs),
        "change": statistics.fmean(a - b for b, a in pairs),
        "standard_error": _standard_error([a - b for b, a in pairs]),
        "questions": len(pairs),
    }


def _standard_error(values: Sequence[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def evaluate_policy(
    model: Any,
    tokenizer: Any,
    records: Sequence[dict[str, Any]],
    config: MultiConvGRPOConfig,
    *,
    temperature: float,
    rollouts_per_question: int = 1,
    reward_fn: RewardFn | None = None,
    progress: bool = False,
) -> PolicyEvaluation:
    """Run ``config.graph`` with ``model`` on every record ``rollouts_per_question`` times and score it.

    Args:
        model: the policy module (PEFT-wrapped or not); generation uses its current weights.
        tokenizer: its tokenizer.
        records: rows like the training data (``question``, ``document``, ``answers``,
            ``distractors``), e.g. :func:`generate_samples` with another seed.
        config: the training config: graph, budgets, ``top_p``, the reward
            (:func:`default_reward`) and the graph's input (with ``reading_memory``, the
            reading step alone) come from it.
        temperature: 0 for greedy decoding, else the sampling temperature.
        rollouts_per_question: samples per question (1 is enough when greedy).
        reward_fn: overrides the config's reward.
        progress: show a progress bar of finished rollouts on stderr.
    """
    from ..agents.local_model import LocalChatModel

    if rollouts_per_question < 1:
        raise ValueError(f"rollouts_per_question must be >= 1, got {rollouts_per_question!r}")
    if not records:
        raise ValueError("records is empty: nothing to evaluate")
    chat = LocalChatModel.from_model(
        model,
        tokenizer,
        temperature=temperature,
        top_p=config.top_p,
        **sampling_options(config),
        max_tokens=config.max_completion_length,
        max_batch_size=config.generation_max_batch_size,
    )
    graph, graph_input = rollout_graph(chat, config, tokenizer), default_graph_input(config)
    rows = [record for record in records for _ in range(rollouts_per_question)]
    groups = [index for index in range(len(records)) for _ in range(rollouts_per_question)]
    started = time.perf_counter()
    with torch.no_grad(), eval_mode(model):
        rollouts = run_rollouts(
            graph,
            [graph_input(row) for row in rows],
            groups,
            progress=f"evaluating (T={temperature:g})" if progress else None,
            served_by=chat.engine,
            max_concurrency=config.rollout_concurrency or None,
        )
    score_rollouts(rollouts, rows, reward_fn or default_reward(config), config.graph)
    return PolicyEvaluation(
        temperature, rollouts_per_question, [r.reward for r in rollouts], time.perf_counter() - started, [r.measures for r in rollouts],
        [r.output.get("answer") for r in rollouts],
    )


__all__ = ["PolicyEvaluation", "evaluate_policy", "paired_gain", "paired_measure", "question_means"]
