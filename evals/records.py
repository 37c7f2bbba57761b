"""The record every generator and loader of :mod:`langgraph_memagent.evals` returns.

A :class:`Sample` keeps the question apart from the document (the haystack), as a memory
agent reads them: MemAgent puts the question in every memory-update prompt and streams the
document chunk by chunk. It also answers dict access (``sample["question"]``), so code
written for MemAgent's JSON records works on it unchanged.

>>> sample = Sample(question="Who?", document="Document 1:\\nAda", answers=["Ada"], task="qa_squad", metric="any")
>>> sample["answers"], sample.scoring_metric
(['Ada'], 'sub_exact_match')
>>> Sample.from_dict(sample.to_dict()) == sample
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, get_args


AnswerMode = Literal["any", "all"]
ANSWER_MODES: tuple[str, ...] = get_args(AnswerMode)

# Which evals.scoring metric grades a record -- the one place this mapping is written down.
# * "all": RULER's string_match_all, the fraction of golds found in the prediction
#   (multi-value / multi-query NIAH, variable tracking, frequent words).
# * "any" on question answering (HotpotQA, SQuAD, LoCoMo, the synthetic multi-hop task):
#   sub_exact_match, the MemAgent paper's headline metric (arXiv 2507.02259).
# * "any" on the other RULER tasks (single-answer NIAH): RULER's string_match_part.
QA_TASK_PREFIXES = ("qa", "hotpotqa", "multihop", "locomo")
_FIELDS = ("question", "document", "answers", "task", "metric", "meta")


def answer_mode(metric: Any, what: str = "metric") -> AnswerMode:
    """``metric`` when it is an answer mode (``"any"`` or ``"all"``); else one line naming it and ``what`` it was.

    >>> answer_mode("all")
    'all'
    """
    if metric not in ANSWER_MODES:
        raise ValueError(f"{what} must be one of {list(ANSWER_MODES)}, got {metric!r}")
    return metric


def scoring_metric(task: str, metric: AnswerMode) -> str:
    """The :func:`~langgraph_memagent.evals.scoring.score` metric name for a task and answer mode.

    >>> scoring_metric("niah_multivalue", "all"), scoring_metric("niah_single_1", "any")
    ('string_match_all', 'string_match_part')
    >>> scoring_metric("locomo", "any")
    'sub_exact_match'
    """
    if answer_mode(metric) == "all":
        return "string_match_all"
    return "sub_exact_match" if task.startswith(QA_TASK_PREFIXES) else "string_match_part"


@dataclass
class Sample:
    """One question over one long document, with its gold answers.

    ``metric`` says how the golds combine: ``"any"`` (one gold suffices) or ``"all"`` (score
    is the fraction of golds found, RULER's ``string_match_all``). ``meta`` carries what
    produced the record (seed, target_tokens, needle depths, LoCoMo speakers and sessions...).
    """

    question: str
    document: str
    answers: list[str]
    task: str
    metric: AnswerMode = "any"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.answers, list) or not all(isinstance(answer, str) for answer in self.answers):
            raise TypeError(f"answers must be a list of strings, got {self.answers!r}")
        answer_mode(self.metric)

    @property
    def scoring_metric(self) -> str:
        """The evals.scoring metric for this record (see :func:`scoring_metric`)."""
        return scoring_metric(self.task, self.metric)

    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS:
            raise KeyError(f"{key!r} is not a Sample field; fields are {', '.join(_FIELDS)}")
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in _FIELDS else default

    def keys(self) -> tuple[str, ...]:
        return _FIELDS

    def to_dict(self) -> dict:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Sample":
        """Rebuild a record from :meth:`to_dict` output; numeric golds become strings.

        >>> Sample.from_dict({"question": "q", "document": "d", "answers": [1905], "task": "qa"}).answers
        ['1905']
        """
        missing = [name for name in ("question", "document", "answers", "task") if name not in data]
        if missing:
            raise KeyError(f"record lacks field(s) {', '.join(missing)}; it has {', '.join(map(str, data)) or 'none'}")
        answers = data["answers"]
        if not isinstance(answers, list):
            raise TypeError(f"answers must be a list of gold answers, got {answers!r}")
        return cls(
            question=data["question"],
            document=data["document"],
            answers=[str(answer) for answer in answers],
            task=data["task"],
            metric=data.get("metric", "any"),
            meta=dict(data.get("meta") or {}),
        )
