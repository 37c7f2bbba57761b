"""The row math of multi-conversation GRPO: every LLM call of a rollout is a row sharing its rollout's advantage."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from trl.trainer.utils import pad

from .rollouts import Rollout


# How the loss weighs a batch's tokens (``--loss_aggregation``, see :func:`rollout_rows`): the token
# mean (MemAgent), the mean over rollouts of each rollout's token mean, or of each rollout's token sum (SUMER).
LOSS_AGGREGATIONS = ("token", "rollout", "rollout_sum")


# Advantages and rows (pure functions: what the tests check against hand computations)
def vllm_importance_ratio(
    old_logps: torch.Tensor,
    sampling_logps: torch.Tensor,
    mask: torch.Tensor,
    *,
    mode: str = "sequence_mask",
    clip_min: float | None = None,
    clip_max: float | None = 3.0,
) -> torch.Tensor:
    """TRL's vLLM importance-sampling correction (TRL 1.16) for rows whose tokens vLLM sampled.

    The ratio pi_old / pi_vllm per token (``token_*`` modes, shape ``(rows, tokens)``) or
    per row (``sequence_*``: the product over the row's tokens, shape ``(rows, 1)``);
    ``*_truncate`` clamps it to ``[clip_min, clip_max]``, ``*_mask`` sets it to 0 outside.
    A token without a sampling log-prob (NaN) counts as ratio 1. Defaults are TRL's.

    >>> old = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1]]))
    >>> vllm = torch.log(torch.tensor([[0.25, 0.5], [0.1, float("nan")]]))
    >>> mask = torch.tensor([[1, 1], [1, 0]])
    >>> vllm_importance_ratio(old, vllm, mask).squeeze(1).tolist()   # 2.0 kept, 9.0 > 3 masked
    [2.0, 0.0]
    >>> vllm_importance_ratio(old, vllm, mask, mode="token_truncate").tolist()
    [[2.0, 1.0], [3.0, 1.0]]
    """
    if mode not in ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask"):
        raise ValueError(f"unknown vllm_importance_sampling_mode {mode!r}; expected token_/sequence_ + truncate/mask")
    difference = torch.nan_to_num((old_logps - sampling_logps) * mask, nan=0.0)
    if mode.startswith("sequence"):
        difference = difference.sum(dim=-1, keepdim=True)
    ratio = torch.exp(difference)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    low = -math.inf if clip_min is None else clip_min
    high = math.inf if clip_max is None else clip_max
    return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)


def group_advantages(rewards: torch.Tensor, group_ids: torch.Tensor, *, scale: str = "none") -> torch.Tensor:
    """Per-rollout advantage ``R_i - mean(R of its group)``, groups given by rollout-group id.

    ``scale="group"`` divides by the group's standard deviation (+1e-4, as TRL),
    ``"batch"`` by the whole batch's; ``"none"`` is Dr. GRPO (MemAgent). Groups need
    not be contiguous or equal-sized; a group whose rewards are all equal gets 0.

    >>> group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), torch.tensor([0, 0, 1, 1]))
    tensor([ 0.5000, -0.5000,  0.0000,  0.0000])
    """
    if rewards.shape != group_ids.shape or rewards.dim() != 1:
        raise ValueError(f"rewards {tuple(rewards.shape)} and group_ids {tuple(group_ids.shape)} must be equal 1-D shapes")
    if scale not in ("none", "group", "batch"):
        raise ValueError(f"scale must be 'none', 'group' or 'batch', got {scale!r}")
    _, inverse = torch.unique(group_ids, return_inverse=True)
    counts = torch.bincount(inverse).to(rewards.dtype)
    means = torch.zeros_like(counts).index_add_(0, inverse, rewards) / counts
    advantages = rewards - means[inverse]
    if scale == "group":
        squares = torch.zeros_like(counts).index_add_(0, inverse, advantages**2)
        std = torch.sqrt(squares / (counts - 1).clamp(min=1))  # unbiased, like TRL's nanstd
        advantages = advantages / (std[inverse] + 1e-4)
    elif scale == "batch":
        std = rewards.std() if rewards.numel() > 1 else rewards.new_zeros(())
        advantages = advantages / (std + 1e-4)
    return advantages


def rollout_group_ids(num_rollouts: int, num_generations: int, *, first_rollout: int = 0) -> list[int]:
    """GRPO group of each rollout of a process's slice: its *question's* position, never its own.

    TRL's sampler puts the ``num_generations`` copies of a question next to each other
    in the global generation batch and gives each process a contiguous slice, so the
    group is the global rollout position divided by G. (Grouping by trajectory instead
    would make every group a singleton and every advantage zero.)

    >>> rollout_group_ids(4, 2, first_rollout=4)
    [2, 2, 3, 3]
    """
    if num_generations < 1:
        raise ValueError(f"num_generations must be >= 1, got {num_generations!r}")
    return [(first_rollout + i) // num_generations for i in range(num_rollouts)]


@dataclass
class RowBatch:
    """The rows of a generation batch, before padding into tensors."""

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    advantages: list[float]
    token_weights: list[float]  # loss weight of each token of the row (1.0 for the token mean)
    rollout_index: list[int]  # which rollout a row came from; -1 for padding rows
    sampling_logps: list[list[float | None] | None] = field(default_factory=list)  # vLLM's, per completion token

    def __len__(self) -> int:
        return len(self.prompt_ids)


def rollout_rows(
    rollouts: Sequence[Rollout],
    advantages: Sequence[float],
    *,
    loss_aggregation: str = "token",
    total_tokens: int | None = None,
    total_rollouts: int | None = None,
) -> RowBatch:
    """One row per LLM call; every row of a rollout carries that rollout's advantage.

    The weights act on TRL's token-summed losses (``loss_type`` ``dapo`` or ``cispo``), which
    divide the batch's weighted token sum by its ``total_tokens``. ``"token"``: every weight 1,
    the token mean. ``"rollout"``: token ``t`` of rollout ``r`` weighs
    ``total_tokens / (total_rollouts * tokens_r)``, so the loss is the mean over rollouts of
    each rollout's token mean. ``"rollout_sum"`` (the SUMER paper's): every token weighs
    ``total_tokens / total_rollouts``, so the loss is the mean over rollouts of each rollout's
    token sum; with groups of G rollouts, the mean over groups of ``(1/G) sum_i sum_t``. Within
    one batch this is the token mean times the mean completion tokens per rollout; across
    batches, a batch of longer rollouts takes a larger step. ``total_*`` default to this batch
    (pass the global counts when several processes share a batch).

    >>> from langgraph_memagent.training.rollouts import LLMCall, Rollout
    >>> rollout = Rollout(0, 0, [LLMCall([1], [2, 3], "m"), LLMCall([4], [5], "a")], {})
    >>> rows = rollout_rows([rollout], [0.5])
    >>> rows.completion_ids, rows.advantages
    ([[2, 3], [5]], [0.5, 0.5])
    >>> rollout_rows([rollout], [0.5], loss_aggregation="rollout_sum", total_tokens=6, total_rollouts=2).token_weights
    [3.0, 3.0]
    """
    if len(rollouts) != len(advantages):
        raise ValueError(f"got {len(advantages)} advantages for {len(rollouts)} rollouts")
    if loss_aggregation not in LOSS_AGGREGATIONS:
        raise ValueError(f"loss_aggregation must be one of {list(LOSS_AGGREGATIONS)}, got {loss_aggregation!r}")
    total_tokens = sum(r.completion_tokens for r in rollouts) if total_tokens is None else total_tokens
    total_rollouts = len(rollouts) if total_rollouts is None else total_rollouts
    rows = RowBatch([], [], [], [], [])
    for index, (rollout, advantage) in enumerate(zip(rollouts, advantages)):
        weight = 1.0
        if loss_aggregation == "rollout":
            weight = total_tokens / (total_rollouts * max(rollout.completion_tokens, 1))
        elif loss_aggregation == "rollout_sum":
            weight = total_tokens / max(total_rollouts, 1)
        for call in rollout.calls:
            rows.prompt_ids.append(call.prompt_ids)
            rows.completion_ids.append(call.completion_ids)
            rows.advantages.append(float(advantage))
            rows.token_weights.append(weight)
            rows.rollout_index.append(index)
            rows.sampling_logps.append(call.sampling_logps)
    return rows


def rollout_old_logps(sampling_logps: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """The engine's log-probs as the old policy's (``--old_logps rollout``): zero where masked.

    Every unmasked token needs its log-prob; one missing (NaN) means the engine did not sample
    that call, and recomputing is the only sound answer.

    >>> rollout_old_logps(torch.tensor([[-0.5, float("nan")]]), torch.tensor([[1, 0]])).tolist()
    [[-0.5, 0.0]]
    >>> rollout_old_logps(torch.tensor([[float("nan")]]), torch.tensor([[1]]))
    Traceback (most recent call last):
    ...
    ValueError: old_logps 'rollout': 1 completion tokens have no log-prob from the rollout engine (greedy calls?); use --old_logps recompute
    """
    missing = int((torch.isnan(sampling_logps) & completion_mask.bool()).sum())
    if missing:
        raise ValueError(
            f"old_logps 'rollout': {missing} completion tokens have no log-prob from the rollout engine (greedy calls?); use --old_logps recompute"
        )
    return torch.where(completion_mask.bool(), sampling_logps, torch.zeros_like(sampling_logps))


def pad_rows(rows: RowBatch, multiple: int, pad_token_id: int, *, minimum: int = 0) -> int:
    """Append zero-mask, zero-advantage rows until ``len(rows)`` is at least ``minimum`` and a multiple of ``multiple``.

    TRL splits a generation batch into ``steps_per_generation`` equal slices and drops
    the remainder; padding rows carry no loss, so nothing real is dropped and nothing
    fake is learnt. With several processes ``minimum`` is the most rows any process has:
    every process then makes the same number of forward passes, which collective weight
    gathers (DeepSpeed ZeRO-3) need. A padding row has a one-token prompt (an all-masked
    row would make attention undefined) and an empty completion. Returns the number of rows added.

    >>> rows = RowBatch([[1]] * 5, [[2]] * 5, [1.0] * 5, [1.0] * 5, list(range(5)))
    >>> pad_rows(rows, 4, pad_token_id=0), len(rows), rows.advantages[-1]
    (3, 8, 0.0)
    >>> pad_rows(rows, 4, pad_token_id=0, minimum=9), len(rows)
    (4, 12)
    """
    if multiple < 1:
        raise ValueError(f"multiple must be >= 1, got {multiple!r}")
    target = max(len(rows), minimum)
    missing = target - len(rows) + (-target) % multiple
    for _ in range(missing):
        rows.prompt_ids.append([pad_token_id])
        rows.completion_ids.append([])
        rows.advantages.append(0.0)
        rows.token_weights.append(0.0)
        rows.rollout_index.append(-1)
        rows.sampling_logps.append(None)
    return missing


def rows_to_tensors(rows: RowBatch, pad_token_id: int, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Left-padded prompts, right-padded completions, masks, advantages and per-token weights.

    >>> rows = RowBatch([[7, 8], [9]], [[1], [2, 3]], [0.5, -0.5], [1.0, 1.0], [0, 1])
    >>> batch = rows_to_tensors(rows, pad_token_id=0)
    >>> batch["prompt_ids"].tolist(), batch["completion_mask"].tolist()
    ([[7, 8], [0, 9]], [[1, 0], [1, 1]])
    """
    prompts = [torch.tensor(ids, dtype=torch.long) for ids in rows.prompt_ids]
    # An empty completion (padding row) still needs one column so every row has a width.
    completions = [torch.tensor(ids or [pad_token_id], dtype=torch.long) for ids in rows.completion_ids]
    completion_mask = [torch.full((max(len(ids), 1),), int(bool(ids)), dtype=torch.long) for ids in rows.completion_ids]
    weights = [torch.full((len(c),), w, dtype=torch.float32) for c, w in zip(completions, rows.token_weights)]
    tensors = {
        "prompt_ids": pad(prompts, padding_value=pad_token_id, padding_side="left").to(device),
        "prompt_mask": pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left").to(device),
        "completion_ids": pad(completions, padding_value=pad_token_id, padding_side="right").to(device),
        "completion_mask": pad(completion_mask, padding_value=0, padding_side="right").to(device),
        "token_weights": pad(weights, padding_value=0.0, padding_side="right").to(device),
        "advantages": torch.tensor(rows.advantages, dtype=torch.float32, device=device),
    }
    if any(logps is not None for logps in rows.sampling_logps):
        # NaN where no sampling log-prob exists (padding, masked calls): TRL's correction reads it as ratio 1.
        sampling = []
        for logps, ids in zip(rows.sampling_logps, rows.completion_ids):
            values = [math.nan if value is None else value for value in (logps or [])][: len(ids)]
            sampling.append(torch.tensor(values + [math.nan] * (max(len(ids), 1) - len(values)), dtype=torch.float32))
        tensors["sampling_logps"] = pad(sampling, padding_value=math.nan, padding_side="right").to(device)
    return tensors
