"""The FLOP estimator: Kaplan's per-pass formula and the MemAgent paper's cost model."""

import math

import pytest

from langgraph_memagent.evals import flops
from langgraph_memagent.evals.flops import (
    MODEL_CONFIGS,
    FlopsModelConfig,
    crossover_context_tokens,
    estimate_call_flops,
    flops_config,
    forward_flops,
    full_context_flops,
    memagent_flops,
    memagent_passes,
    plot_flops,
)

QWEN_14B = flops_config("qwen2.5-14b")
TOY = FlopsModelConfig("toy", params=10_000, layers=2, hidden=16)


def _slope(cost, low: int, high: int) -> float:
    """Exponent of a power law fitted through two points on a log-log plot."""
    return math.log(cost(high) / cost(low)) / math.log(high / low)


def test_forward_flops_is_kaplans_formula_with_attention_width():
    config = FlopsModelConfig("gqa", params=1_000, layers=3, hidden=8, attention_dim=12)
    assert forward_flops(config, 5) == 2 * 1_000 * 5 + 2 * 3 * 12 * 5 * 5
    assert forward_flops(config, 0) == 0
    assert estimate_call_flops(config, 3, 2) == forward_flops(config, 5)


def test_full_context_grows_quadratically():
    cost = lambda c: full_context_flops(QWEN_14B, c)  # noqa: E731
    ratios = [cost(2 * c) / cost(c) for c in (8_192, 262_144, 16_777_216)]
    # Linear-dominated at short contexts, attention-dominated at long ones: the doubling ratio climbs to 4.
    assert ratios[0] < ratios[1] < ratios[2]
    assert 3.9 < ratios[2] <= 4.0
    assert 1.9 < _slope(cost, 8_388_608, 16_777_216) <= 2.0
    assert _slope(cost, 8_192, 16_384) < 1.3


def test_memagent_grows_linearly():
    chunk = 5_000
    cost = lambda c: memagent_flops(QWEN_14B, c, chunk=chunk)  # noqa: E731
    # Each extra chunk costs the same fixed memory pass: the second difference is exactly zero.
    steps = [cost(k * chunk) for k in range(100, 104)]
    first_differences = [b - a for a, b in zip(steps, steps[1:])]
    assert len(set(first_differences)) == 1
    assert first_differences[0] == forward_flops(QWEN_14B, 1024 + 200 + chunk + 1024)
    assert 1.99 < cost(800 * chunk) / cost(400 * chunk) < 2.0
    assert 0.99 < _slope(cost, 1_000 * chunk, 2_000 * chunk) < 1.01


def test_memagent_passes_follow_the_paper():
    passes = memagent_passes(12_001, q=1024, o=1024, chunk=5000)
    assert passes == [1024 + 200 + 1024] + [1024 + 200 + 5000 + 1024] * 3 + [1024 + 100 + 1024]
    assert memagent_flops(TOY, 12_001) == sum(forward_flops(TOY, length) for length in passes)
    # The harness's per-call sum over a run's calls gives the same total.
    calls = [(length - 1024, 1024) for length in passes]
    assert sum(estimate_call_flops(TOY, p, c) for p, c in calls) == memagent_flops(TOY, 12_001)


def test_crossover_is_where_the_baseline_overtakes_memagent():
    budgets = {"q": 10, "o": 10, "chunk": 50, "memory_overhead": 5, "final_overhead": 3}
    crossover = crossover_context_tokens(TOY, **budgets)
    q_o = {"q": 10, "o": 10}
    below = [c for c in range(0, crossover) if full_context_flops(TOY, c, **q_o) < memagent_flops(TOY, c, **budgets)]
    assert below and below[-1] == crossover - 1
    # From the crossover on, the baseline never costs less again (checked well past it).
    assert all(
        full_context_flops(TOY, c, **q_o) >= memagent_flops(TOY, c, **budgets) for c in range(crossover, crossover + 20 * 50)
    )
    # The paper's setting on Qwen2.5-14B: MemAgent is cheaper from a few tens of thousands of tokens on.
    crossover_14b = crossover_context_tokens(QWEN_14B)
    assert 16_384 < crossover_14b < 65_536
    assert full_context_flops(QWEN_14B, 4 * 1024**2) > 40 * memagent_flops(QWEN_14B, 4 * 1024**2)


def test_presets_match_parameter_counts_of_the_real_configs(embedded_model_dir):
    from transformers import Qwen2Config

    # Qwen2.5-7B-Instruct's config.json hyperparameters (model card: 6.53B non-embedding parameters).
    qwen_7b = Qwen2Config(
        hidden_size=3584,
        intermediate_size=18944,
        num_attention_heads=28,
        num_hidden_layers=28,
        num_key_value_heads=4,
        vocab_size=152064,
        tie_word_embeddings=False,
    )
    derived = FlopsModelConfig.from_transformers_config(qwen_7b, name="Qwen/Qwen2.5-7B-Instruct")
    assert derived == MODEL_CONFIGS["Qwen/Qwen2.5-7B-Instruct"]
    assert round(derived.params / 1e9, 2) == 6.53
    smollm2 = FlopsModelConfig.from_pretrained(embedded_model_dir)
    preset = MODEL_CONFIGS["HuggingFaceTB/SmolLM2-135M-Instruct"]
    assert (smollm2.params, smollm2.layers, smollm2.hidden, smollm2.attention_dim) == (
        preset.params,
        preset.layers,
        preset.hidden,
        preset.attention_dim,
    )
    assert flops_config(str(embedded_model_dir)).params == preset.params


def test_preset_names_and_errors():
    assert flops_config("Qwen/Qwen2.5-7B-Instruct") is flops_config("qwen2.5-7b") is flops_config("QWEN2.5-7B-INSTRUCT")
    with pytest.raises(ValueError, match="unknown model 'gpt-9'.*qwen2.5-14b"):
        flops_config("gpt-9")
    with pytest.raises(TypeError, match="int"):
        flops_config(7)
    with pytest.raises(ValueError, match="context_tokens must be an integer >= 0, got -1"):
        full_context_flops(TOY, -1)
    with pytest.raises(ValueError, match="chunk must be an integer >= 1, got 0"):
        memagent_flops(TOY, 100, chunk=0)
    with pytest.raises(ValueError, match="params must be an integer >= 1"):
        FlopsModelConfig("bad", params=0, layers=1, hidden=1)
    with pytest.raises(TypeError, match="unknown budget"):
        crossover_context_tokens(TOY, chunks=5)


def test_plot_and_command_line(tmp_path, capsys):
    path = plot_flops(QWEN_14B, tmp_path / "plots" / "flops.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000

    assert flops.main(["--out", str(tmp_path / "cli.png"), "--model", "qwen2.5-7b", "--max-tokens", "65536"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "cli.png").is_file()
    assert f"crossover: {crossover_context_tokens(flops_config('qwen2.5-7b')):,} tokens" in out
    assert "65,536" in out and "131,072" not in out

    with pytest.raises(SystemExit) as exit_info:
        flops.main(["--help"])
    assert exit_info.value.code == 0
    assert "--out" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        flops.main(["--model", "nope"])
    assert exit_info.value.code == 2
    assert "unknown model 'nope'" in capsys.readouterr().err
