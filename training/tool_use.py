"""How a tool-using rollout used its tools, and the opt-in evidence shaping for small models.

:func:`tool_use_measures` reads a graph output with its graph's measures (SUMER's
``tool_calls``, ``invalid_tool_calls``, ``searches`` and ``stop_reason``; AgeMem's calls by
tool name, ``memory_operations`` and ``memory_items``) against the row's gold answers and
LoCoMo evidence. The trainer logs their batch means, and the held-out evaluation keeps them
per rollout.

:class:`EvidenceShapedReward` adds credit for searches that retrieve an evidence turn to a
paper reward. It is ours, not a paper's, and off unless asked for
(``evidence_reward_weight``): a 135M model rarely earns SUMER's reward at first, and the
generator's evidence ids say which searches were on the right track. The paper reward stays
visible on its own: every batch keeps both parts (``last_components``), logged as
``reward/paper`` and ``reward/evidence``. :class:`SearchRecallReward` is the search
curriculum's reward (``search_curriculum``): that recall alone, for rollouts without an answer;
:class:`MemoryRecallReward` AgeMem's writing curriculum's (``write_curriculum``): the evidence its stored items hold.

>>> output = {"tool_calls": 3, "invalid_tool_calls": 1, "stop_reason": "submitted", "answer": "Oslo",
...           "searches": [{"hits": ["D1:2", "D3:4"]}, {"hits": ["D2:1"]}]}
>>> measures = tool_use_measures(output, {"answers": ["Oslo"], "evidence": ["D3:4", "D5:1"]}, "sumer")
>>> measures["valid_call_rate"], measures["searches"], measures["evidence_recall"], measures["submitted"], measures["f1"]
(0.75, 2, 0.5, 1.0, 1.0)
>>> measures["search_calls"][1], mean_measures([measures])["searches"], "search_calls" in mean_measures([measures])
({'hits': ['D2:1']}, 2.0, False)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Callable

from ..evals.locomo_scoring import f1
from .agemem_reward import evidence_held, evidence_texts, retrieved_texts
from .rewards import gold_answers


def evidence_recall(searches: Any, evidence: Sequence[str], *, k: int | None = None) -> float | None:
    """Share of ``evidence`` turn ids among the hits of a run's searches (each search's first ``k``); None without evidence.

    >>> evidence_recall([{"hits": ["D1:2", "D3:4"]}], ["D3:4"], k=1), evidence_recall([], ["D3:4"])
    (0.0, 0.0)
    """
    if not evidence:
        return None
    found = {hit for search in searches or () for hit in (search.get("hits") or ())[:k]}
    return len(found & set(evidence)) / len(set(evidence))


def tool_use_measures(output: dict[str, Any], sample: dict[str, Any], graph: str) -> dict[str, Any]:
    """Per-rollout tool use of a run of ``graph``: :func:`sumer_measures`, :func:`agemem_measures`, or none.

    >>> tool_use_measures({"response": "42"}, {"answers": ["42"]}, "memagent")
    {}
    """
    measure = GRAPH_MEASURES.get(graph)
    return measure(output, sample) if measure else {}


def sumer_measures(output: dict[str, Any], sample: dict[str, Any]) -> dict[str, Any]:
    """Per-rollout tool use of a SUMER run: valid-call rate, searches, evidence recall of the searches, submit, F1 of the answer.

    ``valid_call_rate`` is the share of calls the tools ran: not malformed (``invalid_tool_calls``,
    which constrained decoding rules out) nor refused for their arguments (SUMER's
    ``rejected_tool_calls``, e.g. a speaker the conversation does not have); None without calls.
    ``submitted`` is 1.0 when the episode ended with ``submit_answer``; ``f1`` scores whatever
    answer the run returned (Mem0's token F1). ``search_calls`` keeps each search as the graph ran
    it (mode, query, speaker, session, k, hits), so a results file shows what the policy asked;
    the numeric means skip it.
    """
    valid, invalid = output.get("tool_calls") or 0, output.get("invalid_tool_calls") or 0
    rejected = output.get("rejected_tool_calls") or 0
    searches = output.get("searches") or []
    return {
        "valid_call_rate": valid / (valid + rejected + invalid) if valid + rejected + invalid else None,
        "tool_calls": valid + rejected + invalid,
        "invalid_tool_calls": invalid,
        "searches": len(searches),
        "evidence_recall": evidence_recall(searches, sample.get("evidence") or []),
        "submitted": float(output.get("stop_reason") == "submitted"),
        "stop_reason": output.get("stop_reason"),
        "f1": _answer_f1(output, sample),
        "search_calls": list(searches),
    }


def agemem_measures(output: dict[str, Any], sample: dict[str, Any]) -> dict[str, Any]:
    """Per-rollout tool use of an AgeMem run: calls, retrievals, stored items and their recall of the evidence, F1.

    ``tool_calls`` counts every call (AgeMem's output counts them by tool name, ``"invalid"``
    the unparsable ones), ``valid_call_rate`` the share that succeeded (not malformed nor refused,
    e.g. an unknown memory id); ``searches`` are ``retrieve_memory`` calls; ``memory_items`` the
    long-term items when the question came; ``memory_recall`` the share of the evidence turns that
    some stored item holds (at least half of the turn's tokens, AgeMem reward's "useful" rule);
    ``retrieval_recall`` the share of them that the retrievals' results hold, as SUMER's
    ``evidence_recall`` is of its searches. Each recall is None without evidence, the latter
    also without a retrieval.

    >>> output = {"tool_calls": {"add_memory": 2, "retrieve_memory": 1, "invalid": 1}, "answer": "Oslo",
    ...           "memory_operations": [{"tool": "add_memory", "status": "success"}, {"tool": "update_memory", "status": "error"},
    ...                                 {"tool": "retrieve_memory", "status": "success", "retrieved": ["lunch", "I adopted a cat"]}],
    ...           "memory_items": ["Ann moved to Oslo in May", "lunch"]}
    >>> sample = {"answers": ["Oslo"], "evidence": ["D1:1", "D2:3"],
    ...           "turns": [{"dia_id": "D1:1", "text": "I moved to Oslo!"}, {"dia_id": "D2:3", "text": "I adopted a cat."}]}
    >>> measures = agemem_measures(output, sample)
    >>> measures["valid_call_rate"], measures["searches"], measures["memory_items"], measures["memory_recall"], measures["f1"]
    (0.5, 1, 2, 0.5, 1.0)
    >>> measures["retrieval_recall"]
    0.5
    """
    counts = output["tool_calls"]
    calls = sum(counts.values())
    succeeded = sum(operation.get("status") == "success" for operation in output.get("memory_operations") or ())
    items = [str(item) for item in output.get("memory_items") or ()]
    evidence = evidence_texts(sample)
    retrieved = retrieved_texts(output.get("memory_operations") or ())
    return {
        "valid_call_rate": succeeded / calls if calls else None,
        "tool_calls": calls,
        "invalid_tool_calls": counts.get("invalid", 0),
        "searches": counts.get("retrieve_memory", 0),
        "memory_items": len(items),
        "memory_recall": evidence_held(items, evidence) if evidence else None,
        "retrieval_recall": evidence_held(retrieved, evidence) if evidence and counts.get("retrieve_memory") else None,
        "f1": _answer_f1(output, sample),
    }


GRAPH_MEASURES: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {"sumer": sumer_measures, "agemem": agemem_measures}
"""Each tool graph's per-rollout measures; graphs not named here (MemAgent's) have none."""


def _answer_f1(output: dict[str, Any], sample: dict[str, Any]) -> float:
    answer = output.get("answer")
    return f1(answer, gold_answers(sample)) if answer else 0.0


def mean_measures(measures: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The mean of each numeric measure over the rollouts that have it.

    >>> mean_measures([{"f1": 1.0, "valid_call_rate": None}, {"f1": 0.0, "valid_call_rate": 1.0}])
    {'f1': 0.5, 'valid_call_rate': 1.0}
    """
    names = dict.fromkeys(name for measure in measures for name in measure)
    means = {}
    for name in names:
        values = [m[name] for m in measures if isinstance(m.get(name), (int, float)) and not isinstance(m.get(name), bool)]
        if values:
            means[name] = sum(values) / len(values)
    return means


class EvidenceShapedReward:
    """A paper reward plus ``weight`` x the evidence recall of the rollout's searches (ours, opt-in).

    ``batch`` keeps the wrapped reward's batching (one judge call per batch). Each call sets
    ``last_components``: per rollout, ``{"paper": ..., "evidence": ...}`` (the recall before
    weighting; 0 for rows without evidence ids).

    >>> from langgraph_memagent.training.rewards import JudgeFreeSumerReward
    >>> reward = EvidenceShapedReward(JudgeFreeSumerReward(), weight=0.5)
    >>> reward({"answer": None, "searches": [{"hits": ["D1:1"]}]}, {"answers": ["x"], "evidence": ["D1:1"]})
    -0.5
    >>> reward.last_components
    [{'paper': -1.0, 'evidence': 1.0}]
    """

    def __init__(self, reward: Callable[[dict[str, Any], dict[str, Any]], float], *, weight: float):
        if not weight > 0:
            raise ValueError(f"evidence shaping weight must be > 0, got {weight!r}")
        self.reward, self.weight = reward, weight
        self.last_components: list[dict[str, float]] = []
        self.__name__ = f"{getattr(reward, '__name__', 'reward')}_evidence_shaped"  # TRL logs rewards under this name

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        return self.batch([output], [sample])[0]

    def batch(self, outputs: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]) -> list[float]:
        """Shaped rewards of many rollouts, through the wrapped reward's ``batch`` when it has one."""
        score_batch = getattr(self.reward, "batch", None)
        if callable(score_batch):
            paper = [float(value) for value in score_batch(outputs, samples)]
        else:
            paper = [float(self.reward(output, sample)) for output, sample in zip(outputs, samples, strict=True)]
        recalls = [evidence_recall(output.get("searches"), sample.get("evidence") or []) or 0.0 for output, sample in zip(outputs, samples)]
        self.last_components = [{"paper": p, "evidence": r} for p, r in zip(paper, recalls)]
        return [p + self.weight * r for p, r in zip(paper, recalls)]


class CurriculumRecallReward(ABC):
    """A curriculum's reward: one recall per rollout against the row's evidence ids, which every row must have.

    Subclasses name the reward (``name``), its logged part (``component``, logged as
    ``reward/<component>``) and what it scores (``scores``, for the refusal), and compute ``recall``.
    """

    name = component = scores = ""

    def __init__(self) -> None:
        self.last_components: list[dict[str, float]] = []
        self.__name__ = self.name  # TRL logs rewards under this name

    @abstractmethod
    def recall(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        """The share of ``sample``'s evidence that ``output`` reached, in [0, 1]."""

    def __call__(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        return self.batch([output], [sample])[0]

    def batch(self, outputs: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]) -> list[float]:
        """The recalls of many rollouts."""
        missing = [sample.get("question") for sample in samples if not sample.get("evidence")]
        if missing:
            raise ValueError(
                f"{self.scores} against each row's evidence ids; {len(missing)} "
                f"row{'s have' if len(missing) > 1 else ' has'} none, e.g. question {missing[0]!r}"
            )
        recalls = [self.recall(output, sample) for output, sample in zip(outputs, samples, strict=True)]
        self.last_components = [{self.component: recall} for recall in recalls]
        return recalls


class SearchRecallReward(CurriculumRecallReward):
    """The search curriculum's reward (ours, opt-in): the evidence recall of the rollout's searches alone.

    A rollout of that curriculum ends after its tool-calling turns, without an answer, so
    SUMER's paper reward would be -1 for every one of them and teach nothing; the generator's
    evidence ids say which searches found what the question needs. A rollout that submits
    instead of searching scores 0. A row without evidence ids cannot be scored and is refused.
    ``last_components`` logs the recall as ``reward/evidence``.

    >>> reward = SearchRecallReward()
    >>> sample = {"answers": ["Oslo"], "evidence": ["D1:1", "D2:3"]}
    >>> reward({"searches": [{"hits": ["D1:1", "D4:2"]}]}, sample), reward({"answer": "Oslo", "searches": []}, sample)
    (0.5, 0.0)
    >>> reward.last_components
    [{'evidence': 0.0}]
    >>> reward({"searches": []}, {"question": "Where?", "answers": ["Oslo"]})
    Traceback (most recent call last):
    ...
    ValueError: the search curriculum scores searches against each row's evidence ids; 1 row has none, e.g. question 'Where?'
    """

    name = "search_evidence_recall"
    component = "evidence"
    scores = "the search curriculum scores searches"

    def recall(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        return evidence_recall(output.get("searches"), sample["evidence"])


class MemoryRecallReward(CurriculumRecallReward):
    """AgeMem's writing curriculum's reward (ours, opt-in): the share of the row's evidence turns its stored items hold.

    A rollout of that curriculum (``write_curriculum``) is AgeMem's stage 1 alone, so it has no
    answer and AgeMem's composite would score it on context edits alone; what it stored is
    scored with the composite's own "useful item" rule (:func:`evidence_held`). Logged as
    ``reward/memory_recall``.

    >>> sample = {"question": "Where?", "evidence": ["D1:1", "D2:3"],
    ...           "turns": [{"dia_id": "D1:1", "text": "I moved to Oslo!"}, {"dia_id": "D2:3", "text": "I adopted a cat."}]}
    >>> MemoryRecallReward()({"memory_items": ["Ann: I moved to Oslo!", "Bo: Hi!"]}, sample)
    0.5
    >>> MemoryRecallReward()({"memory_items": []}, {**sample, "turns": []})
    Traceback (most recent call last):
    ...
    ValueError: the writing curriculum scores stored items against the texts of each row's evidence turns; question 'Where?' has evidence ids ['D1:1', 'D2:3'] but none of them among its turns
    """

    name = component = "memory_recall"
    scores = "the writing curriculum scores stored items"

    def recall(self, output: dict[str, Any], sample: dict[str, Any]) -> float:
        evidence = evidence_texts(sample)
        if evidence is None:
            raise ValueError(
                f"{self.scores} against the texts of each row's evidence turns; question {sample.get('question')!r} has "
                f"evidence ids {sample.get('evidence')!r} but none of them among its turns"
            )
        return evidence_held([str(item) for item in output.get("memory_items") or ()], evidence)


__all__ = ["GRAPH_MEASURES", "CurriculumRecallReward", "EvidenceShapedReward", "MemoryRecallReward", "SearchRecallReward", "agemem_measures", "evidence_recall", "mean_measures", "sumer_measures", "tool_use_measures"]
