"""RULER's synthetic long-context tasks (NVIDIA RULER, arXiv 2404.06654), seeded, sized in tokens.

:func:`generate_task` makes records of every task of RULER's table (``TASKS``): the eight
needle-in-a-haystack variants, variable tracking (``vt``), frequent-word extraction (``fwe``)
and ``qa`` (RULER's QA prompt over the synthetic multi-hop documents of
:mod:`~langgraph_memagent.evals.multihop`), plus ``qa_hotpotqa_synthetic`` (MemAgent's
RULER-HotpotQA layout over the same documents).

How a record is built, as RULER's generator does it:

* needles ``One of the special magic numbers for {key} is: {value}.`` with adjective-noun
  word keys from the wonderwords lists, 7-digit numbers or version-4 UUIDs; at depths drawn
  from RULER's grid of 40 depths spread evenly over 0..100%;
* haystacks: the noise line repeated (``noise``), prose sentences (``essay``, from
  :mod:`~langgraph_memagent.agents.essays`), or distractor needles (``needle``);
* the haystack size is found by search so that the whole prompt (template, haystack,
  RULER's answer prefix and the expected answer) fits ``target_tokens`` under ``codec``.

A record keeps the question apart from the haystack (MemAgent's layout): ``question`` is
the query side of the template (the sentence after the haystack; for QA the bare question)
and ``document`` the haystack. :func:`render_ruler_input` puts them back into RULER's
prompt. Sample ``i`` of a call is drawn from a generator seeded with ``(task, seed, i)``:
same arguments, same bytes.

>>> from langgraph_memagent.agents.tokenizers import TiktokenCodec
>>> import tiktoken
>>> codec = TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}))
>>> sample, = generate_task("niah_multivalue", 2000, codec=codec, seed=3)
>>> sample.metric, len(sample.answers), all(answer in sample.document for answer in sample.answers)
('all', 4, True)
>>> sample.question.startswith("What are all the special magic numbers for")
True
"""

from __future__ import annotations

import json
import os
import random
import string
import uuid
import zlib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from ..agents.atomic_files import write_atomic
from ..agents.calls import positive_int
from ..agents.essays import essay_sentences, essay_slice
from ..agents.tokenizers import TokenCodec, resolve_tokenizer
from .multihop import multihop_sample
from .records import Sample
from .templates import TEMPLATE_FAMILIES, fit_sample, prompt_template, words


__all__ = [
    "NIAH_TASKS",
    "TASKS",
    "Sample",
    "generate_task",
    "niah_single_1",
    "render_ruler_input",
    "write_memagent_eval",
    "write_ruler_jsonl",
]

NOISE_LINE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
NEEDLE = "One of the special magic {value_type} for {key} is: {value}."
# RULER: np.round(np.linspace(0, 100, num=40)) -- needle depths are drawn from this grid.
DEPTH_GRID: tuple[int, ...] = tuple(round(index * 100 / 39) for index in range(40))
# Disjoint word-key vocabularies (``key_pool``), so a test set asks for keys training never saw:
# an adjective whose CRC-32 is a multiple of 4 belongs to "test" (about a quarter), the rest to "train".
KEY_POOLS = ("train", "test")


@dataclass(frozen=True)
class _NiahConfig:
    haystack: Literal["noise", "essay", "needle"]
    key_kind: Literal["words", "uuids"]
    value_kind: Literal["numbers", "uuids"]
    num_keys: int = 1
    num_values: int = 1
    num_queries: int = 1


# RULER's synthetic.yaml.
NIAH_CONFIGS: dict[str, _NiahConfig] = {
    "niah_single_1": _NiahConfig("noise", "words", "numbers"),
    "niah_single_2": _NiahConfig("essay", "words", "numbers"),
    "niah_single_3": _NiahConfig("essay", "words", "uuids"),
    "niah_multikey_1": _NiahConfig("essay", "words", "numbers", num_keys=4),
    "niah_multikey_2": _NiahConfig("needle", "words", "numbers"),
    "niah_multikey_3": _NiahConfig("needle", "uuids", "uuids"),
    "niah_multivalue": _NiahConfig("essay", "words", "numbers", num_values=4),
    "niah_multiquery": _NiahConfig("essay", "words", "numbers", num_keys=4, num_queries=4),
}
NIAH_TASKS: tuple[str, ...] = tuple(NIAH_CONFIGS)
MULTIHOP_TASKS: tuple[str, ...] = ("qa", "qa_hotpotqa_synthetic")
TASKS: tuple[str, ...] = (*NIAH_TASKS, "vt", "fwe", *MULTIHOP_TASKS)

# Options each task accepts beyond target_tokens (the defaults are RULER's).
_TASK_OPTIONS: dict[str, frozenset[str]] = {
    **{
        task: frozenset({"key_pool", *(["depth"] if NIAH_CONFIGS[task].num_keys * NIAH_CONFIGS[task].num_values == 1 else [])})
        for task in NIAH_TASKS
    },
    # RULER's num_needle_k: how many keyed needles the multi-key haystacks hold.
    "niah_multikey_1": frozenset({"num_keys", "key_pool", "gold_rank"}),
    "niah_multiquery": frozenset({"num_keys", "key_pool"}),
    "vt": frozenset({"num_chains", "num_hops"}),
    "fwe": frozenset({"alpha", "vocab_size", "coded_word_length"}),
    "qa": frozenset({"num_docs", "kind"}),
    "qa_hotpotqa_synthetic": frozenset({"num_docs", "kind"}),
}


@cache
def _adjectives(pool: str | None) -> tuple[str, ...]:
    adjectives = words("adjectivelist.txt")
    if pool is None:
        return adjectives
    if pool not in KEY_POOLS:
        raise ValueError(f"key_pool must be one of {list(KEY_POOLS)} or None, got {pool!r}")
    return tuple(word for word in adjectives if (zlib.crc32(word.encode()) % 4 == 0) == (pool == "test"))


def _word_key(rng: random.Random, pool: str | None = None) -> str:
    return f"{rng.choice(_adjectives(pool))}-{rng.choice(words('nounlist.txt'))}"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _draw(kind: str, rng: random.Random, pool: str | None = None) -> str:
    if kind == "words":
        return _word_key(rng, pool)
    if kind == "uuids":
        return _uuid(rng)
    return str(rng.randint(1_000_000, 9_999_999))


def _distinct(draw: Callable[[], str], count: int, taken: set[str]) -> list[str]:
    values: list[str] = []
    while len(values) < count:
        value = draw()
        if value not in taken:
            taken.add(value)
            values.append(value)
    return values


def _insert_at_depths(units: list[str], needles: list[str], depths: list[float]) -> list[str]:
    """``units`` with each needle inserted at its depth (fraction of the way through)."""
    placed = sorted(zip((round(depth * len(units)) for depth in depths), range(len(needles))))
    result, start = [], 0
    for position, index in placed:
        result.extend(units[start:position])
        result.append(needles[index])
        start = position
    result.extend(units[start:])
    return result


def _niah(
    task: str,
    rng: random.Random,
    codec: TokenCodec,
    target_tokens: int | None,
    depth: float | None = None,
    num_keys: int | None = None,
    key_pool: str | None = None,
    gold_rank: int | None = None,
) -> Sample:
    config = NIAH_CONFIGS[task]
    if num_keys is not None:
        if not isinstance(num_keys, int) or isinstance(num_keys, bool) or num_keys < config.num_queries:
            raise ValueError(f"num_keys for {task} must be an integer >= {config.num_queries} (the keys it asks for), got {num_keys!r}")
        config = replace(config, num_keys=num_keys)
    taken: set[str] = set()
    keys = _distinct(lambda: _draw(config.key_kind, rng, key_pool), config.num_keys, taken)
    values = [_distinct(lambda: _draw(config.value_kind, rng), config.num_values, taken) for _ in keys]
    needles = [NEEDLE.format(value_type=config.value_kind, key=key, value=value) for key, key_values in zip(keys, values) for value in key_values]
    gold_needle = needles[0]  # the first key is the one asked for
    rng.shuffle(needles)
    if depth is not None and not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth must be a fraction of the haystack in [0, 1], got {depth!r}")
    depths = [depth] if depth is not None else [percent / 100 for percent in rng.sample(DEPTH_GRID, len(needles))]
    if gold_rank is not None:
        if not isinstance(gold_rank, int) or isinstance(gold_rank, bool) or not 0 <= gold_rank < len(needles):
            raise ValueError(f"gold_rank for {task} must be an integer in [0, {len(needles) - 1}] (its keyed needles), got {gold_rank!r}")
        # The same depths, in order, with the gold needle placed at that rank: list order breaks
        # ties between needles that land in the same gap, so document order is list order.
        others = [needle for needle in needles if needle != gold_needle]
        needles, depths = [*others[:gold_rank], gold_needle, *others[gold_rank:]], sorted(depths)
    queries = keys[: config.num_queries]
    answers = [value for key_values in values[: config.num_queries] for value in key_values]
    # RULER: "a, b, c, and d" when several keys are asked for.
    query = queries[0] if len(queries) == 1 else ", ".join(queries[:-1]) + ", and " + queries[-1]
    template = prompt_template(task, query=query, value_type=config.value_kind, num_answers=len(answers))
    if config.haystack == "noise":
        build = lambda n: "\n".join(_insert_at_depths([NOISE_LINE] * n, needles, depths))  # noqa: E731
    elif config.haystack == "essay":
        start = rng.randrange(len(essay_sentences()))
        build = lambda n: " ".join(_insert_at_depths(essay_slice(start, n), needles, depths))  # noqa: E731
    else:
        distractor_rng, distractors = random.Random(rng.random()), []

        def build(n: int) -> str:
            # Grown on demand and never redrawn, so a bigger haystack extends a smaller one.
            while len(distractors) < n:
                key = _distinct(lambda: _draw(config.key_kind, distractor_rng, key_pool), 1, taken)[0]
                value = _draw(config.value_kind, distractor_rng)
                distractors.append(NEEDLE.format(value_type=config.value_kind, key=key, value=value))
            return "\n".join(_insert_at_depths(distractors[:n], needles, depths))

    sample = fit_sample(
        task=task, template=template, question=template.after.strip(), answers=answers, metric="all",
        build_context=build, codec=codec, target_tokens=target_tokens,
        # "depth" for one-needle tasks: the demo reports where its needle sits.
        meta={"keys": keys, "queries": queries, "depths": depths, "haystack": config.haystack, **({"depth": depths[0]} if len(depths) == 1 else {})},
    )
    if config.num_keys > 1 and config.num_values == 1 and config.num_queries == 1:
        # Where the asked-for needle sits among the keyed needles, read from the document itself.
        positions = sorted(sample.document.index(needle) for needle in needles)
        sample.meta["gold_rank"] = positions.index(sample.document.index(gold_needle))
    return sample


def _vt(task: str, rng: random.Random, codec: TokenCodec, target_tokens: int | None, num_chains: int = 1, num_hops: int = 4) -> Sample:
    if num_chains < 1 or num_hops < 1:
        raise ValueError(f"vt needs num_chains >= 1 and num_hops >= 1, got {num_chains} and {num_hops}")
    names = _distinct(lambda: "".join(rng.choices(string.ascii_uppercase, k=5)), num_chains * (num_hops + 1), set())
    chain_values = _distinct(lambda: str(rng.randint(10_000, 99_999)), num_chains, set())
    chains = [names[index * (num_hops + 1) : (index + 1) * (num_hops + 1)] for index in range(num_chains)]
    # Each statement gets a fixed fraction of the haystack; a chain's fractions are sorted so it reads in order.
    statements: list[tuple[float, int, str]] = []
    for chain, value in zip(chains, chain_values):
        lines = [f"VAR {chain[0]} = {value}"] + [f"VAR {after} = VAR {before}" for before, after in zip(chain, chain[1:])]
        statements.extend((fraction, len(statements) + order, line) for order, (fraction, line) in enumerate(zip(sorted(rng.random() for _ in lines), lines)))
    statements.sort()

    def build(n: int) -> str:
        return "\n".join(_insert_at_depths([NOISE_LINE] * n, [line for _, _, line in statements], [fraction for fraction, _, _ in statements]))

    template = prompt_template(task, query=chain_values[0], num_values=num_hops + 1)
    return fit_sample(
        task=task, template=template, question=template.after.strip(), answers=chains[0], metric="all",
        build_context=build, codec=codec, target_tokens=target_tokens,
        meta={"chains": chains, "values": chain_values},
    )


def _zeta(alpha: float) -> float:
    # Riemann zeta by direct sum plus the Euler-Maclaurin tail; alpha > 1.
    terms = 1000
    head = sum(k**-alpha for k in range(1, terms))
    return head + terms ** (1 - alpha) / (alpha - 1) + terms**-alpha / 2


def _fwe(task: str, rng: random.Random, codec: TokenCodec, target_tokens: int | None, alpha: float = 2.0, vocab_size: int = 2000, coded_word_length: int = 6) -> Sample:
    if alpha <= 1 or vocab_size < 5 or coded_word_length < 2:
        raise ValueError(f"fwe needs alpha > 1, vocab_size >= 5 and coded_word_length >= 2, got {alpha}, {vocab_size}, {coded_word_length}")
    vocab = _distinct(lambda: "".join(rng.choices(string.ascii_lowercase, k=coded_word_length)), vocab_size, set())
    vocab[0] = "..."  # RULER: the top rank is a noise token, never an answer
    zeta = _zeta(alpha)
    stream_seed = rng.random()

    def counts(n: int) -> list[int]:
        return [int(n * rank**-alpha / zeta) for rank in range(1, vocab_size + 1)]

    def build(n: int) -> str:
        stream = [word for word, count in zip(vocab, counts(n)) for _ in range(count)]
        random.Random(stream_seed).shuffle(stream)
        return " ".join(stream)

    template = prompt_template(task, query="")
    sample = fit_sample(
        task=task, template=template, question=template.after.strip(), answers=vocab[1:4], metric="all",
        build_context=build, codec=codec, target_tokens=target_tokens, meta={"alpha": alpha, "vocab_size": vocab_size},
    )
    top = counts(sample.meta["haystack_units"])
    if not top[1] > top[2] > top[3] > top[4]:
        raise ValueError(f"fwe: target_tokens={target_tokens} leaves too few words for three distinct most frequent words")
    sample.meta["counts"] = dict(zip(vocab[:5], top[:5]))
    return sample


def generate_task(
    task: str,
    target_tokens: int | None,
    *,
    codec: TokenCodec | Any,
    num_samples: int = 1,
    seed: int = 0,
    **task_options: Any,
) -> list[Sample]:
    """``num_samples`` seeded records of ``task`` (one of :data:`TASKS`), each fitting ``target_tokens``.

    Task options: ``depth`` (single-needle NIAH, fraction 0..1; default a random depth of
    RULER's grid), ``num_keys`` (niah_multikey_1 / niah_multiquery: keyed needles in the
    haystack, RULER's ``num_needle_k``, default 4), ``key_pool`` (NIAH with word keys: ``"train"`` or
    ``"test"``, disjoint key vocabularies; default RULER's whole list), ``gold_rank``
    (niah_multikey_1: which keyed needle in document order is the asked-for one, 0 = first, or
    ``"balanced"``: sample ``i`` gets rank ``i % num_keys``, so position says nothing about the
    answer; default RULER's random depths; ``meta["gold_rank"]`` records it either way),
    ``num_chains``/``num_hops`` (vt, RULER defaults 1 and 4),
    ``alpha``/``vocab_size``/``coded_word_length`` (fwe, RULER defaults 2.0, 2000, 6),
    ``num_docs``/``kind`` (QA: a fixed document count in place of ``target_tokens``, and
    ``"bridge"`` or ``"comparison"`` questions only). ``codec`` sizes the documents: a
    transformers tokenizer (``model.tokenizer``), a tokenizer directory, ``"tiktoken:<name>"``
    or a :class:`TokenCodec`.

    Examples:
        >>> import tiktoken
        >>> from langgraph_memagent.agents.tokenizers import TiktokenCodec
        >>> codec = TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}))
        >>> [s.meta["length"] <= 3000 for s in generate_task("vt", 3000, codec=codec, num_samples=2)]
        [True, True]
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of: {', '.join(TASKS)}")
    unknown = set(task_options) - _TASK_OPTIONS[task]
    if unknown:
        allowed = ", ".join(sorted(_TASK_OPTIONS[task])) or "none"
        raise TypeError(f"{task} takes no option(s) {', '.join(sorted(unknown))}; its options: {allowed}")
    if target_tokens is not None and (not isinstance(target_tokens, int) or target_tokens < 1):
        raise ValueError(f"target_tokens must be a positive number of tokens, got {target_tokens!r}")
    positive_int("num_samples", num_samples)
    codec = resolve_tokenizer(codec)
    if task in MULTIHOP_TASKS:
        generator = multihop_sample
    else:
        generator = _niah if task in NIAH_CONFIGS else {"vt": _vt, "fwe": _fwe}[task]
    samples = []
    for index in range(num_samples):
        # A string seed goes through SHA-512 in random.seed: stable across runs and platforms.
        rng = random.Random(f"{task}/{seed}/{index}")
        options = dict(task_options)
        if options.get("gold_rank") == "balanced":  # every rank equally often, in turn
            options["gold_rank"] = index % (options.get("num_keys") or NIAH_CONFIGS[task].num_keys)
        sample = generator(task, rng, codec, target_tokens, **options)
        sample.meta.update(seed=seed, sample_index=index, target_tokens=target_tokens, tokenizer=getattr(codec, "name", ""))
        samples.append(sample)
    return samples


def niah_single_1(codec: TokenCodec, target_tokens: int, *, seed: int = 0, depth: float | None = None) -> Sample:
    """One ``niah_single_1`` record (noise haystack, word key, 7-digit number); see :func:`generate_task`.

    >>> from langgraph_memagent.agents.tokenizers import TiktokenCodec
    >>> import tiktoken
    >>> codec = TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}))
    >>> sample = niah_single_1(codec, 2000, seed=1)
    >>> sample.answers[0] in sample.document, len(render_ruler_input(sample).encode()) <= 2000
    (True, True)
    """
    options = {} if depth is None else {"depth": depth}
    return generate_task("niah_single_1", target_tokens, codec=codec, seed=seed, **options)[0]


def render_ruler_input(sample: Sample) -> str:
    """RULER's whole prompt for a record: its template with the document in place.

    Records of other sources (LoCoMo, MemAgent files) carry no template and render with
    RULER's QA prompt around the document.
    """
    meta = sample.meta
    if "prompt_before" in meta and "prompt_after" in meta:
        return f"{meta['prompt_before']}{sample.document}{meta['prompt_after']}"
    return prompt_template("qa", query=sample.question).render(sample.document)


def _answer_prefix(sample: Sample) -> str:
    return sample.meta.get("answer_prefix", TEMPLATE_FAMILIES["qa"].answer_prefix)


def write_ruler_jsonl(samples: Iterable[Sample], path: str | os.PathLike, *, layout: Literal["ruler", "memagent"] = "ruler") -> Path:
    """Write RULER's JSON lines: the official generator's fields, or MemAgent's variant.

    ``layout="ruler"``: ``index, input`` (whole prompt, haystack inside), ``outputs, length,
    length_w_model_temp, answer_prefix, token_position_answer``. No chat template is applied
    (RULER's ``base`` model template), so both lengths are the same. ``layout="memagent"``:
    ``index, input`` (question only), ``context`` (the haystack), ``outputs, answer_prefix, length``.
    ``length`` is the prompt's tokens plus RULER's generation budget, as RULER counts it.
    """
    if layout not in ("ruler", "memagent"):
        raise ValueError(f"layout must be 'ruler' or 'memagent', got {layout!r}")

    def lines() -> Iterable[str]:
        for index, sample in enumerate(samples):
            length = sample.meta.get("length")
            if length is not None:
                length += sample.meta.get("tokens_to_generate", 0)
            if layout == "ruler":
                record = {
                    "index": index,
                    "input": render_ruler_input(sample),
                    "outputs": sample.answers,
                    "length": length,
                    "length_w_model_temp": length,
                    "answer_prefix": _answer_prefix(sample),
                    "token_position_answer": sample.meta.get("token_position_answer"),
                }
            else:
                record = {
                    "index": index,
                    "input": sample.question,
                    "context": sample.document,
                    "outputs": sample.answers,
                    "answer_prefix": _answer_prefix(sample),
                    "length": length,
                }
            yield json.dumps(record, ensure_ascii=False) + "\n"

    return write_atomic(path, lines())


def write_memagent_eval(samples: Iterable[Sample], path: str | os.PathLike) -> Path:
    """Write MemAgent's ``eval_{N}.json``: a JSON list of ``{context, input, answers, num_docs, index}``.

    ``num_docs`` comes from the record's meta (multi-document QA); other tasks write ``null``.
    """

    def lines() -> Iterable[str]:
        yield "["
        for index, sample in enumerate(samples):
            record = {"context": sample.document, "input": sample.question, "answers": sample.answers, "num_docs": sample.meta.get("num_docs"), "index": index}
            yield ("," if index else "") + "\n" + json.dumps(record, ensure_ascii=False)
        yield "\n]\n"

    return write_atomic(path, lines())

