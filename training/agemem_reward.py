"""AgeMem's composite reward: task, context and memory components with equal weights, minus penalties.

The AgeMem article (arXiv 2601.01885) describes its reward in words, without formulas: a
task reward (answer quality, judged by an LLM), a context reward for the short-term memory
operations (compression, early summarising, keeping query-relevant content) and a memory
reward for the long-term ones (share of useful stored items, useful maintenance, relevance
of retrieved items), equally weighted, minus penalties for too-long dialogues and context
overflow. Each formula below is **our reading of that text**, computed from what the AgeMem
graph records of a rollout (its tool calls with the texts they touched, its contexts):

* **task**: ``task_score`` when a judge gave one, else token F1 against the golds (F1 stands
  in for AgeMem's LLM judge); no answer scores 0;
* **context**, the mean of
  - *compression*: the characters SUMMARY and FILTER freed in the distractor stage over
    those freed plus those left in that stage's final context;
  - *early summarising*: the share of the distractor stage's arriving messages after which
    the agent compressed its context before the next one arrived (as content comes, not
    once it overflows);
  - *query-relevant content kept*: :func:`memory_coverage` of the evidence by the answer
    stage's final context;
* **memory**, the mean of
  - *useful stored items*: the share of the long-term items at the end that are useful
    (an item is useful when it holds at least half the tokens of some evidence text);
  - *useful maintenance*: the share of UPDATE calls that leave a useful item and DELETE
    calls that remove a useless one (left out of the mean when there were none);
  - *retrieval relevance*: the share of RETRIEVE results that are useful items;
* **penalty**: ``turn_penalty`` above the turn limit, plus ``overflow_penalty`` when the
  context overflowed.

The evidence is the sample's LoCoMo evidence turns when it has them, else its golds. A
component whose inputs a caller does not give is ``None`` in :class:`AgeMemRewardParts` and
left out of its mean, never guessed. As in AgeMem's step-wise GRPO, the one terminal value
is the reward of every step of the episode.

>>> parts = agemem_reward("a sunset", ["a sunset"], context_tokens=500, context_limit=1000, turns=4, turn_limit=10,
...                       memory_items=["Mel painted a sunset"], operations=[{"tool": "retrieve_memory", "status": "success",
...                       "stage": "answer", "arrival": 1, "retrieved": ["Mel painted a sunset", "lunch"]}])
>>> parts.task, parts.memory_parts
(1.0, {'useful_items': 1.0, 'maintenance': None, 'retrieval': 0.5})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from ..evals.scoring import METRICS, gold_strings, normalize_answer, score
from .rewards import gold_answers

USEFUL_RECALL = 0.5  # an item is useful when it holds at least this share of some evidence text's tokens
COMPRESSING_TOOLS = ("summarize_context", "filter_context")


@dataclass
class AgeMemRewardConfig:
    """Weights and penalties of the AgeMem composite reward (equal weights: AgeMem; penalty sizes: ours)."""

    task_weight: float = field(default=1 / 3, metadata={"help": "Weight of the answer score (AgeMem: equal weights)."})
    context_weight: float = field(default=1 / 3, metadata={"help": "Weight of the context component (short-term memory)."})
    memory_weight: float = field(default=1 / 3, metadata={"help": "Weight of the memory component (long-term memory)."})
    turn_penalty: float = field(default=0.5, metadata={"help": "Subtracted when the dialogue used more turns than its limit."})
    overflow_penalty: float = field(default=0.5, metadata={"help": "Subtracted when the context overflowed its limit."})
    task_metric: str = field(default="f1", metadata={"help": f"evals.scoring metric standing in for the judge, one of {METRICS}."})

    @classmethod
    def with_task_weight(cls, task_weight: float, **options: Any) -> AgeMemRewardConfig:
        """The config whose answer part weighs ``task_weight`` and whose context and memory parts share the rest equally;
        AgeMem's own equal thirds, exactly, at the default weight.

        >>> AgeMemRewardConfig.with_task_weight(1.0).memory_weight, AgeMemRewardConfig.with_task_weight(1 / 3) == AgeMemRewardConfig()
        (0.0, True)
        """
        if task_weight == cls.task_weight:
            return cls(**options)
        rest = (1 - task_weight) / 2
        return cls(task_weight=task_weight, context_weight=rest, memory_weight=rest, **options)

    def __post_init__(self) -> None:
        if self.task_metric not in METRICS:
            raise ValueError(f"unknown task_metric {self.task_metric!r}; expected one of: {', '.join(METRICS)}")
        for name in ("task_weight", "context_weight", "memory_weight", "turn_penalty", "overflow_penalty"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class AgeMemRewardParts:
    """One AgeMem reward: each component in [0, 1], its sub-components (None: not computable), the penalty, the total."""

    task: float
    context: float
    memory: float
    penalty: float
    total: float
    context_parts: dict[str, float | None] = field(default_factory=dict)  # compression, early_summarising, relevant_kept
    memory_parts: dict[str, float | None] = field(default_factory=dict)  # useful_items, maintenance, retrieval


def _recall(text: str, evidence: str) -> float:
    wanted = set(normalize_answer(evidence).split())
    return len(wanted & set(normalize_answer(text).split())) / len(wanted) if wanted else 0.0


def memory_coverage(memory_items: Sequence[str], evidence: Sequence[str]) -> float:
    """Mean over evidence texts of the best fraction of the text's tokens found in one item.

    Tokens are SQuAD-normalized (:func:`evals.scoring.normalize_answer`). An evidence text
    with no tokens is skipped; no evidence at all scores 0.

    >>> memory_coverage(["Mel painted a sunset in May"], ["a sunset", "the lake trip"])
    0.5
    """
    scores = [max((_recall(item, text) for item in memory_items), default=0.0) for text in evidence if normalize_answer(str(text)).split()]
    return sum(scores) / len(scores) if scores else 0.0


def is_useful(text: str, evidence: Sequence[str]) -> bool:
    """Whether ``text`` holds at least half the tokens of some evidence text.

    >>> is_useful("Ada moved to Paris in May", ["Ada lives in Paris"]), is_useful("lunch", ["Ada lives in Paris"])
    (True, False)
    """
    return any(_recall(text, str(piece)) >= USEFUL_RECALL for piece in evidence)


def evidence_held(memory_items: Sequence[str], evidence: Sequence[str]) -> float:
    """Share of the evidence texts that some item holds (:func:`is_useful` against that text alone).

    >>> evidence_held(["Ann moved to Oslo in May", "lunch"], ["I moved to Oslo!", "I adopted a cat."])
    0.5
    """
    return sum(any(is_useful(item, [text]) for item in memory_items) for text in evidence) / len(evidence) if evidence else 0.0


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _mean(parts: Mapping[str, float | None]) -> float:
    known = [value for value in parts.values() if value is not None]
    return fmean(known) if known else 0.0


def _successful(operations: Sequence[Mapping[str, Any]], *tools: str) -> list[Mapping[str, Any]]:
    return [op for op in operations if op.get("tool") in tools and op.get("status") == "success"]


def retrieved_texts(operations: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts the successful ``retrieve_memory`` calls among ``operations`` returned, in order.

    >>> retrieved_texts([{"tool": "retrieve_memory", "status": "success", "retrieved": ["a", "b"]},
    ...                  {"tool": "retrieve_memory", "status": "error"}, {"tool": "add_memory", "status": "success"}])
    ['a', 'b']
    """
    return [str(text) for op in _successful(operations, "retrieve_memory") for text in op.get("retrieved", [])]


def context_parts(operations: Sequence[Mapping[str, Any]] | None, arrivals: Mapping[str, int] | None,
                  context_chars: Mapping[str, int] | None, final_context: str | None, evidence: Sequence[str]) -> dict[str, float | None]:
    """The context component's three parts (see the module docstring); None where an input is missing."""
    compressions = [op for op in _successful(operations or [], *COMPRESSING_TOOLS) if op.get("stage") == "distract"]
    freed = sum(int(op.get("freed_chars", 0)) for op in compressions)
    kept = None if context_chars is None else context_chars.get("distract")
    arrived = None if arrivals is None else arrivals.get("distract")
    return {
        "compression": None if operations is None or kept is None else (freed / (freed + kept) if freed + kept else 0.0),
        "early_summarising": None if operations is None or not arrived else len({op.get("arrival") for op in compressions}) / arrived,
        "relevant_kept": None if final_context is None else memory_coverage([final_context], evidence),
    }


def memory_parts(operations: Sequence[Mapping[str, Any]] | None, memory_items: Sequence[str], evidence: Sequence[str]) -> dict[str, float | None]:
    """The memory component's three parts (see the module docstring); None where an input is missing."""
    parts: dict[str, float | None] = {"useful_items": _share([is_useful(item, evidence) for item in memory_items]) or 0.0}
    if operations is None:
        return {**parts, "maintenance": None, "retrieval": None}
    maintenance = [is_useful(op.get("content", ""), evidence) for op in _successful(operations, "update_memory")]
    maintenance += [not is_useful(op.get("previous", ""), evidence) for op in _successful(operations, "delete_memory")]
    retrieved = [is_useful(text, evidence) for text in retrieved_texts(operations)]
    return {**parts, "maintenance": _share(maintenance), "retrieval": _share(retrieved) or 0.0}


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
    operations: Sequence[Mapping[str, Any]] | None = None,
    arrivals: Mapping[str, int] | None = None,
    context_chars: Mapping[str, int] | None = None,
    final_context: str | None = None,
    config: AgeMemRewardConfig | None = None,
) -> AgeMemRewardParts:
    """AgeMem's composite terminal reward from a rollout's record (module docstring: the formulas).

    ``operations``, ``arrivals``, ``context_chars`` and ``final_context`` are what the AgeMem
    graph returns as ``memory_operations``, ``arrivals``, ``context_chars`` and
    ``final_context``; ``evidence`` defaults to the golds.
    """
    config = config or AgeMemRewardConfig()
    if context_limit <= 0 or turn_limit <= 0:
        raise ValueError(f"context_limit and turn_limit must be positive, got {context_limit!r} and {turn_limit!r}")
    gold_list = gold_strings(golds)
    evidence = gold_list if evidence is None else [str(text) for text in evidence]
    task = float(task_score) if task_score is not None else (score(answer, gold_list, config.task_metric) if answer and str(answer).strip() else 0.0)
    overflowed = bool(overflowed) or context_tokens > context_limit
    contexts = context_parts(operations, arrivals, context_chars, final_context, evidence)
    memories = memory_parts(operations, [str(item) for item in memory_items], evidence)
    context, memory = _mean(contexts), _mean(memories)
    penalty = (config.turn_penalty if turns > turn_limit else 0.0) + (config.overflow_penalty if overflowed else 0.0)
    total = config.task_weight * task + config.context_weight * context + config.memory_weight * memory - penalty
    return AgeMemRewardParts(task, context, memory, penalty, total, contexts, memories)


def _item_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and "content" in item:
        return str(item["content"])
    raise ValueError(f"memory item must be a string or a dict with 'content', got {item!r}")


def evidence_texts(sample: dict[str, Any]) -> list[str] | None:
    """The texts of a sample's LoCoMo evidence turns (its ``evidence`` dia_ids looked up in its
    ``turns``), or ``None`` when it has no such metadata.

    A training row (:func:`training.data.conversation_records`) carries them at the top level,
    an evaluation sample under ``meta``.

    >>> evidence_texts({"meta": {"evidence": ["D1:2"], "turns": [{"dia_id": "D1:2", "text": "I painted a sunset."}]}})
    ['I painted a sunset.']
    >>> evidence_texts({"evidence": ["D1:2"], "turns": [{"dia_id": "D1:2", "text": "I painted a sunset."}]})
    ['I painted a sunset.']
    """
    holder = sample if "evidence" in sample else sample.get("meta")
    if not isinstance(holder, dict) or not holder.get("evidence") or not holder.get("turns"):
        return None
    by_id = {turn.get("dia_id"): turn.get("text", "") for turn in holder["turns"]}
    return [by_id[dia_id] for dia_id in holder["evidence"] if dia_id in by_id] or None


class AgeMemReward:
    """AgeMem's composite reward for the trainer: ``reward(graph_output, sample) -> float``.

    Reads from the AgeMem QA graph's output: ``answer``, ``context_tokens``, ``stage_turns``
    or ``turns`` (an int, or per-stage counts that are summed), ``overflow_trims`` or
    ``overflowed``, ``memory_items`` (strings or dicts with ``content``),
    ``memory_operations``, ``arrivals``, ``context_chars``, ``final_context``, and optionally
    ``context_limit`` / ``turn_limit`` (else the ones given here) and ``task_score``.
    ``last_parts`` keeps the latest breakdown; :meth:`batch` also sets ``last_components``, each
    rollout's task, context and memory components and penalty, which the trainer logs as
    ``reward/task`` and so on, so the answer's share stays visible on its own.

    >>> reward = AgeMemReward(context_limit=1000, turn_limit=10)
    >>> out = {"answer": "a sunset", "context_tokens": 500, "turns": {"build": 6, "answer": 6}, "memory_items": []}
    >>> round(reward(out, {"answers": ["a sunset"]}), 4)  # 1/3 task - 0.5 (12 turns > 10)
    -0.1667
    """

    def __init__(self, *, context_limit: int | None = None, turn_limit: int | None = None, config: AgeMemRewardConfig | None = None):
        self.context_limit = context_limit
        self.turn_limit = turn_limit
        self.config = config or AgeMemRewardConfig()
        self.last_parts: AgeMemRewardParts | None = None
        self.last_components: list[dict[str, float]] = []
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
            operations=output.get("memory_operations"),
            arrivals=output.get("arrivals"),
            context_chars=output.get("context_chars"),
            final_context=output.get("final_context"),
            config=self.config,
            **limits,
        )
        return self.last_parts.total

    def batch(self, outputs: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]) -> list[float]:
        """Rewards of many rollouts; ``last_components`` gets each one's parts."""
        rewards, self.last_components = [], []
        for output, sample in zip(outputs, samples, strict=True):
            rewards.append(self(output, sample))
            parts = self.last_parts
            self.last_components.append({"task": parts.task, "context": parts.context, "memory": parts.memory, "penalty": parts.penalty})
        return rewards


__all__ = [
    "AgeMemReward",
    "AgeMemRewardConfig",
    "AgeMemRewardParts",
    "agemem_reward",
    "evidence_held",
    "evidence_texts",
    "is_useful",
    "memory_coverage",
    "retrieved_texts",
]
