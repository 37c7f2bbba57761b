r"""Rollout rewards: score a graph run's final reply against the sample's gold answers.

MemAgent (arXiv 2507.02259) rewards only the final answer of a rollout, with the
strict verifier of its reference code (``strict_boxed``: the last ``\boxed{}`` must
equal a gold). That is the default. The lenient metrics of :mod:`evals.scoring` are
selectable for models that never write ``\boxed{}`` (the embedded SmolLM2-135M: 0 of
16 sampled answers boxed, measured), scored on the extracted answer, or on the
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

import logging
from collections.abc import Sequence
from typing import Any, Callable

from ..evals.locomo_scoring import F1_VARIANTS, JudgeVerdict, LLMJudge, f1
from ..evals.records import answer_mode
from ..evals.scoring import METRICS, score, strict_score


logger = logging.getLogger(__name__)


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


def _all_of(sample: dict[str, Any]) -> bool:
    """Whether a sample asks for every gold (``metric`` ``"all"``); a metric outside ``"any"``/``"all"`` raises,
    so a misspelt one never falls back to any-of silently."""
    return sample.get("metric") is not None and answer_mode(sample["metric"], "sample metric") == "all"


def _distractors(sample: dict[str, Any]) -> Sequence[str]:
    meta = sample.get("meta") if isinstance(sample.get("meta"), dict) else {}
    return [str(value) for value in (sample.get("distractors") or meta.get("distractors") or [])]


class AnswerReward:
    r"""Reward of a rollout from its final reply: ``reward(graph_output, sample) -> float``.

    ``strict_boxed`` follows the final prompt: it reads the ``\boxed{}`` answer, or with
    ``final_prompt="answer_is"`` the "the answer is" answer, with the same strictness
    (:func:`evals.scoring.strict_score`). A sample whose ``metric`` is ``"all"`` (all-of
    RULER tasks) with several golds earns MemAgent's Eq. 7, the fraction of its golds the answer contains.

    Args:
        metric: ``"strict_boxed"`` (MemAgent's training verifier, the default) or a
            lenient metric of :data:`evals.scoring.METRICS`.
        final_prompt: the graph's final prompt style, ``"boxed"`` or ``"answer_is"``.
        penalize_distractors: a reply naming a distractor value of the sample scores 0
            (lenient metrics, and the strict one on all-of samples, where containing
            more values could only pay).

    >>> AnswerReward()({"response": r"\boxed{1234567, 7654321}"}, {"answers": ["1234567", "7654321"], "metric": "all"})
    1.0
    >>> AnswerReward(final_prompt="answer_is")({"response": "So the answer is 42."}, {"answers": ["42"]})
    1.0
    """

    def __init__(self, metric: str = "strict_boxed", *, final_prompt: str = "boxed", penalize_distractors: bool = True):
        if metric not in METRICS:
            raise ValueError(f"unknown reward metric {metric!r}; expected one of: {', '.join(METRICS)}")
        if final_prompt not in ("boxed", "answer_is"):
            raise ValueError(f"final_prompt must be 'boxed' or 'answer_is', got {final_prompt!r}")
        self.metric, self.final_prompt = metric, final_prompt
        self.penalize_distractors = penalize_distractors
        self.__name__ = f"answer_reward_{metric}"  # TRL logs rewards under the function's name

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        golds = gold_answers(sample)
        response = output.get("response") or ""
        all_of = _all_of(sample)
        prediction = output.get("answer") or response
        if self.penalize_distractors and (all_of or self.metric != "strict_boxed"):
            lowered, gold_set = prediction.lower(), {gold.lower() for gold in golds}
            if any(value.lower() in lowered for value in _distractors(sample) if value.lower() not in gold_set):
                return 0.0
        if self.metric == "strict_boxed":
            return strict_score(response, golds, style=self.final_prompt, all_of=all_of)
        return score(prediction, golds, self.metric)


# ---------------------------------------------------------------------------------------
# SUMER: J x F1, -1 without an answer
# ---------------------------------------------------------------------------------------


def _answered(answer: Any) -> bool:
    return answer is not None and bool(str(answer).strip())


def _verdict_score(verdict: JudgeVerdict | bool | float | None) -> float | None:
    if isinstance(verdict, JudgeVerdict):
        return verdict.score
    if verdict is None:
        return None
    if isinstance(verdict, (bool, int, float)) and verdict in (0, 1):
        return float(verdict)
    raise ValueError(f"judge verdict must be a JudgeVerdict, a bool, 0/1 or None, got {verdict!r}")


def sumer_reward(
    answer: str | None,
    golds: Sequence[str | int | float],
    verdict: JudgeVerdict | bool | float | None,
    *,
    f1_variant: str = "mem0",
) -> float:
    """SUMER's episode reward: ``J x F1`` for a submitted answer, ``-1`` without one.

    ``J`` is the LLM judge's 1/0 and ``F1`` the token F1 against the golds (Mem0's scorer
    by default, the one behind SUMER's tables; see :func:`evals.locomo_scoring.f1`).

    An unreadable judge verdict (``None`` or a :class:`JudgeVerdict` with ``correct=None``)
    gives 0.0, the same as WRONG: the answer was submitted, so the -1 reserved for not
    answering would punish the policy for the judge's failure, and paying F1 alone would
    reward answers no judge confirmed. :class:`SumerReward` counts these cases.

    >>> round(sumer_reward("She painted a sunset", ["a sunset"], True), 3)  # F1: P = 2/4, R = 2/2
    0.667
    >>> sumer_reward(None, ["a sunset"], None), sumer_reward("a lake", ["a sunset"], False)
    (-1.0, 0.0)
    """
    if not _answered(answer):
        return -1.0
    judged = _verdict_score(verdict)
    if judged is None:
        return 0.0
    return judged * f1(answer, golds, variant=f1_variant)


class SumerReward:
    """SUMER's reward for the trainer: ``reward(graph_output, sample) -> float``.

    The verdict is ``graph_output["judge"]`` when the caller already judged the answer
    (a :class:`JudgeVerdict` or a bool), otherwise ``judge`` is asked. :meth:`batch`
    judges many rollouts in one ``model.batch`` call. Unreadable verdicts score 0.0 (see
    :func:`sumer_reward`), are logged, and are counted in ``unjudged``.

    Args:
        judge: an :class:`evals.locomo_scoring.LLMJudge` on any chat model; may be ``None``
            when every output carries its verdict.
        f1_variant: ``"mem0"`` (SUMER's tables) or ``"locomo"``.

    >>> reward = SumerReward()
    >>> reward({"answer": "7 May 2023", "judge": True}, {"question": "When?", "answers": ["7 May 2023"]})
    1.0
    """

    def __init__(self, judge: LLMJudge | None = None, *, f1_variant: str = "mem0"):
        if f1_variant not in F1_VARIANTS:
            raise ValueError(f"unknown F1 variant {f1_variant!r}; expected one of: {', '.join(F1_VARIANTS)}")
        self.judge = judge
        self.f1_variant = f1_variant
        self.unjudged = 0
        self.__name__ = "sumer_reward"  # TRL logs rewards under the function's name

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        return self.batch([output], [sample])[0]

    def batch(self, outputs: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]) -> list[float]:
        """Rewards of many rollouts; the ones without a verdict are judged together."""
        if len(outputs) != len(samples):
            raise ValueError(f"{len(outputs)} outputs but {len(samples)} samples")
        golds = [gold_answers(sample) for sample in samples]
        verdicts: list[Any] = [output.get("judge") for output in outputs]
        to_judge = [i for i, output in enumerate(outputs) if "judge" not in output and _answered(output.get("answer"))]
        if to_judge:
            if self.judge is None:
                raise ValueError("SumerReward has no judge and the graph output carries no 'judge' verdict")
            judged = self.judge.batch([(samples[i].get("question", ""), golds[i], outputs[i]["answer"]) for i in to_judge])
            for index, verdict in zip(to_judge, judged, strict=True):
                verdicts[index] = verdict
        rewards = []
        for output, gold, verdict in zip(outputs, golds, verdicts, strict=True):
            if _answered(output.get("answer")) and _verdict_score(verdict) is None:
                self.unjudged += 1
                logger.warning("SUMER reward: unreadable judge verdict scored 0.0 (%s)", getattr(verdict, "error", "no verdict"))
            rewards.append(sumer_reward(output.get("answer"), gold, verdict, f1_variant=self.f1_variant))
        return rewards


class JudgeFreeSumerReward:
    """SUMER's reward with every verdict taken as CORRECT: token F1 of a submitted answer, -1 without one.

    The fallback chosen explicitly with ``reward_metric="f1"`` when no LLM judge is
    available; SUMER itself multiplies F1 by an LLM judge's 0/1 (:class:`SumerReward`).

    >>> reward = JudgeFreeSumerReward()
    >>> reward({"answer": "a sunset"}, {"answers": ["a sunset"]}), reward({"answer": None}, {"answers": ["x"]})
    (1.0, -1.0)
    """

    def __init__(self, *, f1_variant: str = "mem0"):
        self.f1_variant = f1_variant
        self.__name__ = "sumer_f1_reward"  # TRL logs rewards under the function's name

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        return sumer_reward(output.get("answer"), gold_answers(sample), True, f1_variant=self.f1_variant)


class SubmittedAnswersOnly:
    """SUMER's rule on top of a reward: an answer counts only when the episode ended with ``submit_answer``.

    A forced answer at the turn cap or context limit, or the text of a turn without a tool
    call, is scored as no answer (SUMER: -1). ``batch`` keeps the wrapped reward's batching.

    >>> reward = SubmittedAnswersOnly(JudgeFreeSumerReward())
    >>> gold = {"answers": ["Oslo"]}
    >>> reward({"answer": "Oslo", "stop_reason": "submitted"}, gold), reward({"answer": "Oslo", "stop_reason": "turn_limit"}, gold)
    (1.0, -1.0)
    """

    def __init__(self, reward: Callable[[dict[str, Any], dict[str, Any]], float]):
        self.reward = reward
        self.__name__ = f"submitted_{getattr(reward, '__name__', 'reward')}"  # TRL logs rewards under this name

    @staticmethod
    def _as_scored(output: dict[str, Any]) -> dict[str, Any]:
        return output if output.get("stop_reason") == "submitted" else {**output, "answer": None}

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        return self.reward(self._as_scored(output), sample)

    def batch(self, outputs: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]) -> list[float]:
        """Rewards of many rollouts, through the wrapped reward's ``batch`` when it has one."""
        scored = [self._as_scored(output) for output in outputs]
        score_batch = getattr(self.reward, "batch", None)
        if callable(score_batch):
            return list(score_batch(scored, samples))
        return [self.reward(output, sample) for output, sample in zip(scored, samples, strict=True)]


__all__ = [
    "AnswerReward",
    "JudgeFreeSumerReward",
    "SubmittedAnswersOnly",
    "SumerReward",
    "gold_answers",
    "sumer_reward",
]
