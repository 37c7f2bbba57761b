r"""Rollout rewards: score a graph run's final reply against the sample's gold answers.

MemAgent (arXiv 2507.02259) rewards only the final answer of a rollout, with the
strict verifier of its reference code (``strict_boxed``: the last ``\boxed{}`` must
equal a gold). That is the default. The lenient metrics of :mod:`evals.scoring` are
selectable for models that never write ``\boxed{}`` (the embedded SmolLM2-135M: 0 of
16 sampled answers boxed, environment.md), scored on the extracted answer, or on the
whole reply when nothing could be extracted.

A lenient substring metric can be gamed by replying with every candidate at once
("1234567 or 7654321 ..."). When a sample lists the values of its distractor needles
(``distractors``), a reply that names any of them scores 0, so listing everything never pays.

>>> reward = AnswerReward("strict_boxed")
>>> reward({"response": r"so \boxed{42}", "answer": "42"}, {"answers": ["42"]})
1.0
>>> lenient = AnswerReward("string_match_all")
>>> lenient({"response": "The number is 42.", "answer": None}, {"answers": ["42"]})
1.0
>>> lenient({"response": "42 or 17", "answer": None}, {"answers": ["42"], "distractors": ["17"]})
0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..evals.scoring import METRICS, score


def gold_answers(sample: dict[str, Any]) -> list[str]:
    """The gold answers of a sample in either supported shape.

    This package's ``Sample`` rows carry ``answers``; MemAgent's training files carry
    ``reward_model.ground_truth`` (a string or a list).

    >>> gold_answers({"reward_model": {"ground_truth": "Paris"}})
    ['Paris']
    >>> gold_answers({"question": "q"})
    Traceback (most recent call last):
    ...
    ValueError: sample has no gold answers: expected an 'answers' list or 'reward_model.ground_truth'; keys: ['question']
    """
    answers = sample.get("answers")
    if answers is None and isinstance(sample.get("reward_model"), dict):
        answers = sample["reward_model"].get("ground_truth")
    if answers is None:
        raise ValueError(
            "sample has no gold answers: expected an 'answers' list or 'reward_model.ground_truth'; "
            f"keys: {sorted(sample)}"
        )
    if isinstance(answers, str):
        return [answers]
    return [str(answer) for answer in answers]


def _distractors(sample: dict[str, Any]) -> Sequence[str]:
    meta = sample.get("meta") if isinstance(sample.get("meta"), dict) else {}
    return [str(value) for value in (sample.get("distractors") or meta.get("distractors") or [])]


class AnswerReward:
    """Reward of a rollout from its final reply: ``reward(graph_output, sample) -> float``.

    Args:
        metric: ``"strict_boxed"`` (MemAgent's training verifier, the default) or a
            lenient metric of :data:`evals.scoring.METRICS`.
        penalize_distractors: lenient metrics only: a reply naming a distractor value
            of the sample scores 0.
    """

    def __init__(self, metric: str = "strict_boxed", *, penalize_distractors: bool = True):
        if metric not in METRICS:
            raise ValueError(f"unknown reward metric {metric!r}; expected one of: {', '.join(METRICS)}")
        self.metric = metric
        self.penalize_distractors = penalize_distractors
        self.__name__ = f"answer_reward_{metric}"  # TRL logs rewards under the function's name

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        golds = gold_answers(sample)
        response = output.get("response") or ""
        if self.metric == "strict_boxed":
            return score(response, golds, "strict_boxed")
        prediction = output.get("answer") or response
        if self.penalize_distractors:
            lowered, gold_set = prediction.lower(), {gold.lower() for gold in golds}
            if any(value.lower() in lowered for value in _distractors(sample) if value.lower() not in gold_set):
                return 0.0
        return score(prediction, golds, self.metric)


__all__ = ["AnswerReward", "gold_answers"]
