"""Token streaming for the local backends: a reply's text, piece by piece, as its tokens are decoded.

The engine hands over each step's new token ids (:meth:`.batched_generator.BatchedGenerator.submit`'s
``on_tokens``); :class:`TextDeltas` turns them into the text they add. Two things are held back
until more tokens settle them: a trailing partial UTF-8 character (the tokenizer shows it as
U+FFFD), and a tail that may be the start of a stop string, so no streamed piece ever holds text
that the finished reply cuts.

>>> class Chars:  # a tokenizer whose token ids are character codes
...     def decode(self, ids, skip_special_tokens=True):
...         return "".join(map(chr, ids))
>>> deltas = TextDeltas(Chars(), stop=("##",))
>>> [deltas.add([ord(c)]) for c in "ab#c#"]
['a', 'b', '', '#c', '']
>>> deltas.rest("ab#c")   # the engine cut the reply at the stop string "##"
''
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TextDeltas:
    """The text each batch of new tokens adds to a reply, with what may still change held back."""

    def __init__(self, tokenizer: Any, stop: Sequence[str] = ()):
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.ids: list[int] = []
        self.sent = ""  # the text handed out so far: always a prefix of the finished reply

    def add(self, ids: list[int]) -> str:
        """The text that ``ids`` (the next tokens) add and that nothing later can take back."""
        self.ids.extend(ids)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        settled = len(text.rstrip("\ufffd"))
        for stop in self.stop:
            cut = text.find(stop)
            if cut >= 0:
                settled = min(settled, cut)
            else:  # the longest tail that starts the stop string may become it
                settled = min(settled, len(text) - _longest_prefix_at_end(text, stop))
        if settled <= len(self.sent) or not text.startswith(self.sent):
            return ""
        piece, self.sent = text[len(self.sent) : settled], text[:settled]
        return piece

    def rest(self, final_text: str) -> str:
        """What remains of the finished reply's text after the pieces handed out."""
        if not final_text.startswith(self.sent):
            raise RuntimeError(f"streamed text {self.sent!r} is not a prefix of the reply {final_text!r}")
        return final_text[len(self.sent) :]


def _longest_prefix_at_end(text: str, stop: str) -> int:
    """Length of the longest proper prefix of ``stop`` that ``text`` ends with."""
    for size in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:size]):
            return size
    return 0


__all__ = ["TextDeltas"]
