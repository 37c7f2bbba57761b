"""Next-token choice for the local engine: greedy, or sampling with transformers' logits processors.

The settings and their order are transformers' (and TRL's ``GRPOConfig`` fields):
``repetition_penalty`` on every token the row has seen (prompt and generated), then greedy
when ``temperature`` is 0, else temperature, ``top_k``, ``top_p`` and ``min_p``, and one
draw. Every row of a batch keeps its own settings.

>>> import torch
>>> logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
>>> next_tokens(logits, [SamplingParams(max_tokens=4, temperature=0.0, top_p=1.0)], [[]])
[0]
>>> next_tokens(logits, [SamplingParams(max_tokens=4, temperature=0.0, top_p=1.0, repetition_penalty=4.0)], [[0]])
[1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .calls import positive_int
from .prompt_lookup import DRAFT_TOKENS

# Tokens ranked for top_k and top_p before the whole vocabulary is: in a row whose cut falls
# among them (any peaked distribution), sampling is exactly as with a full sort.
RANKED_CANDIDATES = 1024


@dataclass(frozen=True)
class SamplingParams:
    """Per-call generation settings; calls with equal settings share a batch."""

    max_tokens: int  # generation limit
    temperature: float  # 0 = greedy
    top_p: float  # nucleus mass kept, 1.0 = all
    top_k: int = 0  # most likely tokens kept, 0 = all
    min_p: float = 0.0  # drop tokens below min_p x the top token's probability, 0.0 = none
    repetition_penalty: float = 1.0  # divides the logits of tokens already seen (multiplies negative ones), 1.0 = none
    logprobs: bool = False  # report each sampled token's log-prob under the policy at the temperature (a trainer's old log-probs)
    # Greedy calls decoded alone on an engine that drafts: tokens drafted from the sequence and checked in one forward, 0 = off.
    prompt_lookup_num_tokens: int = DRAFT_TOKENS
    stop: tuple[str, ...] = ()  # strings that end the reply where they first appear, cut from its text (as servers do)

    def __post_init__(self) -> None:
        positive_int("max_tokens", self.max_tokens)
        if not isinstance(self.stop, tuple) or not all(isinstance(text, str) and text for text in self.stop):
            raise ValueError(f"stop must be a tuple of non-empty strings, got {self.stop!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0 = no limit), got {self.top_k!r}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1] (0 = off), got {self.min_p!r}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0 (1.0 = off), got {self.repetition_penalty!r}")
        lookup = self.prompt_lookup_num_tokens
        if not isinstance(lookup, int) or isinstance(lookup, bool) or lookup < 0:
            raise ValueError(f"prompt_lookup_num_tokens must be an integer >= 0 (0 = off), got {lookup!r}")

    @property
    def reports_logprobs(self) -> bool:
        """Whether a call with these settings reports its tokens' log-probs: asked for, and sampled (greedy has no distribution)."""
        return self.logprobs and self.temperature > 0


def _penalize_repetitions(logits: Any, params: Sequence[SamplingParams], histories: Sequence[Iterable[int]]) -> Any:
    import torch

    for row, (param, tokens) in enumerate(zip(params, histories)):
        seen = set(tokens) if param.repetition_penalty != 1.0 else None  # read only where a penalty applies
        if seen:
            index = torch.tensor(sorted(seen), device=logits.device)
            picked = logits[row, index]
            logits[row, index] = torch.where(picked > 0, picked / param.repetition_penalty, picked * param.repetition_penalty)
    return logits


def _filtered_probabilities(logits: Any, params: Sequence[SamplingParams]) -> tuple[Any, Any | None]:
    """Sampling probabilities per row after temperature, top_k, top_p and min_p, unnormalised; and
    the token each column stands for, or None where the columns are the vocabulary in order.

    Only top_k and top_p need the tokens ranked, and then only the first
    :data:`RANKED_CANDIDATES` in the rows whose cut falls among them (a 49,152-token sort costs
    3.7 ms a row on 2 cores; this ranking, about 0.3 ms). Without either, nothing is ranked.
    """
    import torch

    temperature = torch.tensor([p.temperature for p in params], device=logits.device).clamp(min=1e-6)[:, None]
    probs, order = torch.softmax(logits / temperature, dim=-1), None
    if any(p.top_k or p.top_p < 1 for p in params):
        probs, order = _ranked(probs, params)
        if any(p.top_k for p in params):
            top_k = torch.tensor([p.top_k or probs.shape[-1] for p in params], device=logits.device)[:, None]
            probs = probs.masked_fill(torch.arange(probs.shape[-1], device=logits.device)[None, :] >= top_k, 0.0)
            probs = probs / probs.sum(dim=-1, keepdim=True)  # top_p then sees the kept tokens' mass, as in transformers
        top_p = torch.tensor([p.top_p for p in params], device=logits.device)[:, None]
        # Keep the smallest prefix whose mass reaches top_p (the first token always stays).
        probs = probs.masked_fill((probs.cumsum(dim=-1) - probs) >= top_p, 0.0)
    if any(p.min_p for p in params):
        min_p = torch.tensor([p.min_p for p in params], device=logits.device)[:, None]
        probs = probs.masked_fill(probs < min_p * probs.amax(dim=-1, keepdim=True), 0.0)
    return probs, order


def _ranked(probs: Any, params: Sequence[SamplingParams]) -> tuple[Any, Any]:
    """The rows' tokens from the most likely on (probabilities and token ids): the first
    :data:`RANKED_CANDIDATES` and zeros after them where these hold the row's top_k or top_p
    cut, the whole vocabulary sorted in the rows where they do not."""
    import torch

    head, order = probs.topk(min(RANKED_CANDIDATES, probs.shape[-1]), dim=-1)
    if head.shape[-1] == probs.shape[-1]:
        return head, order
    # A row's cut lies among the candidates if its top_k does, or, without a top_k (whose mass would
    # renormalise top_p's), if their mass already reaches its top_p. A greedy row draws nothing.
    mass = head.sum(dim=-1).tolist()
    wide = [
        not (p.temperature == 0 or (p.top_k <= head.shape[-1] if p.top_k else p.top_p < 1 and reached >= p.top_p))
        for p, reached in zip(params, mass)
    ]
    if not any(wide):
        return head, order
    ranked, ranked_order = torch.zeros_like(probs), torch.zeros(probs.shape, dtype=order.dtype, device=probs.device)
    ranked[:, : head.shape[-1]], ranked_order[:, : head.shape[-1]] = head, order  # a zero column is never drawn
    wide = torch.tensor(wide, device=probs.device)
    ranked[wide], ranked_order[wide] = probs[wide].sort(dim=-1, descending=True)
    return ranked, ranked_order


def _draw(probs: Any) -> Any:
    """One column per row, in proportion to ``probs`` (rows, columns; unnormalised, zeros never drawn).

    Inverse-CDF in float64: one uniform number a row and a binary search, 0.05 ms a row where
    ``torch.multinomial`` takes 1.2 ms over 49,152 tokens on 2 cores.
    """
    import torch

    cumulative = probs.double().cumsum(dim=-1)
    threshold = torch.rand((probs.shape[0], 1), dtype=torch.float64, device=probs.device) * cumulative[:, -1:]
    # right=True: the first column whose cumulative mass exceeds the threshold, so a zero column is never it.
    return torch.searchsorted(cumulative, threshold, right=True).clamp_(max=probs.shape[-1] - 1).squeeze(-1)


def next_tokens(logits: Any, params: Sequence[SamplingParams], histories: Sequence[Iterable[int]]) -> list[int]:
    """The next token of each row of ``logits`` (rows, vocabulary) under its own ``params``.

    ``histories`` holds each row's tokens so far (prompt and generated), read only for rows with
    a repetition penalty: a lazy iterable (``itertools.chain``) costs nothing on the others.
    """
    import torch

    logits = _penalize_repetitions(logits.float(), params, histories)
    greedy = logits.argmax(dim=-1)
    if all(p.temperature == 0 for p in params):
        return greedy.tolist()
    probs, order = _filtered_probabilities(logits, params)
    sampled = _draw(probs)
    if order is not None:
        sampled = order.gather(-1, sampled[:, None]).squeeze(-1)
    temperature = torch.tensor([p.temperature for p in params], device=logits.device)
    return torch.where(temperature == 0, greedy, sampled).tolist()


def policy_logprobs(logits: Any, params: Sequence[SamplingParams]) -> Any | None:
    """Each row's log-softmax at its temperature, from the model's own logits; None when no sampled row asks for it.

    Taken before grammar masks, penalties and top-k/top-p, as a trainer's forward pass computes
    the policy's log-probs (TRL divides the logits by the sampling temperature), so a sampled
    token's entry can stand in for that pass's old-policy log-prob.

    >>> import torch
    >>> logps = policy_logprobs(torch.tensor([[0.0, 0.0]]), [SamplingParams(max_tokens=1, temperature=0.5, top_p=1.0, logprobs=True)])
    >>> [round(value, 4) for value in logps[0].tolist()]
    [-0.6931, -0.6931]
    """
    import torch

    if not any(p.reports_logprobs for p in params):
        return None  # a (rows x vocabulary) pass per step, taken only when someone reads it
    temperature = torch.tensor([p.temperature or 1.0 for p in params], device=logits.device)[:, None]
    return torch.log_softmax(logits.float() / temperature, dim=-1)


__all__ = ["SamplingParams", "next_tokens", "policy_logprobs"]
