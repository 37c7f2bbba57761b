"""Training questions: generated RULER tasks with distractor needles, generated LoCoMo-shaped
conversations, MemAgent-format files or LoCoMo files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..evals.records import answer_mode
from ..evals.templates import task_family
from ..graphs.registry import question_input
from .rewards import gold_answers


def _needle_values(document: str) -> list[str]:
    """Values of every RULER needle sentence in a document, in order of appearance."""
    from ..evals.ruler import NEEDLE

    pattern = re.escape(NEEDLE).replace(r"\{value_type\}", r"\w+").replace(r"\{key\}", r"\S+?")
    return re.findall(pattern.replace(r"\{value\}", r"(\S+?)"), document)


def _sample_record(sample: Any) -> dict[str, Any]:
    answers = [str(answer) for answer in sample.answers]
    # Needles whose values are not gold are the distractors a lenient reward must not pay for.
    distractors = [value for value in _needle_values(sample.document) if value not in answers]
    return {
        "question": sample.question,
        "document": sample.document,
        "answers": answers,
        "distractors": distractors,
        "task": sample.task,
        "metric": sample.metric,  # "all": every gold is asked for (the reward's Eq. 7)
        # Which keyed needle, in document order, holds the gold (None for one-needle tasks).
        "gold_rank": sample.meta.get("gold_rank"),
    }


def generate_samples(
    task: str,
    codec: Any,
    *,
    num_samples: int,
    target_tokens: int,
    seed: int,
    num_keys: int | None = None,
    key_pool: str | None = None,
    gold_rank: int | str | None = None,
) -> list[dict[str, Any]]:
    """Generated task records (``question``, ``document``, ``answers``, ``distractors``, ``task``,
    ``metric``, ``gold_rank``).

    Uses ``evals.ruler.generate_task`` (all RULER-style tasks, with distractor needles
    for the multi-key ones; ``num_keys`` sets how many needles those hold, ``key_pool`` which
    key vocabulary they use, ``gold_rank`` where the asked-for one sits, e.g. ``"balanced"``).
    ``distractors`` lists the values of the document's needles that are not gold.
    """
    from ..evals.ruler import generate_task

    given = {"num_keys": num_keys, "key_pool": key_pool, "gold_rank": gold_rank}
    options = {name: value for name, value in given.items() if value is not None}
    samples = generate_task(task, target_tokens, codec=codec, num_samples=num_samples, seed=seed, **options)
    return [_sample_record(sample) for sample in samples]


def _locomo_record(sample: Any) -> dict[str, Any]:
    """A LoCoMo question as a training row: the graph input with the conversation's turns, golds and evidence ids."""
    return {
        **question_input(sample),
        "answers": [str(answer) for answer in sample.answers],
        "distractors": [],
        "task": sample.task,
        "evidence": list(sample.meta.get("evidence", [])),  # for evidence-recall measures and the opt-in shaping
        "category": sample.meta.get("category_name"),
    }


# The categories :mod:`evals.conversations` asks, by LoCoMo's names.
CONVERSATION_CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
_CATEGORY_SHARE = re.compile(r"\s*([\w-]+)\s*=\s*(\d*\.?\d+)\s*")  # "open-domain = 0.25"


def parse_category_shares(text: str) -> dict[str, float]:
    """The ``category=share`` pairs of ``text``: each named category's share of the generated questions.

    >>> parse_category_shares("open-domain=0.25"), parse_category_shares("temporal=0.2, multi-hop=0.2")
    ({'open-domain': 0.25}, {'temporal': 0.2, 'multi-hop': 0.2})
    >>> parse_category_shares("yes-no=0.5")
    Traceback (most recent call last):
    ...
    ValueError: category_shares must be 'category=share' pairs with categories from ['single-hop', 'multi-hop', 'temporal', 'open-domain'] and shares above 0 summing to at most 1, got 'yes-no=0.5'
    """
    pairs = [_CATEGORY_SHARE.fullmatch(part) for part in text.split(",") if part.strip()]
    shares = {match[1]: float(match[2]) for match in pairs} if all(pairs) else {}
    valid = shares and set(shares) <= set(CONVERSATION_CATEGORIES) and min(shares.values()) > 0 and sum(shares.values()) <= 1
    if not valid:
        raise ValueError(
            f"category_shares must be 'category=share' pairs with categories from {list(CONVERSATION_CATEGORIES)} "
            f"and shares above 0 summing to at most 1, got {text!r}"
        )
    return shares


def conversation_records(
    num_questions: int, *, seed: int, entities: str = "train", wording: str = "plain", category_shares: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """``num_questions`` questions of seeded generated conversations, as training rows with their evidence ids
    (``wording``: ``"plain"`` or ``"varied"``, see :func:`~langgraph_memagent.evals.conversations.generate_conversation`).

    ``category_shares`` (:func:`parse_category_shares`) sets the named categories' shares: their
    questions, and the others', are taken in the order the conversations ask them until each
    quota is full. Unset, every question of each conversation is taken in turn.

    >>> rows = conversation_records(3, seed=1)
    >>> len(rows), sorted(rows[0])[:4], rows[0]["evidence"]
    (3, ['answers', 'category', 'distractors', 'document'], ['D3:4'])
    >>> [row["category"] for row in conversation_records(8, seed=1, category_shares={"open-domain": 0.5})].count("open-domain")
    4
    """
    from ..evals.conversations import generate_conversation
    from ..evals.loaders import locomo_samples

    # Quotas per named category, and one for all the others together (key None).
    quotas: dict[str | None, int] = {name: round(share * num_questions) for name, share in (category_shares or {}).items()}
    quotas[None] = num_questions - sum(quotas.values())
    records: list[dict[str, Any]] = []
    index = 0
    while len(records) < num_questions:
        conversation = generate_conversation(index, seed=seed, entities=entities, wording=wording)
        for record in (_locomo_record(sample) for sample in locomo_samples([conversation], f"generated seed {seed}")):
            quota = record["category"] if record["category"] in quotas else None
            if quotas[quota] > 0:
                quotas[quota] -= 1
                records.append(record)
        index += 1
    return records


def _question_of(record: dict[str, Any]) -> Any:
    prompt = record.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[-1], dict):
        return prompt[-1].get("content")
    return record.get("question", record.get("input"))


def _named_task(name: Any) -> str | None:
    """``name`` when it is a task of RULER's template families (``niah_*``, ``vt``, ``fwe``, ``cwe``, ``qa*``), else None."""
    if not isinstance(name, str):
        return None
    try:
        task_family(name)
    except ValueError:
        return None
    return name


def file_task(path: str | Path) -> str | None:
    """The RULER task a training file's name gives: its stem or its folder (RULER writes ``{task}/validation.jsonl``).

    >>> file_task("data/niah_multivalue/train.jsonl"), file_task("vt.json"), file_task("hotpot/train.json")
    ('niah_multivalue', 'vt', None)
    """
    path = Path(path)
    return _named_task(path.stem) or _named_task(path.parent.name)


def record_metric(record: dict[str, Any], file_task_name: str | None = None) -> str:
    """How a loaded record's golds combine: ``"all"`` (every gold asked for: the reward's Eq. 7, the
    fraction of golds in the answer) or ``"any"`` (one gold suffices: Eq. 6).

    The record's own ``metric`` wins; else the RULER task it names (``task``), else the task its
    file's name gives: QA tasks are any-of, NIAH, VT, FWE and CWE all-of (RULER's
    ``string_match_part`` and ``string_match_all``; :func:`evals.loaders.load_ruler_jsonl` reads
    RULER's files the same way). Nothing said, several golds included, is any-of: the files in
    MemAgent's training format hold HotpotQA questions whose golds are aliases of one answer,
    and the reference verifier accepts any of them (memagent.md); Eq. 7 would pay a right answer
    1/k for k aliases.

    >>> record_metric({"answers": ["1", "2"], "task": "niah_multivalue"}), record_metric({"answers": ["a", "b"]})
    ('all', 'any')
    >>> record_metric({"answers": ["1", "2"], "task": "niah_multivalue", "metric": "any"}), record_metric({}, "fwe")
    ('any', 'all')
    >>> record_metric({"metric": "string_match_all"})
    Traceback (most recent call last):
    ...
    ValueError: metric must be one of ['any', 'all'], got 'string_match_all'
    """
    if record.get("metric") is not None:
        return answer_mode(record["metric"])
    task = _named_task(record.get("task")) or file_task_name
    if task is None:
        return "any"
    return "any" if task_family(task) == "qa" else "all"


def _is_locomo(data: Any) -> bool:
    """Whether parsed JSON is in LoCoMo's layout (one conversation, or a list of ``conversation`` records)."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and "qa" in first and ("conversation" in first or "speaker_a" in first)


def load_training_file(path: str | Path) -> list[dict[str, Any]]:
    """Records of a JSON list, JSONL or parquet file in MemAgent's training or evaluation format.

    Accepted fields: question from ``prompt`` (chat messages or a string), ``question`` or
    ``input``; document from ``context`` or ``document``; golds from
    ``reward_model.ground_truth`` or ``answers``. A record missing one raises with its index.
    Each row gets ``metric`` (:func:`record_metric`: the record's own, else from the RULER
    task the record or the file's name gives, else any-of), so all-of rows earn Eq. 7, and
    ``task``: the RULER task the record names, else ``"file"``.
    A conversation's raw messages (``turns`` or ``meta.turns``, LoCoMo's turn dicts) are
    kept as ``turns`` for the SUMER and AgeMem graphs. A LoCoMo file (either release layout,
    or :mod:`evals.conversations` output) gives one row per question, with its turns and
    evidence ids.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"train_file {str(path)!r} does not exist")
    if path.suffix == ".parquet":  # MemAgent's training rows, read by the one parquet loader
        from ..evals.loaders import load_memagent_train_parquet

        samples = load_memagent_train_parquet(path)
        return [
            {**question_input(sample), "answers": list(sample.answers), "distractors": [], "task": "file", "metric": sample.metric}
            for sample in samples
        ]
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        if path.suffix == ".jsonl":
            raw = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"train_file {str(path)!r} is not valid JSON{' lines' if path.suffix == '.jsonl' else ''}: {error}") from None
    if _is_locomo(raw):
        from ..evals.loaders import locomo_samples

        return [_locomo_record(sample) for sample in locomo_samples(raw, path)]
    if not isinstance(raw, list):
        raise ValueError(f"train_file {str(path)!r} must hold a list of records, got {type(raw).__name__}")
    records, task_of_file = [], file_task(path)
    for index, record in enumerate(raw):
        question, document = _question_of(record), record.get("context", record.get("document"))
        if not isinstance(question, str) or not isinstance(document, str):
            raise ValueError(
                f"record {index} of {str(path)!r}: expected a question ('prompt', 'question' or 'input') and a "
                f"document string ('context' or 'document'); keys: {sorted(record)}"
            )
        golds = gold_answers(record)
        try:
            metric = record_metric(record, task_of_file)
        except ValueError as error:
            raise ValueError(f"record {index} of {str(path)!r}: {error}") from None
        # question_input keeps a conversation's raw turns (LoCoMo rows) for the graphs that store messages.
        row = question_input({**record, "question": question, "document": document})
        task = _named_task(record.get("task")) or "file"
        records.append({**row, "answers": golds, "distractors": [], "task": task, "metric": metric})
    return records
