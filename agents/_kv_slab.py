"""A KV-cache layer that appends in place instead of re-concatenating every step.

transformers' ``DynamicLayer`` grows keys and values with ``torch.cat`` at each decode
step, copying the whole cache: for 8 rows of ~600 tokens through SmolLM2's 30 layers
that is ~240 MB per generated token, about a quarter of a CPU decode step (measured
here with torch.profiler). This layer keeps keys and values in a buffer with spare
columns and writes each new token into the next column; the attention sees a view.

The buffer may also hold spare rows and columns to the left of the cached ones, so a
decode batch can take a row in, or let one go, by copying that row alone
(:class:`Window`).
"""

from __future__ import annotations

from .extras import needs_extra

with needs_extra("embedded", "the local engine's KV cache"):
    import torch
    from transformers.cache_utils import DynamicLayer


# Columns of room kept past the cached length; a full buffer doubles.
SPARE_COLUMNS = 256


def _with_room(states: torch.Tensor, room: int) -> torch.Tensor:
    batch, heads, length, dim = states.shape
    slab = states.new_empty((batch, heads, length + room, dim))
    slab[:, :, :length] = states
    return slab


class Window:
    """The cached part of a ``(capacity rows, heads, columns, dim)`` buffer: rows ``[0, rows)``,
    columns ``[start, end)``. Rows past ``rows`` and columns outside the window are room."""

    __slots__ = ("slab", "rows", "start", "end")

    def __init__(self, slab: torch.Tensor, rows: int, start: int, end: int):
        self.slab, self.rows, self.start, self.end = slab, rows, start, end

    @classmethod
    def holding(cls, states: torch.Tensor) -> Window:
        """A window over a copy of ``states`` with :data:`SPARE_COLUMNS` of room after it."""
        return cls(_with_room(states, SPARE_COLUMNS), states.shape[0], 0, states.shape[-2])

    def view(self) -> torch.Tensor:
        return self.slab[: self.rows, :, self.start : self.end]

    def with_room(self, columns: int, contiguous: bool = False) -> torch.Tensor:
        """The buffer from ``start`` on, live rows only, grown first if ``columns`` more do not fit after ``end``.

        A full buffer is replaced by one twice the window's length, keeping its capacity in rows.
        ``contiguous=True`` moves a window that starts past column 0 to the front of a new buffer the same
        way (once), so the result is contiguous: an ahead-of-time compiled step assumes its inputs are.
        """
        if self.end + columns > self.slab.shape[-2] or (contiguous and self.start):
            length = self.end - self.start
            slab = self.slab.new_empty((self.slab.shape[0], self.slab.shape[1], length + max(columns, length), self.slab.shape[3]))
            slab[: self.rows, :, :length] = self.view()
            self.slab, self.start, self.end = slab, 0, length
        return self.slab[: self.rows, :, self.start :]

    def copy_row(self, source: int, target: int) -> None:
        self.slab[target, :, self.start : self.end] = self.slab[source, :, self.start : self.end]

    def put_row(self, row: int, states: torch.Tensor) -> None:
        """Write a ``(1, heads, length, dim)`` row right-aligned at ``end``, zeros to its left (padding: masked, but never NaN)."""
        length = states.shape[-2]
        self.slab[row, :, self.start : self.end - length] = 0
        self.slab[row, :, self.end - length : self.end] = states[0]

    def widen_to(self, start: int) -> None:
        """Move ``start`` left to ``start``; the live rows' new columns are padding (zeros)."""
        self.slab[: self.rows, :, start : self.start] = 0
        self.start = start


class SlabLayer(DynamicLayer):
    """A ``DynamicLayer`` whose ``keys``/``values`` are views of :class:`Window` s.

    Assigning ``keys`` or ``values`` (transformers' own cache edits) copies the tensor into a
    fresh buffer; :meth:`update` writes new tokens in place. Keys and values keep their own
    windows, so reading one while the other is being replaced (crop keys, assign, then crop
    values) sees consistent data.
    """

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        super().__init__()
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self.keys, self.values = keys, values

    @classmethod
    def from_slabs(cls, key_slab: torch.Tensor, value_slab: torch.Tensor, length: int, rows: int | None = None) -> SlabLayer:
        """A layer over buffers already holding ``length`` cached columns in their first ``rows`` rows (default: all),
        without copying them."""
        layer = cls.__new__(cls)
        DynamicLayer.__init__(layer)
        layer.dtype, layer.device, layer.is_initialized = key_slab.dtype, key_slab.device, True
        rows = key_slab.shape[0] if rows is None else rows
        layer.windows = (Window(key_slab, rows, 0, length), Window(value_slab, rows, 0, length))
        return layer

    @property
    def keys(self) -> torch.Tensor | None:
        return None if self._keys is None else self._keys.view()

    @keys.setter
    def keys(self, states: torch.Tensor | None) -> None:
        self._keys = None if states is None else Window.holding(states)

    @property
    def values(self) -> torch.Tensor | None:
        return None if self._values is None else self._values.view()

    @values.setter
    def values(self, states: torch.Tensor | None) -> None:
        self._values = None if states is None else Window.holding(states)

    @property
    def windows(self) -> tuple[Window, Window]:
        return self._keys, self._values

    @windows.setter
    def windows(self, windows: tuple[Window, Window]) -> None:
        self._keys, self._values = windows

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        columns, length = key_states.shape[-2], self.get_seq_length()
        keys, values = self.buffers_with_room(columns)
        keys[:, :, length : length + columns] = key_states
        values[:, :, length : length + columns] = value_states
        self.extend(columns)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._keys.end - self._keys.start

    def buffers_with_room(self, columns: int, contiguous: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """The key and value buffers from the first cached column on, grown if needed so ``columns``
        more tokens fit after the cached ones (contiguous if asked: see :meth:`Window.with_room`).

        For a step that writes the new columns itself (a compiled step writes into the buffers it is
        given, at :meth:`get_seq_length`); :meth:`extend` then counts them.
        """
        return self._keys.with_room(columns, contiguous), self._values.with_room(columns, contiguous)

    def extend(self, columns: int) -> None:
        """Count ``columns`` tokens written past the cached ones into :meth:`buffers_with_room`'s buffers."""
        self._keys.end += columns
        self._values.end += columns
