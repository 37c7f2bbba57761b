"""English prose for RULER's essay haystacks, with nothing to download.

RULER fills its essay haystacks with Paul Graham essays fetched at run time, which this
project cannot reach. Any long prose that plays the same role (coherent English that
does not contain the needles) will do, so the sentences come from text that ships with
Python itself: ``pydoc_data.topics.topics``, the ~460 KB of language-reference prose
behind ``help()``. Its paragraphs are cut into sentences and only prose sentences are
kept (code samples, grammar rules, tables and headings are dropped): about 1,700
sentences, roughly 45K tokens. Longer haystacks wrap around to the first sentence again,
as RULER's own essay haystack repeats when the essays run out.

The text belongs to the running Python version, so the same seed gives the same bytes
on the same Python minor version; another version may word a few sentences differently.

>>> sentences = essay_sentences()
>>> len(sentences) > 1000, all(s[0].isupper() and s.endswith(".") for s in sentences)
(True, True)
"""

from __future__ import annotations

import re
from functools import cache


# A sentence ends at ., ! or ? followed by whitespace and a capital letter; abbreviations
# such as "e.g." are followed by a lower-case word and so do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# Reference-manual markup that is not prose: headings underlined with ***/===/---,
# grammar productions (::=), doctest prompts, footnote and table rules.
_NOT_PROSE = re.compile(r"::|>>>|\.\.\.|\*\*|==|--|\[\d+\]|\|")
_BULLET = re.compile(r"^[*-] ")
_MIN_CHARS, _MAX_CHARS = 40, 400


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks with their lines joined and a list bullet removed."""
    return [_BULLET.sub("", " ".join(line.strip() for line in block.split("\n"))) for block in re.split(r"\n\s*\n", text)]


def _is_prose(sentence: str) -> bool:
    letters = sum(char.isalpha() or char == " " for char in sentence)
    return (
        _MIN_CHARS <= len(sentence) <= _MAX_CHARS
        and sentence[0].isupper()
        and sentence.endswith(".")
        and not _NOT_PROSE.search(sentence)
        # Mostly words: sentences dense in symbols are code, not prose.
        and letters / len(sentence) > 0.85
    )


@cache
def essay_sentences() -> tuple[str, ...]:
    """The prose sentences, in a fixed order (topics sorted by name, text order within)."""
    from pydoc_data.topics import topics

    sentences = []
    for name in sorted(topics):
        for paragraph in _paragraphs(topics[name]):
            sentences.extend(s for s in _SENTENCE_END.split(paragraph) if _is_prose(s))
    # The same sentence (boilerplate such as "See also ...") would repeat across topics.
    return tuple(dict.fromkeys(sentences))


def essay_slice(start: int, count: int) -> list[str]:
    """``count`` consecutive sentences from index ``start``, wrapping around the end.

    >>> essay_slice(len(essay_sentences()) - 1, 2)[1] == essay_sentences()[0]
    True
    """
    sentences = essay_sentences()
    return [sentences[(start + offset) % len(sentences)] for offset in range(count)]
