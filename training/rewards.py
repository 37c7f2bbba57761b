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
from dataclasses import dataclass, field
from typing import Any, Callable

from ..evals.locomo_scoring import F1_VARIANTS, JudgeVerdict, LLMJudge, f1
from ..evals.scoring import METRICS, gold_strings, normalize_answer, score


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


# ---------------------------------------------------------------------------------------
# AgeMem: task + context + memory, with penalties
# ---------------------------------------------------------------------------------------


@dataclass
class AgeMemRewardConfig:
    """Weights and penalties of the AgeMem composite reward.

    AgeMem (arXiv 2601.01885) sums weighted task, context and memory rewards and adds
    penalties for too-long dialogues and context overflow; its exact component formulas
    are not reproduced here (the paper text was not available), so the components are this
    package's definitions (see :func:`agemem_reward`). Equal weights follow the paper; the
    penalty sizes are ours.
    """

    task_weight: float = field(default=1 / 3, metadata={"help": "Weight of the answer score (AgeMem: equal weights)."})
    context_weight: float = field(default=1 / 3, metadata={"help": "Weight of 1 - used/limit context fraction."})
    memory_weight: float = field(default=1 / 3, metadata={"help": "Weight of the gold-evidence coverage of memory items."})
    turn_penalty: float = field(default=0.5, metadata={"help": "Subtracted when the dialogue used more turns than its limit."})
    overflow_penalty: float = field(default=0.5, metadata={"help": "Subtracted when the context overflowed its limit."})
    task_metric: str = field(default="f1", metadata={"help": f"evals.scoring metric for the task component, one of {METRICS}."})

    def __post_init__(self) -> None:
        if self.task_metric not in METRICS:
            raise ValueError(f"unknown task_metric {self.task_metric!r}; expected one of: {', '.join(METRICS)}")
        for name in ("task_weight", "context_weight", "memory_weight", "turn_penalty", "overflow_penalty"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class AgeMemRewardParts:
    """The components of one AgeMem reward, each in [0, 1], the penalty, and the total."""

    task: float
    context: float
    memory: float
    penalty: float
    total: float


def memory_coverage(memory_items: Sequence[str], evidence: Sequence[str]) -> float:
    """Mean over evidence texts of the best fraction of the text's tokens found in one item.

    Tokens are SQuAD-normalized (:func:`evals.scoring.normalize_answer`). An evidence text
    with no tokens is skipped; no evidence at all scores 0.

    >>> memory_coverage(["Mel painted a sunset in May"], ["a sunset", "the lake trip"])
    0.5
    """
    scores = []
    for text in evidence:
        wanted = set(normalize_answer(str(text)).split())
        if not wanted:
            continue
        scores.append(max((len(wanted & set(normalize_answer(item).split())) / len(wanted) for item in memory_items), default=0.0))
    return sum(scores) / len(scores) if scores else 0.0


def agemem_reward(
    answer: str | None,
    golds: Sequence[str | int | float],
    *,
    context_tokens: int,
    context_limit: int,
    turns: int,
    turn_limit: int,
    overflowed: bool = False,
    memory_items: Sequence[str] = (),
    evidence: Sequence[str] | None = None,
    task_score: float | None = None,
    config: AgeMemRewardConfig | None = None,
) -> AgeMemRewardParts:
    """AgeMem's composite terminal reward from plain run values.

    * task: ``task_score`` when given (e.g. an LLM judge's 1/0), else
      ``evals.scoring.score(answer, golds, config.task_metric)``; no answer scores 0;
    * context: ``1 - context_tokens / context_limit`` (clipped to [0, 1]), the share of the
      window left free at the end; 0 when the run overflowed or gave no answer, so an agent
      cannot earn it by doing nothing;
    * memory: :func:`memory_coverage` of ``evidence`` (default: the golds) by the long-term
      memory items;
    * penalty: ``turn_penalty`` when ``turns > turn_limit``, plus ``overflow_penalty`` when
      ``overflowed`` or ``context_tokens > context_limit``.

    The total is the weighted sum minus the penalty. As in AgeMem's step-wise GRPO, this one
    terminal value is the reward of every step of the episode: the trainer gives each LLM
    call of a rollout its rollout's (group-normalized) advantage.

    >>> parts = agemem_reward("a sunset", ["a sunset"], context_tokens=500, context_limit=1000,
    ...                       turns=4, turn_limit=10, memory_items=["Mel painted a sunset"])
    >>> round(parts.task, 2), parts.context, parts.memory, parts.penalty, round(parts.total, 4)
    (1.0, 0.5, 1.0, 0.0, 0.8333)
    """
    config = config or AgeMemRewardConfig()
    if context_limit <= 0 or turn_limit <= 0:
        raise ValueError(f"context_limit and turn_limit must be positive, got {context_limit!r} and {turn_limit!r}")
    gold_list = gold_strings(golds)
    answered = _answered(answer)
    if task_score is not None:
        task = float(task_score)
    else:
        task = score(answer, gold_list, config.task_metric) if answered else 0.0
    overflowed = bool(overflowed) or context_tokens > context_limit
    context = 0.0 if overflowed or not answered else min(1.0, max(0.0, 1.0 - context_tokens / context_limit))
    memory = memory_coverage([str(item) for item in memory_items], gold_list if evidence is None else list(evidence))
    penalty = (config.turn_penalty if turns > turn_limit else 0.0) + (config.overflow_penalty if overflowed else 0.0)
    total = config.task_weight * task + config.context_weight * context + config.memory_weight * memory - penalty
    return AgeMemRewardParts(task=task, context=context, memory=memory, penalty=penalty, total=total)


def _item_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and "content" in item:
        return str(item["content"])
    raise ValueError(f"memory item must be a string or a dict with 'content', got {item!r}")


def evidence_texts(sample: dict[str, Any]) -> list[str] | None:
    """The texts of a LoCoMo sample's evidence turns (``meta["evidence"]`` dia_ids looked up in
    ``meta["turns"]``), or ``None`` when the sample has no such metadata.

    >>> evidence_texts({"meta": {"evidence": ["D1:2"], "turns": [{"dia_id": "D1:2", "text": "I painted a sunset."}]}})
    ['I painted a sunset.']
    """
    meta = sample.get("meta") if isinstance(sample.get("meta"), dict) else {}
    if not meta.get("evidence") or not meta.get("turns"):
        return None
    by_id = {turn.get("dia_id"): turn.get("text", "") for turn in meta["turns"]}
    return [by_id[dia_id] for dia_id in meta["evidence"] if dia_id in by_id] or None


class AgeMemReward:
    """AgeMem's composite reward for the trainer: ``reward(graph_output, sample) -> float``.

    Reads from the graph output (``build_agemem_qa_graph`` supplies these): ``answer``,
    ``context_tokens`` (tokens in the context at the end), ``stage_turns`` or ``turns`` (an
    int, or a dict of per-stage counts that is summed), ``overflow_trims`` (> 0 means the
    context overflowed) or ``overflowed``, ``memory_items`` (strings or dicts with
    ``content``), and optionally ``context_limit`` / ``turn_limit`` (else the ones given
    here) and ``task_score``. The evidence is the sample's LoCoMo evidence turns when present
    (:func:`evidence_texts`), else its golds. ``last_parts`` keeps the latest breakdown.

    >>> reward = AgeMemReward(context_limit=1000, turn_limit=10)
    >>> out = {"answer": "a sunset", "context_tokens": 500, "turns": {"stage1": 6, "stage3": 6}, "memory_items": []}
    >>> round(reward(out, {"answers": ["a sunset"]}), 4)  # 1/3 task + 1/6 context - 0.5 (12 turns > 10)
    0.0
    """

    def __init__(self, *, context_limit: int | None = None, turn_limit: int | None = None, config: AgeMemRewardConfig | None = None):
        self.context_limit = context_limit
        self.turn_limit = turn_limit
        self.config = config or AgeMemRewardConfig()
        self.last_parts: AgeMemRewardParts | None = None
        self.__name__ = "agemem_reward"  # TRL logs rewards under the function's name

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        limits = {"context_limit": output.get("context_limit", self.context_limit), "turn_limit": output.get("turn_limit", self.turn_limit)}
        missing = [name for name, value in limits.items() if value is None]
        turns = output.get("stage_turns", output.get("turns"))
        missing += [name for name, value in (("context_tokens", output.get("context_tokens")), ("stage_turns or turns", turns)) if value is None]
        if missing:
            raise ValueError(f"AgeMem reward needs {', '.join(missing)} (from the graph output or the reward's options); output keys: {sorted(output)}")
        turns = sum(int(count) for count in turns.values()) if isinstance(turns, dict) else int(turns)
        self.last_parts = agemem_reward(
            output.get("answer"),
            gold_answers(sample),
            context_tokens=int(output["context_tokens"]),
            turns=turns,
            overflowed=bool(output.get("overflowed", False)) or int(output.get("overflow_trims") or 0) > 0,
            memory_items=[_item_text(item) for item in output.get("memory_items") or []],
            evidence=evidence_texts(sample),
            task_score=output.get("task_score"),
            config=self.config,
            **limits,
        )
        return self.last_parts.total


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
    "AgeMemReward",
    "AgeMemRewardConfig",
    "AgeMemRewardParts",
    "AnswerReward",
    "JudgeFreeSumerReward",
    "SubmittedAnswersOnly",
    "SumerReward",
    "agemem_reward",
    "evidence_texts",
    "gold_answers",
    "memory_coverage",
    "sumer_reward",
]
