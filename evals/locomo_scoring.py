r"""LoCoMo scoring: token F1, BLEU-1, an LLM judge (J), and per-category summaries.

SUMER reports three numbers on LoCoMo (baselines.md): token F1, BLEU-1 and the LLM-judge
accuracy J, next to baselines (Mem0, LangMem, A-MEM...) that were all scored by Mem0's
evaluation code. This module reproduces both published scorers without new dependencies:

* ``mem0`` F1 (the default) -- Mem0's ``evaluation/metrics/utils.py`` (borrowed from
  A-MEM): lowercase, ``. , ! ?`` become spaces, split on whitespace, F1 of the token *sets*.
* ``locomo`` F1 -- LoCoMo's own ``task_eval/evaluation.py``: SQuAD normalization that also
  drops the word "and", Porter-stemmed tokens, F1 of the token multisets; category 1 golds
  and predictions are comma-separated lists (mean over gold parts of the best prediction
  part), category 3 golds keep the part before the first ``;``, category 5 is right when the
  reply says "not mentioned" / "no information available".
* BLEU-1 -- Mem0's ``calculate_bleu_scores``: NLTK ``sentence_bleu`` with weights
  ``(1, 0, 0, 0)`` and smoothing ``method1`` on ``word_tokenize`` of the lowercased texts.
  With those weights the smoothing never matters and BLEU-1 is the brevity penalty times
  the clipped unigram precision, computed here directly.
* :class:`LLMJudge` -- the Mem0/LoCoMo ACCURACY judge (binary CORRECT/WRONG as JSON).

Golds may be several strings (the best score over them is taken) or numbers.

>>> round(f1("Melanie went to the park.", ["the park"]), 3)
0.571
>>> round(bleu1("a shell necklace", ["A shell necklace"]), 3)
1.0
>>> parse_judge_reply('The dates match. {"label": "CORRECT"}').correct
True
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableBinding

from ..agents.calls import positive_int
from .loaders import LOCOMO_CATEGORIES, LOCOMO_NO_ANSWER
from .scoring import gold_strings, normalize_answer


logger = logging.getLogger(__name__)

F1Variant = Literal["mem0", "locomo"]
F1_VARIANTS: tuple[str, ...] = get_args(F1Variant)

# ---------------------------------------------------------------------------------------
# Porter stemmer (LoCoMo's F1 stems with NLTK's PorterStemmer; NLTK is not a dependency).
# This is Martin Porter's published algorithm with his own later corrections ("bli" ->
# "ble", "logi" -> "log"), i.e. NLTK's MARTIN_EXTENSIONS mode. NLTK's default mode adds a
# few irregular forms on top (e.g. "dying" -> "die", "skies" -> "sky", four-letter "-ies"
# words keep "ie", "y" after a vowel stays "y"), so a handful of rare words stem differently
# from LoCoMo's runs; both sides of a comparison are stemmed alike, so F1 only moves when two
# inflections of one word meet.
# ---------------------------------------------------------------------------------------

_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, index: int) -> bool:
    letter = word[index]
    if letter in _VOWELS:
        return False
    if letter == "y":
        # "y" is a consonant at the start or after a vowel ("yes", "toy"), a vowel after a consonant ("by").
        return index == 0 or not _is_consonant(word, index - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``[C](VC)^m[V]``."""
    pattern = "".join("c" if _is_consonant(stem, i) else "v" for i in range(len(stem)))
    return len(re.findall(r"v+c+", pattern))


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _ends_cvc(word: str) -> bool:
    """Consonant-vowel-consonant ending whose last letter is not w, x or y (Porter's *o)."""
    return (
        len(word) >= 3
        and _is_consonant(word, len(word) - 3)
        and not _is_consonant(word, len(word) - 2)
        and _is_consonant(word, len(word) - 1)
        and word[-1] not in "wxy"
    )


# Within each step only the first listed suffix the word ends with is considered, as in
# Porter's reference implementation: if its condition fails, shorter suffixes are not tried.
_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
    "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)


def _step1(word: str) -> str:
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    extended = False
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif word.endswith("ed") and _has_vowel(word[:-2]):
        word, extended = word[:-2], True
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        word, extended = word[:-3], True
    if extended:
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif _ends_double_consonant(word) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _ends_cvc(word):
            word += "e"
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _replace_suffix(word: str, rules: Sequence[tuple[str, str]], min_measure: int) -> str:
    for suffix, replacement in rules:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > min_measure else word
    return word


def _step4(word: str) -> str:
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return word
            return stem if _measure(stem) > 1 else word
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        if _measure(stem) > 1 or (_measure(stem) == 1 and not _ends_cvc(stem)):
            word = stem
    if _measure(word) > 1 and _ends_double_consonant(word) and word.endswith("l"):
        word = word[:-1]
    return word


def porter_stem(word: str) -> str:
    """The Porter stem of one lowercase word; words of one or two letters are kept.

    >>> [porter_stem(w) for w in ("caresses", "ponies", "hopping", "relational", "generalizations")]
    ['caress', 'poni', 'hop', 'relat', 'gener']
    """
    if len(word) <= 2:
        return word
    word = _step1(word)
    word = _replace_suffix(word, _STEP2, 0)
    word = _replace_suffix(word, _STEP3, 0)
    return _step5(_step4(word))


# ---------------------------------------------------------------------------------------
# Token F1 and BLEU-1
# ---------------------------------------------------------------------------------------

_MEM0_SEPARATORS = re.compile(r"[.,!?]")


def mem0_tokens(text: str) -> list[str]:
    """Mem0's ``simple_tokenize``: lowercase, ``. , ! ?`` become spaces, split on whitespace.

    >>> mem0_tokens("Yes, in May 2023!")
    ['yes', 'in', 'may', '2023']
    """
    return _MEM0_SEPARATORS.sub(" ", str(text).lower()).split()


def mem0_f1(prediction: str, gold: str) -> float:
    """Mem0's token F1 for one gold: F1 of the two token *sets* (repeats count once).

    Like Mem0's ``calculate_metrics``, an empty prediction or gold scores 0.

    >>> mem0_f1("the the cat", "a cat")
    0.5
    """
    predicted, expected = set(mem0_tokens(prediction)), set(mem0_tokens(gold))
    common = len(predicted & expected)
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def locomo_normalize(text: str) -> str:
    """LoCoMo's answer normalization: SQuAD's (:func:`evals.scoring.normalize_answer`) minus "and".

    >>> locomo_normalize("Hiking, and the Beach!")
    'hiking beach'
    """
    return " ".join(re.sub(r"\band\b", " ", normalize_answer(str(text))).split())


def _stemmed_f1(prediction: str, gold: str) -> float:
    predicted = [porter_stem(word) for word in locomo_normalize(prediction).split()]
    expected = [porter_stem(word) for word in locomo_normalize(gold).split()]
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: int | None = None) -> float:
    """LoCoMo's F1 for one gold (``task_eval/evaluation.py``), by question category.

    * category 1: gold and prediction are comma-separated lists; the mean over gold parts of
      the best stemmed F1 against any prediction part;
    * category 3: only the gold's text before the first ``;`` counts;
    * category 5 (adversarial): 1.0 when the reply says "not mentioned" or "no information
      available", else 0.0;
    * otherwise (2, 4, or no category): stemmed token F1.

    >>> round(locomo_f1("running, hiking", "hiking, swimming", category=1), 2)
    0.5
    >>> locomo_f1("The walks", "walking")
    1.0
    """
    prediction, gold = str(prediction), str(gold)
    if category == 5:
        return float(any(phrase in prediction.lower() for phrase in LOCOMO_NO_ANSWER))
    if category == 1:
        predicted_parts = [part.strip() for part in prediction.split(",")]
        gold_parts = [part.strip() for part in gold.split(",")]
        return sum(max(_stemmed_f1(p, g) for p in predicted_parts) for g in gold_parts) / len(gold_parts)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return _stemmed_f1(prediction, gold)


def f1(
    prediction: str | None,
    answers: Sequence[str | int | float],
    *,
    variant: F1Variant | str = "mem0",
    category: int | None = None,
) -> float:
    """Best token F1 over the golds; ``None`` (no answer) scores 0.

    ``variant="mem0"`` (default) is the scorer behind SUMER's and Mem0's tables;
    ``"locomo"`` is LoCoMo's own (stemmed, category-aware: pass ``category``).

    >>> f1("May 2023", [2023, "7 May 2023"])
    0.8
    >>> f1("x", ["x"], variant="rouge")
    Traceback (most recent call last):
    ...
    ValueError: unknown F1 variant 'rouge'; expected one of: mem0, locomo
    """
    if variant not in F1_VARIANTS:
        raise ValueError(f"unknown F1 variant {variant!r}; expected one of: {', '.join(F1_VARIANTS)}")
    golds = gold_strings(answers)
    if prediction is None:
        return 0.0
    if variant == "mem0":
        return max((mem0_f1(prediction, gold) for gold in golds), default=0.0)
    return max((locomo_f1(prediction, gold, category) for gold in golds), default=0.0)


# NLTK's word_tokenize (Treebank rules) as far as BLEU-1 on short answers needs it:
# contractions split ("don't" -> "do n't", "Caroline's" -> "caroline 's"), punctuation is its
# own token except inside numbers ("1,000", "3.5") and hyphenated words, "..." is one token.
# Where this differs from NLTK: every period is split off (Punkt keeps "mr." and "u.s."
# whole), quotes are not rewritten to `` and '' (both sides are tokenized alike), and
# "o'clock"-style inner apostrophes split.
_TREEBANK_TOKEN = re.compile(
    r"\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b|\d+(?:[.,]\d+)+|\w+(?:-\w+)*|\.\.\.|[^\w\s]"
)


def word_tokens(text: str) -> list[str]:
    """Lowercased Treebank-style tokens, the input of Mem0's BLEU-1.

    >>> word_tokens("She didn't go to Caroline's party, it cost $1,000.")
    ['she', 'did', "n't", 'go', 'to', 'caroline', "'s", 'party', ',', 'it', 'cost', '$', '1,000', '.']
    """
    return _TREEBANK_TOKEN.findall(str(text).lower())


def bleu1_single(prediction: str, gold: str) -> float:
    """BLEU-1 against one gold: brevity penalty x clipped unigram precision (NLTK's value).

    >>> round(bleu1_single("the cat sat on the mat", "the cat is on the mat"), 4)
    0.8333
    >>> round(bleu1_single("Paris", "Paris, France"), 4)  # brevity penalty exp(1 - 3/1)
    0.1353
    """
    predicted, expected = word_tokens(prediction), word_tokens(gold)
    if not predicted:
        return 0.0
    matches = sum((Counter(predicted) & Counter(expected)).values())
    if matches == 0:
        return 0.0
    brevity = 1.0 if len(predicted) > len(expected) else math.exp(1 - len(expected) / len(predicted))
    return brevity * matches / len(predicted)


def bleu1(prediction: str | None, answers: Sequence[str | int | float]) -> float:
    """Best BLEU-1 over the golds (each gold is its own single reference, as Mem0 scores LoCoMo).

    >>> bleu1(None, ["x"]), bleu1("Paris.", ["paris"])
    (0.0, 0.5)
    """
    golds = gold_strings(answers)
    if prediction is None:
        return 0.0
    return max((bleu1_single(prediction, gold) for gold in golds), default=0.0)


# ---------------------------------------------------------------------------------------
# LLM judge
# ---------------------------------------------------------------------------------------

# Adapted from Mem0's ACCURACY_PROMPT (mem0ai/mem0, evaluation/metrics/llm_judge.py,
# Apache-2.0), the judge behind the LoCoMo J numbers of Mem0 and SUMER. Reworded here; the
# grading rules (generous on topic and on date formats, one-sentence reason, one label, JSON
# with key "label") are the same. Pass ``prompt=`` to LLMJudge to use the verbatim text.
JUDGE_PROMPT = """Your job is to label a generated answer to a question as CORRECT or WRONG. You are given:
    (1) a question that one user asked another user,
    (2) the gold (ground truth) answer,
    (3) a generated answer.

The question asks about something one user should know about the other user from their earlier conversations.
The gold answer is usually short and names the topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer may be much longer. Grade generously: if it is about the same thing as the gold answer, it is CORRECT.

For questions about time, the gold answer is a specific date, month, year or period. The generated answer may be longer or use relative references (such as "last Tuesday" or "next month"). Grade generously: if it refers to the same date or period as the gold answer, it is CORRECT, even in another format (for example "May 7th" and "7 May").

Here is the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First give a short (one sentence) explanation of your reasoning, then give the label CORRECT or WRONG.
Never write both CORRECT and WRONG in your reply: that breaks the evaluation.

Return the label as JSON with the key "label", for example {"label": "CORRECT"}.
"""

JudgeLabel = Literal["CORRECT", "WRONG"]
_LABELS: tuple[str, ...] = get_args(JudgeLabel)
_JUDGE_FIELDS = re.compile(r"\{(question|gold_answer|generated_answer)\}")
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_LABEL_FIELD = re.compile(r"""["']?label["']?\s*[:=]\s*["']?([A-Za-z]+)""", re.IGNORECASE)
_BARE_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge decision: ``correct`` is ``None`` when the reply could not be read.

    ``raw`` is the judge's reply verbatim and ``error`` says why it was unreadable (or why
    the call failed), so unparsable verdicts can be counted and inspected, never hidden.
    """

    correct: bool | None
    label: JudgeLabel | None
    raw: str
    error: str | None = None

    @property
    def score(self) -> float | None:
        """1.0 / 0.0, or ``None`` for an unreadable verdict."""
        return None if self.correct is None else float(self.correct)


def _verdict(label: str, raw: str) -> JudgeVerdict:
    return JudgeVerdict(correct=label == "CORRECT", label=label, raw=raw)  # type: ignore[arg-type]


def _load_object(text: str) -> dict | None:
    """A JSON object, or a Python-literal dict (single quotes), or ``None``."""
    for load in (json.loads, ast.literal_eval):
        try:
            value = load(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_judge_reply(raw: str) -> JudgeVerdict:
    """Read a judge reply, from the strictest form to the loosest.

    1. JSON objects anywhere in the text (also inside fenced blocks; single quotes are
       accepted) with a ``label`` key; several objects must agree;
    2. a ``label: CORRECT``-style field in broken JSON;
    3. exactly one of the upper-case words CORRECT / WRONG (both present is ambiguous);
    4. a reply that is only the word, in any case.

    Anything else gives ``correct=None`` with an ``error``, never an exception.

    >>> parse_judge_reply("```json\\n{'label': 'wrong'}\\n```").label
    'WRONG'
    >>> parse_judge_reply("It is CORRECT, not WRONG.").error
    'reply names both CORRECT and WRONG'
    """
    text = str(raw).strip()
    if not text:
        return JudgeVerdict(None, None, raw, "empty judge reply")
    labels = []
    for candidate in _JSON_OBJECT.findall(text):
        parsed = _load_object(candidate)
        if parsed is None:
            continue
        labels += [str(value) for key, value in parsed.items() if str(key).strip().lower() == "label"]
    if not labels:
        labels = _LABEL_FIELD.findall(text)
    if labels:
        found = {label.strip().strip(".!\"'` ").upper() for label in labels}
        if len(found) > 1:
            return JudgeVerdict(None, None, raw, f"conflicting labels {sorted(found)}")
        label = found.pop()
        if label not in _LABELS:
            return JudgeVerdict(None, None, raw, f"label {label!r} is neither CORRECT nor WRONG")
        return _verdict(label, raw)
    bare = set(_BARE_LABEL.findall(text))
    if len(bare) == 2:
        return JudgeVerdict(None, None, raw, "reply names both CORRECT and WRONG")
    if bare:
        return _verdict(bare.pop(), raw)
    word = text.strip(" .!\"'`*").upper()
    if word in _LABELS:
        return _verdict(word, raw)
    return JudgeVerdict(None, None, raw, "no CORRECT/WRONG label found in the judge reply")


def _gold_text(gold: str | int | float | Sequence[str | int | float]) -> str:
    # Several golds are shown together, separated as LoCoMo separates alternatives.
    if isinstance(gold, (str, int, float)):
        return str(gold)
    return "; ".join(gold_strings(gold))


def _fill(template: str, values: dict[str, str]) -> str:
    # One literal pass: an answer containing "{question}" is never substituted again, and
    # the JSON braces of the prompt need no escaping.
    return _JUDGE_FIELDS.sub(lambda match: values[match.group(1)], template)


def _declared_fields(model: Any) -> Mapping[str, Any]:
    target = model.bound if isinstance(model, RunnableBinding) else model
    return getattr(type(target), "model_fields", {})


class LLMJudge:
    """The LoCoMo ACCURACY judge on any LangChain chat model: CORRECT / WRONG per answer.

    Deterministic by default: when the model's class declares a ``temperature`` field
    (ChatOpenAI, ChatAnthropic, this package's LocalChatModel...) the judge binds
    ``temperature=0``, as Mem0's judge calls gpt-4o-mini; a model without that field is
    called as configured. ``max_tokens`` caps the judge's reply (useful for small local
    models that ramble), bound the same way.

    Unreadable replies and failed calls become verdicts with ``correct=None`` and an
    ``error`` (see :func:`parse_judge_reply`); a prediction of ``None`` (no answer) is WRONG
    without a model call (``raw == ""``).

    >>> from langgraph_memagent.agents.loading import load_chat_model  # doctest: +SKIP
    >>> judge = LLMJudge(load_chat_model("smollm2-135m"), max_tokens=64)  # doctest: +SKIP
    >>> judge.judge("Where did Mel go?", "the park", "To the park").correct  # doctest: +SKIP
    True
    """

    def __init__(self, model: Any, *, prompt: str = JUDGE_PROMPT, max_concurrency: int = 4, max_tokens: int | None = None):
        missing = [name for name in ("{question}", "{gold_answer}", "{generated_answer}") if name not in prompt]
        if missing:
            raise ValueError(f"judge prompt lacks placeholder(s) {', '.join(missing)}")
        positive_int("max_concurrency", max_concurrency)
        fields = _declared_fields(model)
        options: dict[str, Any] = {"temperature": 0.0} if "temperature" in fields else {}
        if max_tokens is not None:
            if "max_tokens" not in fields:
                raise ValueError(f"max_tokens={max_tokens} given but {type(model).__name__} has no max_tokens option")
            options["max_tokens"] = max_tokens
        self.model = model
        self.runnable = model.bind(**options) if options else model
        self.prompt = prompt
        self.max_concurrency = max_concurrency

    def render(self, question: str, gold: Any, prediction: str) -> str:
        """The judge's user message for one answer."""
        return _fill(self.prompt, {"question": str(question), "gold_answer": _gold_text(gold), "generated_answer": str(prediction)})

    def judge(self, question: str, gold: Any, prediction: str | None) -> JudgeVerdict:
        """Judge one answer; ``gold`` may be a string, a number or several golds."""
        return self.batch([(question, gold, prediction)])[0]

    def batch(self, items: Sequence[tuple[str, Any, str | None]]) -> list[JudgeVerdict]:
        """Judge ``(question, gold, prediction)`` triples with ``model.batch``, at most
        ``max_concurrency`` calls in flight; results keep the input order."""
        verdicts: list[JudgeVerdict | None] = [None] * len(items)
        pending = []
        for index, (question, gold, prediction) in enumerate(items):
            if prediction is None:
                verdicts[index] = JudgeVerdict(correct=False, label="WRONG", raw="")
            else:
                pending.append((index, [HumanMessage(self.render(question, gold, prediction))]))
        if pending:
            replies = self.runnable.batch(
                [messages for _, messages in pending], config={"max_concurrency": self.max_concurrency}, return_exceptions=True
            )
            for (index, _), reply in zip(pending, replies, strict=True):
                if isinstance(reply, BaseException):
                    logger.warning("judge call %d failed: %s: %s", index, type(reply).__name__, reply)
                    verdicts[index] = JudgeVerdict(None, None, "", f"judge call failed: {type(reply).__name__}: {reply}")
                else:
                    verdicts[index] = parse_judge_reply(reply.text)
        return verdicts  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------
# Per-category summary
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CategoryScores:
    """Mean scores of one LoCoMo category (``category=None``: every included record).

    ``judge`` is the mean over readable verdicts only; ``unjudged`` counts the records with
    no verdict or an unreadable one, so a judge that fails is visible, not silently 0.
    """

    category: int | None
    name: str
    count: int
    f1: float
    bleu1: float
    judge: float | None
    judged: int
    unjudged: int


@dataclass(frozen=True)
class LoCoMoSummary:
    """Per-category and overall LoCoMo scores; ``excluded`` counts skipped records."""

    categories: list[CategoryScores]
    overall: CategoryScores
    excluded: int


def _judge_score(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, JudgeVerdict):
        return value.score
    if isinstance(value, Mapping):
        correct = value.get("correct")
        return None if correct is None else float(bool(correct))
    if isinstance(value, (bool, int, float)) and value in (0, 1):
        return float(value)
    raise ValueError(f"judge value must be a JudgeVerdict, a mapping with 'correct', 0/1 or None, got {value!r}")


def _category(record: Mapping[str, Any], index: int) -> int:
    meta = record.get("meta") if isinstance(record.get("meta"), Mapping) else {}
    category = meta.get("category", record.get("category"))
    if category is None:
        raise ValueError(f"record {index} has no category (meta['category'] or 'category'); keys: {sorted(record)}")
    return int(category)


def _scores(category: int | None, name: str, rows: Sequence[tuple[float, float, float | None]]) -> CategoryScores:
    verdicts = [judge for _, _, judge in rows if judge is not None]
    return CategoryScores(
        category=category,
        name=name,
        count=len(rows),
        f1=sum(row[0] for row in rows) / len(rows) if rows else 0.0,
        bleu1=sum(row[1] for row in rows) / len(rows) if rows else 0.0,
        judge=sum(verdicts) / len(verdicts) if verdicts else None,
        judged=len(verdicts),
        unjudged=len(rows) - len(verdicts),
    )


def summarize_locomo(records: Sequence[Mapping[str, Any]], *, exclude_categories: Sequence[int] = (5,)) -> LoCoMoSummary:
    """Mean F1, BLEU-1 and J per LoCoMo category and overall.

    Each record needs ``f1`` and ``bleu1`` (numbers), optionally ``judge`` (a
    :class:`JudgeVerdict`, a mapping with ``correct``, 0/1, or ``None``), and its category in
    ``meta["category"]`` (as :func:`evals.loaders.load_locomo` sets it) or ``category``;
    ``meta["category_name"]`` names it. Category 5 (adversarial, no gold) is excluded by
    default, as in Mem0's and SUMER's evaluations.

    >>> rows = [{"f1": 1.0, "bleu1": 0.5, "judge": True, "meta": {"category": 4, "category_name": "single-hop"}},
    ...         {"f1": 0.0, "bleu1": 0.0, "judge": None, "meta": {"category": 2}},
    ...         {"f1": 0.0, "bleu1": 0.0, "judge": 0, "meta": {"category": 5}}]
    >>> summary = summarize_locomo(rows)
    >>> summary.overall.f1, summary.overall.judge, summary.overall.unjudged, summary.excluded
    (0.5, 1.0, 1, 1)
    """
    excluded = {int(category) for category in exclude_categories}
    grouped: dict[int, list[tuple[float, float, float | None]]] = {}
    names: dict[int, str] = {}
    skipped = 0
    for index, record in enumerate(records):
        category = _category(record, index)
        if category in excluded:
            skipped += 1
            continue
        missing = [key for key in ("f1", "bleu1") if not isinstance(record.get(key), (int, float))]
        if missing:
            raise ValueError(f"record {index} lacks numeric {', '.join(missing)}; keys: {sorted(record)}")
        meta = record.get("meta") if isinstance(record.get("meta"), Mapping) else {}
        names.setdefault(category, str(meta.get("category_name") or LOCOMO_CATEGORIES.get(category, "unknown")))
        grouped.setdefault(category, []).append((float(record["f1"]), float(record["bleu1"]), _judge_score(record.get("judge"))))
    categories = [_scores(category, names[category], grouped[category]) for category in sorted(grouped)]
    overall = _scores(None, "overall", [row for category in sorted(grouped) for row in grouped[category]])
    return LoCoMoSummary(categories=categories, overall=overall, excluded=skipped)


def locomo_markdown_table(summary: LoCoMoSummary) -> str:
    """A markdown table of a :class:`LoCoMoSummary`, scores in percent (as papers report them).

    >>> rows = [{"f1": 0.5, "bleu1": 0.25, "judge": True, "meta": {"category": 4}}]
    >>> print(locomo_markdown_table(summarize_locomo(rows)))
    | category | n | F1 | BLEU-1 | J | unjudged |
    |---|---:|---:|---:|---:|---:|
    | 4 single-hop | 1 | 50.00 | 25.00 | 100.00 | 0 |
    | overall | 1 | 50.00 | 25.00 | 100.00 | 0 |
    """
    lines = ["| category | n | F1 | BLEU-1 | J | unjudged |", "|---|---:|---:|---:|---:|---:|"]
    for scores in [*summary.categories, summary.overall]:
        label = scores.name if scores.category is None else f"{scores.category} {scores.name}"
        judge = "n/a" if scores.judge is None else f"{100 * scores.judge:.2f}"
        lines.append(f"| {label} | {scores.count} | {100 * scores.f1:.2f} | {100 * scores.bleu1:.2f} | {judge} | {scores.unjudged} |")
    return "\n".join(lines)


__all__ = [
    "F1_VARIANTS",
    "JUDGE_PROMPT",
    "CategoryScores",
    "JudgeVerdict",
    "LLMJudge",
    "LoCoMoSummary",
    "bleu1",
    "bleu1_single",
    "f1",
    "locomo_f1",
    "locomo_markdown_table",
    "locomo_normalize",
    "mem0_f1",
    "mem0_tokens",
    "parse_judge_reply",
    "porter_stem",
    "summarize_locomo",
    "word_tokens",
]
