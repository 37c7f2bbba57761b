r"""Answer scoring for MemAgent runs: the strict training verifier and the lenient test metrics.

Two families, following MemAgent (arXiv 2507.02259, reference code) and NVIDIA RULER:

* ``strict_boxed`` -- the RL reward: the last ``\boxed{}`` of the reply must equal a gold
  answer after removing whitespace and some LaTeX noise.
* Lenient test metrics on an already extracted answer: SQuAD/HotpotQA-style
  ``exact_match``, ``sub_exact_match`` and token ``f1`` (max over golds, any-of tasks), and
  RULER's ``string_match_all`` / ``string_match_part`` (all-of tasks such as niah
  multivalue/multiquery, vt, fwe).

:func:`score` is the single entry point used by the graphs and the evaluation harness.

>>> score(r"... so the answer is \boxed{Paris}", ["paris"], "strict_boxed")
1.0
>>> score("The Eiffel Tower!", ["eiffel tower"], "exact_match")
1.0
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal, get_args

from ..agents.answers import extract_answer


Metric = Literal[
    "strict_boxed", "exact_match", "sub_exact_match", "f1", "string_match_all", "string_match_part"
]
METRICS: tuple[str, ...] = get_args(Metric)

# The reference verifier only looks at the tail of the reply: a box quoted earlier in a long
# reasoning trace must not count as the final answer.
STRICT_TAIL_CHARS = 300

_LATEX_NOISE = ("\\left", "\\right", "\\!", "\\$", "\\%")
_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f]")
# HotpotQA convention: a yes/no/noanswer reply shares no meaningful tokens with another answer.
_SPECIAL_ANSWERS = ("yes", "no", "noanswer")


def gold_strings(answers: Sequence[object]) -> list[str]:
    """Gold answers as strings; a bare string would otherwise be scored char by char."""
    if isinstance(answers, (str, bytes)):
        raise TypeError(
            f"answers must be a sequence of gold answers, not a bare string; wrap it: [{answers!r}]"
        )
    # User data often stores numeric golds (years, counts) as numbers.
    return [str(answer) for answer in answers]


def _strip_latex(text: str) -> str:
    for noise in _LATEX_NOISE:
        text = text.replace(noise, "")
    text = text.replace("tfrac", "frac").replace("dfrac", "frac")
    return "".join(text.split())


def strict_score(response: str, answers: Sequence[str], *, style: str = "boxed", all_of: bool = False) -> float:
    r"""MemAgent's strict verifier on the answer the final prompt ``style`` asks for.

    The answer is the last ``\boxed{}`` (``style="boxed"``) or the text after the last
    "the answer is" (``"answer_is"``) in the reply's last 300 characters, lowercased and
    cleaned as :func:`strict_boxed_score` describes. Any-of tasks: 1.0 when it equals a gold.
    All-of tasks (``all_of``: multi-value and multi-query NIAH, VT, FWE): MemAgent's Eq. 7,
    the fraction of golds the answer contains. Eq. 7 is the paper's rule for several answers: a
    record with one gold is scored by equality (Eq. 6) whatever ``all_of`` says, because RULER marks
    every NIAH task all-of and containment would pay a box that holds the needle inside a longer number.

    >>> strict_score(r"\boxed{1234567, 7654321}", ["1234567", "7654321"], all_of=True)
    1.0
    >>> strict_score(r"\boxed{1234567}", ["1234567", "7654321"], all_of=True)
    0.5
    >>> strict_score(r"\boxed{19633647}", ["9633647"], all_of=True)
    0.0
    >>> strict_score("So the answer is Paris.", ["paris"], style="answer_is")
    1.0
    """
    prediction = _strip_latex(extract_answer(response[-STRICT_TAIL_CHARS:].lower(), style) or "")
    # An empty answer is no answer, even against a gold that normalizes to nothing.
    if not prediction:
        return 0.0
    golds = [_strip_latex(gold.lower()) for gold in gold_strings(answers)]
    if all_of and len(golds) > 1:
        return sum(bool(gold) and gold in prediction for gold in golds) / len(golds)
    return float(any(prediction == gold for gold in golds))


def strict_boxed_score(response: str, answers: Sequence[str]) -> float:
    r"""Training reward: 1.0 if the last ``\boxed{}`` in the reply's tail equals a gold, else 0.0.

    Only the last 300 characters of the lowercased reply are searched. Prediction and golds
    lose all whitespace, ``\left``, ``\right``, ``\!``, ``\$``, ``\%``, and ``tfrac``/``dfrac``
    become ``frac``. The reference README says the match is on "exact case", but its code
    lowercases both sides, so this is case-insensitive as well. The strictness (no article or
    punctuation forgiveness, box required) is why validation during training (~50%) reads
    far below the lenient test accuracy (~80%) of the same model.

    >>> strict_boxed_score(r"Answer: \boxed{\dfrac{1}{2}}", [r"\frac{1}{2}"])
    1.0
    >>> strict_boxed_score(r"\boxed{The Louvre}", ["Louvre"])  # no article forgiveness
    0.0
    >>> strict_boxed_score("Louvre", ["Louvre"])  # no box
    0.0
    """
    return strict_score(response, answers)


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, drop punctuation and articles, collapse whitespace.

    >>> normalize_answer("The  Eiffel-Tower, a landmark!")
    'eiffeltower landmark'
    """
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when both normalize to the same non-empty string.

    >>> exact_match("the Beatles.", "Beatles"), exact_match("", "")
    (1.0, 0.0)
    """
    pred, ref = normalize_answer(prediction), normalize_answer(str(gold))
    # Guard the reference's gap: two empty strings are not a correct answer.
    return float(bool(pred) and pred == ref)


def sub_exact_match(prediction: str, gold: str) -> float:
    """1.0 when either normalized string contains the other; empty sides never match.

    >>> sub_exact_match("It was Paris, France", "paris"), sub_exact_match("...", "paris")
    (1.0, 0.0)
    """
    pred, ref = normalize_answer(prediction), normalize_answer(str(gold))
    # The reference omits this check, so an empty prediction is a substring of every gold
    # (and every prediction contains an empty gold).
    if not pred or not ref:
        return 0.0
    return float(ref in pred or pred in ref)


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 of the normalized strings (SQuAD/HotpotQA).

    A yes/no/noanswer on either side scores 0 unless both sides are equal.

    >>> round(token_f1("Barack Obama Jr", "Barack Obama"), 2), token_f1("no", "yes")
    (0.8, 0.0)
    """
    pred, ref = normalize_answer(prediction), normalize_answer(str(gold))
    if (pred in _SPECIAL_ANSWERS or ref in _SPECIAL_ANSWERS) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    # Empty token lists have no overlap, so the empty-prediction case also lands here.
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over_answers(
    metric: Callable[[str, str], float], prediction: str, answers: Sequence[str]
) -> float:
    """Best ``metric(prediction, gold)`` over the golds (any-of tasks); 0.0 with no golds.

    >>> best_over_answers(exact_match, "NYC", ["New York", "nyc"])
    1.0
    """
    return max((metric(prediction, gold) for gold in gold_strings(answers)), default=0.0)


def postprocess_prediction(prediction: str) -> str:
    r"""RULER's clean-up: strip, turn control characters into newlines, strip again.

    >>> postprocess_prediction(" 123\x00456\t ")
    '123\n456'
    """
    return _CONTROL_CHARS.sub("\n", prediction.strip()).strip()


def string_match_all(prediction: str, answers: Sequence[str]) -> float:
    """Fraction of golds found (case-insensitively) in the prediction; RULER all-of tasks.

    >>> string_match_all("Values: 17, 42", ["17", "42", "99", "5"])
    0.5
    """
    golds = gold_strings(answers)
    if not golds:
        return 0.0
    pred = postprocess_prediction(prediction).lower()
    return sum(gold.lower() in pred for gold in golds) / len(golds)


def string_match_part(prediction: str, answers: Sequence[str]) -> float:
    """1.0 if any gold occurs (case-insensitively) in the prediction, else 0.0.

    >>> string_match_part("the key is ALPHA", ["alpha", "beta"])
    1.0
    """
    pred = postprocess_prediction(prediction).lower()
    return float(any(gold.lower() in pred for gold in gold_strings(answers)))


_SCORERS: dict[str, Callable[[str, Sequence[str]], float]] = {
    "strict_boxed": strict_boxed_score,
    "exact_match": lambda prediction, answers: best_over_answers(exact_match, prediction, answers),
    "sub_exact_match": lambda prediction, answers: best_over_answers(
        sub_exact_match, prediction, answers
    ),
    "f1": lambda prediction, answers: best_over_answers(token_f1, prediction, answers),
    "string_match_all": string_match_all,
    "string_match_part": string_match_part,
}


def score(prediction: str | None, answers: Sequence[str], metric: Metric | str) -> float:
    r"""Score one prediction against its golds with the named metric (see :data:`METRICS`).

    For ``strict_boxed`` pass the full final reply; for the others the extracted answer.
    ``None`` (no answer could be extracted) scores 0.0.

    >>> score(None, ["x"], "f1")
    0.0
    >>> score("x", ["x"], "accuracy")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown metric 'accuracy'; expected one of: strict_boxed, exact_match, ...
    """
    # Validate before the None shortcut so a misspelt metric never passes silently.
    scorer = _SCORERS.get(metric)
    if scorer is None:
        raise ValueError(f"unknown metric {metric!r}; expected one of: {', '.join(METRICS)}")
    golds = gold_strings(answers)
    if prediction is None:
        return 0.0
    return scorer(prediction, golds)
