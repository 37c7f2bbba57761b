"""Micro-batches by a token budget: rows of one training batch split so each forward pass stays small.

A batch's rows are padded to its longest prompt and completion, and TRL sends a whole
per-device batch through one forward pass (about 250K tokens for ``paper-7b``). With
``max_tokens_per_forward`` the rows go through in consecutive parts of equal row counts,
each trimmed to its own longest row, whose ``rows x padded length`` stays within the
budget (a single row longer than the budget is a part of its own).

>>> prompt_mask = torch.tensor([[0, 0, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1]])
>>> completion_mask = torch.tensor([[1, 0], [1, 1], [1, 1], [1, 0]])
>>> rows_per_part(prompt_mask, completion_mask, budget=8), rows_per_part(prompt_mask, completion_mask, budget=10)
(1, 2)
>>> split_rows(4, 2)
[range(0, 2), range(2, 4)]
>>> part = trim_part({"prompt_ids": prompt_mask * 7, "prompt_mask": prompt_mask,
...                   "completion_ids": completion_mask * 9, "completion_mask": completion_mask,
...                   "advantages": torch.tensor([1.0, 2.0, 3.0, 4.0])}, range(0, 2))
>>> part["prompt_ids"].tolist(), part["completion_ids"].tolist(), part["advantages"].tolist()
([[0, 7], [7, 7]], [[9, 0], [9, 9]], [1.0, 2.0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Per-token tensors of TRL's loss inputs, laid out like the completion (right-padded).
COMPLETION_KEYS = (
    "completion_ids", "completion_mask", "tool_mask", "old_per_token_logps", "ref_per_token_logps",
    "sampling_per_token_logps", "importance_sampling_ratio",
)
PROMPT_KEYS = ("prompt_ids", "prompt_mask")


def _widths(prompt_mask: torch.Tensor, completion_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's used prompt width (prompts are left-padded) and completion width (at least 1)."""
    prompt = prompt_mask.sum(dim=1)
    positions = torch.arange(1, completion_mask.size(1) + 1, device=completion_mask.device)
    completion = (completion_mask.bool() * positions).amax(dim=1).clamp(min=1)
    return prompt, completion


def rows_per_part(
    prompt_mask: torch.Tensor, completion_mask: torch.Tensor, budget: int, part_size: Callable[[int, int], int] | None = None
) -> int:
    """The most rows per part such that parts of that many consecutive rows each fit ``budget`` (at least 1).

    A part's size is ``part_size(start, stop)`` for rows ``start:stop``; by default its rows
    times its longest prompt plus its longest completion. Every process then uses the smallest
    of their sizes: the parts (and the per-row tensors TRL gathers from each) have the same rows
    on every process.
    """
    rows = prompt_mask.size(0)
    prompt, completion = (width.tolist() for width in _widths(prompt_mask, completion_mask))

    def padded_size(start: int, stop: int) -> int:
        return (stop - start) * (max(prompt[start:stop]) + max(completion[start:stop]))

    size_of = part_size or padded_size

    def fits(size: int) -> bool:
        return all(size_of(start, min(start + size, rows)) <= budget for start in range(0, rows, size))

    return next((size for size in range(rows, 1, -1) if fits(size)), 1)


def split_rows(rows: int, size: int) -> list[range]:
    """``range(rows)`` in consecutive parts of ``size`` rows (the last may be shorter)."""
    return [range(start, min(start + size, rows)) for start in range(0, rows, size)]


def trim_part(inputs: dict[str, Any], rows: range) -> dict[str, Any]:
    """``inputs`` restricted to ``rows``, without the padding columns none of those rows uses.

    Prompt tensors lose left columns, per-token completion tensors right columns; other
    per-row tensors are sliced by row; everything else (e.g. ``num_items_in_batch``) is kept.
    """
    part_rows = slice(rows.start, rows.stop)
    prompt, completion = _widths(inputs["prompt_mask"][part_rows], inputs["completion_mask"][part_rows])
    prompt_start = inputs["prompt_mask"].size(1) - int(prompt.max())
    completion_stop = int(completion.max())
    total_rows = inputs["prompt_ids"].size(0)
    part = {}
    for key, value in inputs.items():
        if key in PROMPT_KEYS:
            part[key] = value[part_rows, prompt_start:]
        elif key in COMPLETION_KEYS and value is not None and value.dim() == 2 and value.size(1) > 1:
            part[key] = value[part_rows, :completion_stop]
        elif isinstance(value, torch.Tensor) and value.dim() >= 1 and value.size(0) == total_rows:
            part[key] = value[part_rows]
        else:
            part[key] = value
    return part
