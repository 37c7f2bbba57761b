"""The held-out protocol of every learning claim: the splits (seeds and key vocabularies no
training run uses), the questions of each split, and the paired before/after changes by question
group that the learning benchmarks report.

``dev`` is for tuning; a ``test*`` split is evaluated once per reported recipe, and a new one
is drawn when a split has been used (its comment says for what). Shared by the benchmarks, the
recorded studies and the tests.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .evaluation import PolicyEvaluation, paired_measure

# Held-out sets: seeds no training run uses, and for test and test2 a key vocabulary none uses either.
SPLITS = {
    "dev": {"seed": 10_000, "key_pool": "train"},
    "test": {"seed": 20_000, "key_pool": "test"},
    "test2": {"seed": 30_000, "key_pool": "test"},
    # Untouched until the search curriculum's recipe (BENCHMARKS section 11, run 42) was fixed on dev.
    "test3": {"seed": 50_000, "key_pool": "test"},
    # Untouched, kept for the longer reading stage (BENCHMARKS section 11, 2026-12-02) on seeds it was not tried on.
    "test4": {"seed": 60_000, "key_pool": "test"},
    # Generated conversations only: the same facts as dev, said and asked in other words (evals.conversations'
    # wording="varied"), to tune against wording, and an untouched test set in that wording.
    "dev-varied": {"seed": 10_000, "key_pool": "train", "wording": "varied"},
    "test-varied": {"seed": 40_000, "key_pool": "test", "wording": "varied"},
}
# Generated conversations: every held-out split uses names no training conversation uses.
HELD_OUT_ENTITIES = "test"
# The real LoCoMo conversation the learning benchmarks also answer (no tuning on it).
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_conv30.json"
# Tool-use measures compared before and after (training.tool_use), in the order printed.
TOOL_MEASURES = ("f1", "evidence_recall", "searches", "submitted", "valid_call_rate", "invalid_tool_calls", "memory_items", "memory_recall", "retrieval_recall")
# Measures compared by question group (category, position): the answer, SUMER's searches and AgeMem's retrievals.
GROUP_MEASURES = ("f1", "evidence_recall", "retrieval_recall")
# The answers a policy that never reads could give to every question.
YES_NO = ("yes", "no")


def held_out_conversations(split: str, questions: int) -> list[dict]:
    """The ``split`` questions on generated conversations, with the held-out entity names."""
    from .data import conversation_records

    return conversation_records(questions, seed=SPLITS[split]["seed"], entities=HELD_OUT_ENTITIES, wording=SPLITS[split].get("wording", "plain"))


def held_out_records(config: Any, tokenizer: Any, split: str, questions: int) -> list[dict]:
    """The ``split`` questions of ``config``'s task (the same for every training seed)."""
    from ..agents.tokenizers import resolve_tokenizer
    from ..evals.conversations import CONVERSATIONS_TASK
    from .data import generate_samples

    if config.task == CONVERSATIONS_TASK:
        return held_out_conversations(split, questions)
    if "wording" in SPLITS[split]:
        raise SystemExit(f"split {split!r} rewords generated conversations; task {config.task!r} has no wording: use dev, test or test2")
    return generate_samples(
        config.task, resolve_tokenizer(tokenizer), num_samples=questions, target_tokens=config.target_tokens,
        seed=SPLITS[split]["seed"], num_keys=config.num_keys, key_pool=SPLITS[split]["key_pool"], gold_rank=config.gold_position,
    )


def locomo_records(questions: int) -> list[dict]:
    """``questions`` of LoCoMo conv-30 as training rows: the seeded subset ``bench_locomo --limit`` answers."""
    from ..evals.harness import seeded_subset
    from .data import load_training_file

    return seeded_subset(load_training_file(LOCOMO), questions, seed=0) if questions else []


def is_yes_no(record: dict[str, Any]) -> bool:
    """Whether every gold answer of ``record`` is "yes" or "no": a question a constant answer can score.

    >>> is_yes_no({"answers": [" No"]}), is_yes_no({"answers": ["No", "piano"]})
    (True, False)
    """
    return {answer.strip().lower() for answer in record["answers"]} <= set(YES_NO)


def question_groups(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Question indices of each group: all, without yes/no, each ``category`` of the records, each half.

    The generator's open-domain questions are all answered "Yes" or "No", which a constant answer
    can score; the halves show whether a gain sits only in the questions early recipes were tuned on.

    >>> question_groups([{"category": "single-hop", "answers": ["Oslo"]}, {"category": "open-domain", "answers": ["No"]}])
    {'all': [0, 1], 'without yes/no': [0], 'open-domain': [1], 'single-hop': [0], 'first half': [0], 'second half': [1]}
    """
    half = (len(records) + 1) // 2
    groups = {
        "all": list(range(len(records))),
        "without yes/no": [i for i, record in enumerate(records) if not is_yes_no(record)],
    }
    for category in sorted({str(record.get("category")) for record in records}):
        groups[category] = [i for i, record in enumerate(records) if str(record.get("category")) == category]
    groups["first half"], groups["second half"] = list(range(half)), list(range(half, len(records)))
    return groups


def by_question_group(before: Any, after: Any, records: list[dict], measures: tuple[str, ...] = GROUP_MEASURES) -> dict[str, dict[str, dict]]:
    """Per question group (:func:`question_groups`) and measure: the paired change in points, its standard error, the questions.

    ``before`` and ``after`` are PolicyEvaluations of ``records``; groups with no question are left out.
    """

    def subset(evaluation: PolicyEvaluation, questions: list[int]) -> PolicyEvaluation:
        size = evaluation.rollouts_per_question
        rollouts = [question * size + r for question in questions for r in range(size)]
        measured = [evaluation.measures[i] for i in rollouts] if evaluation.measures else []
        return PolicyEvaluation(evaluation.temperature, size, [evaluation.rewards[i] for i in rollouts], evaluation.seconds, measured)

    changes: dict[str, dict[str, dict]] = {}
    for group, questions in question_groups(records).items():
        for measure in measures:
            paired = paired_measure(subset(before, questions), subset(after, questions), measure) if questions else None
            if paired is not None:
                changes.setdefault(group, {})[measure] = {
                    "change": 100.0 * paired["change"], "standard_error": 100.0 * paired["standard_error"], "questions": paired["questions"],
                }
    return changes


def constant_answer_f1(records: list[dict]) -> dict[str, float]:
    """F1 in points of answering every question "yes", and every question "no": what a policy that never reads scores."""
    from ..evals.locomo_scoring import f1

    return {answer: 100.0 * statistics.fmean(f1(answer, record["answers"]) for record in records) for answer in YES_NO}


def tool_use(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Each decoding's tool-use measures before and after, paired by question, with standard errors."""
    summary = {}
    for name in after:
        pair = PolicyEvaluation.from_dict(before[name]), PolicyEvaluation.from_dict(after[name])
        measured = {measure: paired_measure(*pair, measure) for measure in TOOL_MEASURES}
        if any(measured.values()):
            summary[name] = {measure: value for measure, value in measured.items() if value is not None}
    return summary
