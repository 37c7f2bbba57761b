"""Recent prompts' key/value caches, so a prompt that starts like one of them prefills only its new tokens.

Agent rollouts repeat themselves: GRPO's G rollouts of a question open with the same prompt,
every SUMER prompt starts with the same system prompt and tool schemas, and a rollout's next
turn starts with its previous turn. The engine prefills a prompt one at a time, so each of
those shared tokens ran through the model again. Here the engine keeps the caches of its last
few prompts; a new prompt continues the longest prefix it shares with one of them, and only
the rest is prefilled.

The cached keys and values are valid only for the weights that made them: a store is emptied
when the model's parameters change in place (their version counters, which an optimizer step
or a loaded state dict moves) and at the start of each busy spell of the engine. Splitting a
prefill at a different point changes float32 rounding, not the computation; the greedy
agreement with whole prefills is measured in ``benchmarks/bench_prefix_cache.py``.

>>> store = PrefixCache(capacity=2)
>>> store.longest([1, 2, 3])
(0, None)
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

# Shorter shared prefixes are prefilled again: copying their cache costs about what it saves.
MIN_SHARED_TOKENS = 32


def weights_version(model: Any) -> int:
    """A number that changes whenever any parameter of ``model`` is modified in place."""
    return sum(parameter._version for parameter in model.parameters())


class PrefixCache:
    """The key/value caches of the ``capacity`` most recently prefilled prompts (least recently used leave first)."""

    def __init__(self, capacity: int = 16):
        if capacity < 1:
            raise ValueError(f"prefix cache capacity must be >= 1, got {capacity!r}")
        self.capacity = capacity
        self._entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self._version: int | None = None
        self.reused_tokens = 0  # prompt tokens not prefilled again, since the engine started
        self.prefilled_tokens = 0  # prompt tokens that were

    def clear(self) -> None:
        """Forget every prompt (a new busy spell: the weights may have changed)."""
        self._entries.clear()

    def check_weights(self, version: int) -> None:
        """Empty the store if the weights' :func:`weights_version` moved since the last prompt."""
        if version != self._version:
            self._entries.clear()
            self._version = version

    def longest(self, prompt_ids: list[int]) -> tuple[int, list[tuple[Any, Any]] | None]:
        """The most tokens (up to all but the last) ``prompt_ids`` shares with a stored prompt, and that prompt's per-layer keys and values.

        At least one token is left to prefill, since the prefill's last position gives the first
        sampled token; under :data:`MIN_SHARED_TOKENS`, ``(0, None)``. Counts the prompt's
        tokens as reused or to prefill.
        """
        best, best_layers, best_key = 0, None, None
        limit = len(prompt_ids) - 1
        for key, layers in self._entries.items():
            shared = _common_prefix(key, prompt_ids, limit)
            if shared > best:
                best, best_layers, best_key = shared, layers, key
        if best < MIN_SHARED_TOKENS:
            best, best_layers = 0, None
        else:
            self._entries.move_to_end(best_key)
        self.reused_tokens += best
        self.prefilled_tokens += len(prompt_ids) - best
        return best, best_layers

    def put(self, prompt_ids: list[int], layers: list[tuple[Any, Any]]) -> None:
        """Keep ``prompt_ids``' per-layer ``(keys, values)``, shape ``(1, heads, len(prompt_ids), dim)``, never written to."""
        key = tuple(prompt_ids)
        self._entries[key] = layers
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def _common_prefix(stored: tuple[int, ...], prompt: list[int], limit: int) -> int:
    """Length of the common prefix of ``stored`` and ``prompt``, at most ``limit``.

    >>> _common_prefix((1, 2, 3, 4), [1, 2, 9], 2), _common_prefix((1, 2), [1, 2, 3], 5)
    (2, 2)
    """
    count = min(len(stored), len(prompt), limit)
    if stored[:count] == tuple(prompt[:count]):  # the usual case (a group's same prompt, a turn's history), compared in C
        return count
    for index in range(count):
        if stored[index] != prompt[index]:
            return index
    return count


__all__ = ["MIN_SHARED_TOKENS", "PrefixCache", "weights_version"]
