"""RULER-style needle-in-a-haystack samples (NVIDIA RULER, arXiv 2404.06654), seeded.

This module carries ``niah_single_1`` (noise haystack, word key, 7-digit number),
the task the demo and the end-to-end tests use. Same seed, same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from importlib import resources

from ..agents.tokenizers import TokenCodec, encode_long

NOISE_LINE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
NEEDLE = "One of the special magic numbers for {key} is: {value}."
QUESTION = "What is the special magic number for {key} mentioned in the provided text?"


@dataclass
class Sample:
    """One task instance in the shape every loader and graph of this package uses."""

    question: str
    document: str
    answers: list[str]
    task: str
    metric: str = "string_match_all"
    meta: dict = field(default_factory=dict)

    def __getitem__(self, key: str):
        return getattr(self, key)


def _words(name: str) -> list[str]:
    # RULER draws keys from the wonderwords lists; read them without importing its CLI.
    text = resources.files("wonderwords").joinpath("assets", name).read_text(encoding="utf-8")
    return sorted({w for w in text.split() if w.isalpha() and w.islower()})


def niah_single_1(codec: TokenCodec, target_tokens: int, *, seed: int = 0, depth: float | None = None) -> Sample:
    """A noise haystack of about ``target_tokens`` tokens with one needle at ``depth`` (0..1).

    The haystack is sized by search so the document stays within ``target_tokens``
    under ``codec``; ``depth`` defaults to a seeded uniform draw.

    >>> from langgraph_memagent.agents.tokenizers import TiktokenCodec
    >>> import tiktoken
    >>> codec = TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}))
    >>> sample = niah_single_1(codec, 2000, seed=1)
    >>> sample.answers[0] in sample.document, len(sample.document.encode()) <= 2000
    (True, True)
    """
    if target_tokens < 64:
        raise ValueError(f"target_tokens must be at least 64, got {target_tokens!r}")
    rng = random.Random(seed)
    key = f"{rng.choice(_words('adjectivelist.txt'))}-{rng.choice(_words('nounlist.txt'))}"
    value = str(rng.randint(1_000_000, 9_999_999))
    depth = rng.random() if depth is None else depth
    needle = NEEDLE.format(key=key, value=value)

    def build(lines: int) -> str:
        haystack = [NOISE_LINE] * lines
        haystack.insert(round(depth * lines), needle)
        return "\n".join(haystack)

    def tokens(lines: int) -> int:
        return len(encode_long(build(lines), codec))

    # Tokens grow linearly in lines: estimate, then search for the largest fit.
    per_line = max(1, tokens(100) - tokens(0)) / 100
    low, high = 0, int(target_tokens / per_line) + 2
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if tokens(middle) <= target_tokens else (low, middle - 1)
    return Sample(
        question=QUESTION.format(key=key),
        document=build(low),
        answers=[value],
        task="niah_single_1",
        meta={"depth": depth, "key": key, "seed": seed, "target_tokens": target_tokens},
    )
