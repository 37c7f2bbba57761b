"""RULER's prompt templates and the search that sizes a haystack to a token budget.

Shared by the RULER task generators (:mod:`~langgraph_memagent.evals.ruler`) and the
multi-hop QA generator (:mod:`~langgraph_memagent.evals.multihop`): a template cut around
its haystack, the task-family lookup, and :func:`fit_sample`, which finds the most haystack
units whose whole prompt fits ``target_tokens`` under a tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Callable

from ..agents.tokenizers import TokenCodec, encode_long
from .records import AnswerMode, Sample


@dataclass(frozen=True)
class PromptTemplate:
    """A RULER task prompt cut around its haystack: ``before + context + after``, then the answer prefix.

    ``tokens_to_generate`` is RULER's generation budget for the task (its ``length`` field
    adds it to the prompt's tokens).
    """

    before: str
    after: str
    answer_prefix: str
    tokens_to_generate: int

    def render(self, context: str) -> str:
        return f"{self.before}{context}{self.after}"


# RULER's constants.py, verbatim (the "assgined" typo included, so prompts match byte for byte).
_NIAH = PromptTemplate(
    "Some special magic {value_type} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {value_type} afterwards.\n",
    "\nWhat are all the special magic {value_type} for {query} mentioned in the provided text?",
    " The special magic {value_type} for {query} mentioned in the provided text are",
    128,
)
_VT = PromptTemplate(
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n",
    "\nQuestion: Find all variables that are assigned the value {query} in the text above.",
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are assgined the value {query}, they are: ",
    30,
)
_FWE = PromptTemplate(
    "Read the following coded text and track the frequency of each coded word. Find the three most frequently appeared coded words. ",
    "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three most frequently appeared words in the above coded text?",
    " Answer: According to the coded text above, the three most frequently appeared words are:",
    50,
)
# Common-word extraction is read by the loaders (official files) but not generated here.
_CWE = PromptTemplate(
    "Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that appear most often.\n",
    "\nQuestion: What are the 10 most common words in the above list?",
    " Answer: The top 10 words that appear most often in the list are:",
    120,
)
_QA_INSTRUCTION = "Answer the question based on the given documents. Only give me the answer and do not output any other words."
_QA = PromptTemplate(
    f"{_QA_INSTRUCTION}\n\nThe following are given documents.\n\n",
    f"\n\n{_QA_INSTRUCTION}\n\nQuestion: {{query}}",
    " Answer:",
    32,
)
TEMPLATE_FAMILIES: dict[str, PromptTemplate] = {"niah": _NIAH, "vt": _VT, "fwe": _FWE, "cwe": _CWE, "qa": _QA}


def task_family(task: str) -> str:
    """RULER template family of a task name: ``niah``, ``vt``, ``fwe`` or ``qa``.

    >>> task_family("niah_multikey_2"), task_family("qa_hotpotqa")
    ('niah', 'qa')
    """
    for family in TEMPLATE_FAMILIES:
        if task == family or task.startswith(f"{family}_"):
            return family
    raise ValueError(f"task {task!r} belongs to no RULER template family; expected a name starting with one of {', '.join(TEMPLATE_FAMILIES)}")


def prompt_template(task: str, *, query: str, value_type: str = "numbers", num_answers: int = 1, num_values: int = 0) -> PromptTemplate:
    """The formatted template of ``task`` for one query.

    NIAH prompts with a single answer take RULER's singular wording (``A special magic
    number is hidden ...``, ``What is the special magic number for ...``).

    >>> prompt_template("niah_single_1", query="red-fox").after
    '\\nWhat is the special magic number for red-fox mentioned in the provided text?'
    """
    family = task_family(task)
    template = TEMPLATE_FAMILIES[family]
    parts = [template.before, template.after, template.answer_prefix]
    if family == "niah" and num_answers == 1:
        # RULER's own rewrite for one answer, applied in the same order.
        for plural, singular in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
            parts = [part.replace(plural, singular) for part in parts]
        value_type = value_type.removesuffix("s")
    values = {"value_type": value_type, "query": query, "num_v": num_values}
    before, after, answer_prefix = (part.format(**values) for part in parts)
    return PromptTemplate(before, after, answer_prefix, template.tokens_to_generate)


def fit_largest(measure: Callable[[int], int], budget: int, *, limit: int | None = None) -> int:
    """The largest ``n`` in ``0..limit`` with ``measure(n) <= budget``, for ``measure`` growing about linearly.

    Secant steps (the next guess follows the slope measured at the last one) land next to
    the boundary in two or three calls; a doubling bracket and bisection finish the job
    when they do not. Each call of ``measure`` tokenizes a whole prompt, so few calls is
    what makes a 32K-token sample fast. Every returned ``n`` was measured to fit.

    >>> fit_largest(lambda n: 10 + 3 * n, 100)
    30
    >>> fit_largest(lambda n: 10 + 3 * n, 100, limit=7)
    7
    """
    measured: dict[int, int] = {}

    def tokens(units: int) -> int:
        if units not in measured:
            measured[units] = measure(units)
        return measured[units]

    base = tokens(0)
    if base > budget:
        raise ValueError(f"the prompt without any haystack already takes {base} tokens, more than the budget of {budget}")
    # low always fits; high (when known) never does.
    low, high = 0, None if limit is None else limit + 1
    point = 64 if limit is None else min(64, limit)
    for _ in range(6):
        if point == low or (high is not None and high - low <= 1):
            break
        used = tokens(point)
        if used <= budget:
            low = point
        else:
            high = point
        slope = max(used - base, 1) / point
        estimate = int(point + (budget - used) / slope)
        point = max(estimate, low + 1) if high is None else min(max(estimate, low + 1), high - 1)
    step = max(1, low // 256)
    while high is None:
        candidate = low + step
        step *= 2
        low, high = (candidate, None) if tokens(candidate) <= budget else (low, candidate)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if tokens(middle) <= budget else (low, middle)
    return low


def prompt_tokens(template: PromptTemplate, context: str, answers: list[str], codec: TokenCodec) -> int:
    """Tokens of RULER's whole prompt for ``context`` plus the expected answer (what must fit the target)."""
    return len(encode_long(f"{template.render(context)}{template.answer_prefix} {' '.join(answers)}", codec))


def fit_sample(
    *,
    task: str,
    template: PromptTemplate,
    question: str,
    answers: list[str],
    metric: AnswerMode,
    build_context: Callable[[int], str],
    codec: TokenCodec,
    target_tokens: int | None,
    units: int | None = None,
    limit: int | None = None,
    locate_answer: bool = True,
    meta: dict | None = None,
) -> Sample:
    """Size a haystack (``units`` given, or the most that fits ``target_tokens``) and make the record.

    ``build_context(n)`` renders the haystack with ``n`` units (lines, sentences, words,
    documents) and the needles in place. ``meta`` gains the unit count, the prompt's token
    ``length``, RULER's ``token_position_answer`` (where the first gold starts; skipped with
    ``locate_answer=False``, for multi-document QA where it costs a second tokenization of a
    possibly multi-million-token prompt and says little) and the template parts that
    :func:`render_ruler_input` needs.
    """
    if units is None:
        if target_tokens is None:
            raise ValueError(f"{task}: give target_tokens (or a document count where the task takes one)")
        try:
            units = fit_largest(lambda n: prompt_tokens(template, build_context(n), answers, codec), target_tokens, limit=limit)
        except ValueError as error:
            raise ValueError(f"{task}: target_tokens={target_tokens} is too small: {error}") from None
    context = build_context(units)
    prompt = template.render(context)
    answer_at = prompt.find(answers[0]) if answers and locate_answer else -1
    meta = {
        **(meta or {}),
        "haystack_units": units,
        "length": prompt_tokens(template, context, answers, codec),
        "token_position_answer": len(encode_long(prompt[:answer_at], codec)) if answer_at >= 0 else None,
        "prompt_before": template.before,
        "prompt_after": template.after,
        "answer_prefix": template.answer_prefix,
        "tokens_to_generate": template.tokens_to_generate,
    }
    return Sample(question=question, document=context, answers=answers, task=task, metric=metric, meta=meta)


@cache
def words(name: str) -> tuple[str, ...]:
    """The lower-case words of a wonderwords list (``adjectivelist.txt``, ``nounlist.txt``), sorted.

    RULER draws its needle keys from these lists; they are read without importing wonderwords' CLI.
    """
    text = resources.files("wonderwords").joinpath("assets", name).read_text(encoding="utf-8")
    return tuple(sorted({word for word in text.split() if word.isalpha() and word.islower()}))
