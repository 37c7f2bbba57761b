"""The engine's sampler: the distribution transformers' logits processors give, drawn without sorting the vocabulary."""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from langgraph_memagent.agents.sampling import (
    RANKED_CANDIDATES,
    SamplingParams,
    _draw,
    _filtered_probabilities,
    _penalize_repetitions,
    next_tokens,
)


def _in_vocabulary_order(probs, order, vocabulary):
    """The filtered probabilities as a (rows, vocabulary) tensor, zeros for tokens left out, normalised."""
    if order is not None:
        # scatter_add: a row ranked over its candidates alone pads its order with token 0 at probability 0.
        probs = torch.zeros((probs.shape[0], vocabulary), dtype=probs.dtype).scatter_add(-1, order, probs)
    return probs / probs.sum(dim=-1, keepdim=True)


def _transformers(logits, temperature, top_k=0, top_p=1.0, min_p=0.0):
    """The same row's probabilities through transformers' processors, in the order ``generate`` applies them."""
    processors = [TemperatureLogitsWarper(temperature)] + ([TopKLogitsWarper(top_k)] if top_k else [])
    processors += ([TopPLogitsWarper(top_p)] if top_p < 1 else []) + ([MinPLogitsWarper(min_p)] if min_p else [])
    scores = logits.clone()
    for processor in processors:
        scores = processor(torch.zeros((logits.shape[0], 1), dtype=torch.long), scores)
    return torch.softmax(scores, dim=-1)


def test_top_k_top_p_min_p_and_repetition_penalty_match_transformers_processors():

    torch.manual_seed(0)
    logits, seen = torch.randn(3, 50) * 3, [[1, 2, 3], [], [4, 4, 9]]
    settings = [dict(top_k=5, top_p=0.9, min_p=0.0, repetition_penalty=1.3), dict(top_k=0, top_p=0.8, min_p=0.1, repetition_penalty=1.0),
                dict(top_k=20, top_p=1.0, min_p=0.05, repetition_penalty=0.7)]
    params = [SamplingParams(max_tokens=8, temperature=0.8, **setting) for setting in settings]
    ours = _in_vocabulary_order(*_filtered_probabilities(_penalize_repetitions(logits.clone(), params, seen), params), 50)
    for row, setting in enumerate(settings):
        expected = logits[row : row + 1].clone()
        processors = [RepetitionPenaltyLogitsProcessor(setting["repetition_penalty"]), TemperatureLogitsWarper(0.8)]
        processors += [TopKLogitsWarper(setting["top_k"])] if setting["top_k"] else []
        processors += [TopPLogitsWarper(setting["top_p"])] if setting["top_p"] < 1 else []
        processors += [MinPLogitsWarper(setting["min_p"])] if setting["min_p"] else []
        history = torch.tensor([seen[row] or [0]])
        for processor in processors:
            if isinstance(processor, RepetitionPenaltyLogitsProcessor) and not seen[row]:
                continue
            expected = processor(history, expected)
        assert torch.allclose(ours[row] / ours[row].sum(), torch.softmax(expected, -1)[0], atol=1e-6), setting
    with pytest.raises(ValueError, match="top_k must be an integer >= 0 .* got -1"):
        SamplingParams(max_tokens=8, temperature=1.0, top_p=1.0, top_k=-1)
    with pytest.raises(ValueError, match=r"min_p must be in \[0, 1\] .* got 1.5"):
        SamplingParams(max_tokens=8, temperature=1.0, top_p=1.0, min_p=1.5)


def test_a_nucleus_wider_than_the_ranked_candidates_ranks_the_whole_vocabulary():
    """Flat logits over 5,000 tokens: top_p 0.5 keeps 2,500, more than the candidates ranked first."""
    torch.manual_seed(1)
    flat = torch.randn(1, 5000) * 0.01
    peaked = torch.randn(1, 5000) * 4
    cases = [(flat, dict(top_p=0.5)), (peaked, dict(top_p=0.9)), (peaked, dict(top_k=7, top_p=0.95)), (flat, dict(min_p=0.99))]
    for logits, setting in cases:
        params = [SamplingParams(max_tokens=8, temperature=1.0, **{"top_p": 1.0, **setting})]
        ours = _in_vocabulary_order(*_filtered_probabilities(logits, params), 5000)
        expected = _transformers(logits, 1.0, **setting)
        assert torch.allclose(ours, expected, atol=1e-6), setting
    assert int((_transformers(flat, 1.0, top_p=0.5) > 0).sum()) > RANKED_CANDIDATES
    # A greedy row beside a sampled one needs no ranking of its own.
    mixed = [SamplingParams(max_tokens=8, temperature=0.0, top_p=1.0), SamplingParams(max_tokens=8, temperature=1.0, top_p=0.9)]
    probs, order = _filtered_probabilities(torch.cat([peaked, peaked]), mixed)
    assert probs.shape[-1] == RANKED_CANDIDATES and order is not None
    # Beside a row whose nucleus is wider, only that row ranks the whole vocabulary; the other keeps its candidates.
    rows = torch.cat([peaked, flat])
    both = [SamplingParams(max_tokens=8, temperature=1.0, top_p=0.9), SamplingParams(max_tokens=8, temperature=1.0, top_p=0.5)]
    ours = _in_vocabulary_order(*_filtered_probabilities(rows, both), 5000)
    expected = torch.cat([_transformers(peaked, 1.0, top_p=0.9), _transformers(flat, 1.0, top_p=0.5)])
    assert torch.allclose(ours, expected, atol=1e-6)


def test_draws_follow_the_filtered_distribution():
    """20,000 draws a setting over an 8,192-token vocabulary: each of the likeliest tokens within 5 standard errors
    of its probability under transformers' processors, and no draw outside the kept tokens."""
    torch.manual_seed(2)
    logits = torch.randn(1, 8192) * 2
    logits[0, torch.randperm(8192)[:6]] += torch.tensor([9.0, 8.5, 8.0, 7.0, 6.0, 5.0])
    draws, rows = 20_000, 500
    for setting in (dict(), dict(top_p=0.9), dict(top_k=4), dict(min_p=0.05)):
        temperature = 0.8
        params = [SamplingParams(max_tokens=8, temperature=temperature, **{"top_p": 1.0, **setting})] * rows
        counts = torch.zeros(8192)
        for _ in range(draws // rows):
            counts += torch.bincount(torch.tensor(next_tokens(logits.expand(rows, -1), params, [()] * rows)), minlength=8192)
        expected = _transformers(logits, temperature, **setting)[0]
        frequency = counts / draws
        for token in expected.topk(8).indices.tolist():
            error = (expected[token] * (1 - expected[token]) / draws).sqrt()
            assert abs(frequency[token] - expected[token]) <= 5 * error + 1e-9, (setting, token)
        assert counts[expected == 0].sum() == 0, setting


def test_a_draw_never_lands_on_a_zero_column():
    torch.manual_seed(3)
    probs = torch.tensor([[0.0, 0.0, 0.3, 0.0, 0.7, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 2.5]]).repeat(5000, 1)
    drawn = _draw(probs)
    assert set(drawn[0::2].tolist()) == {2, 4} and set(drawn[1::2].tolist()) == {5}
    assert 0.67 < (drawn[0::2] == 4).float().mean() < 0.73  # 0.7 of 5,000 draws: s.e. 0.0065
