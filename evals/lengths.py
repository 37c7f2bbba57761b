"""Document lengths in tokens, written the way RULER and the papers write them (4k = 4096).

>>> parse_lengths("4k,8K,16384,1M")
[4096, 8192, 16384, 1048576]
"""

from __future__ import annotations

import re


_LENGTH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


class ComparisonError(ValueError):
    """Bad comparison settings or files: the message names the bad value and what was expected."""


def parse_length(text: str) -> int:
    """A length in tokens from ``"4k"`` (4096, as RULER counts), ``"4096"`` or ``"1M"``.

    >>> parse_length("4k"), parse_length("1M"), parse_length("3000")
    (4096, 1048576, 3000)
    >>> try:
    ...     parse_length("4 kb")
    ... except ComparisonError as error:
    ...     print(error)
    bad length '4 kb': expected a token count such as 4096, 4k, 128K or 1M
    """
    match = _LENGTH.match(text)
    if not match:
        raise ComparisonError(f"bad length {text!r}: expected a token count such as 4096, 4k, 128K or 1M")
    number, unit = float(match.group(1)), match.group(2).lower()
    tokens = number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit]
    if tokens != int(tokens) or tokens < 1:
        raise ComparisonError(f"bad length {text!r}: expected a whole positive number of tokens")
    return int(tokens)


def parse_lengths(text: str) -> list[int]:
    """Comma-separated lengths (see :func:`parse_length`), ascending, without repeats."""
    lengths = sorted({parse_length(part) for part in text.split(",") if part.strip()})
    if not lengths:
        raise ComparisonError(f"bad lengths {text!r}: expected a comma-separated list such as 4k,8k,16k")
    return lengths


def format_tokens(tokens: float) -> str:
    """A token count the way papers label axes: 4096 -> ``4K``, 7168 -> ``7K``, 3.5M tokens -> ``3.5M``.

    >>> format_tokens(4096), format_tokens(14336), format_tokens(3670016), format_tokens(500)
    ('4K', '14K', '3.5M', '500')
    """
    for unit, size in (("M", 1024 * 1024), ("K", 1024)):
        if tokens >= size:
            return f"{tokens / size:.3g}{unit}"
    return f"{tokens:.0f}"
