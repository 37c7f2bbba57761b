"""Draft tokens for greedy decoding, copied from what the sequence already holds (prompt lookup decoding).

A MemAgent memory update mostly rewrites the memory it was given, so its next tokens usually
follow the last few tokens somewhere earlier in the prompt. The engine drafts them from there
and checks the whole draft in one forward of the model (several rows of each product cost much
less than that many steps on CPU); the tokens the model itself picks greedily are kept, up to
the first that departs from the draft. This is Saxena's prompt lookup decoding (2023), as
transformers offers it with ``generate(prompt_lookup_num_tokens=...)``. Every kept token is the
model's own greedy choice; only the arithmetic differs, because a product over several rows
rounds differently from a single row's (measured in BENCHMARKS.md section 10).

>>> draft_from_history([5, 6, 7, 8, 9, 5, 6], 3)
[7, 8, 9]
>>> draft_from_history([1, 2, 3], 3)
[]
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_NGRAM = 3  # the longest ending matched; a shorter one is tried when it occurs nowhere earlier
# The engine's default draft length: the fastest of 2-16 on MemAgent's calls on a development
# haystack (BENCHMARKS.md section 10), and llama.cpp's and transformers' usual order of 10.
DRAFT_TOKENS = 12


def draft_from_history(tokens: Sequence[int], num_tokens: int, max_ngram: int = MAX_NGRAM) -> list[int]:
    """The up to ``num_tokens`` tokens that followed the latest earlier occurrence of ``tokens``' last n-gram.

    The longest ending of at most ``max_ngram`` tokens that occurs earlier wins; the latest
    occurrence of it is copied (a memory being rewritten sits late in the prompt). Empty when
    even the last token occurs nowhere earlier.
    """
    tokens = list(tokens)
    end = len(tokens)
    for size in range(min(max_ngram, end - 1), 0, -1):
        ending = tokens[end - size :]
        first = ending[0]
        for start in range(end - size - 1, -1, -1):
            if tokens[start] == first and tokens[start : start + size] == ending:
                return tokens[start + size : start + size + num_tokens]
    return []


__all__ = ["DRAFT_TOKENS", "draft_from_history"]
