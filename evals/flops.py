"""FLOP estimates: MemAgent against full-context reading (the MemAgent paper's cost model).

One forward pass over a sequence of ``L`` tokens (prompt plus generated tokens: with a
KV cache, prefill + decode do the work of one causal pass over all ``L``) costs

    forward_flops(L) = 2 * N * L + 2 * n_layer * d_attn * L**2

This is Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", arXiv
2001.08361, Table 1 and eq. 2.2): ``C_forward = 2N + 2 n_layer n_ctx d_attn`` FLOPs per
token, summed over the ``L`` tokens with ``n_ctx = L``. ``N`` is the non-embedding
parameter count (embedding lookups and the de-embedding are left out, as in Kaplan),
``d_attn = n_heads * head_dim`` (grouped-query attention shrinks K/V projections, which
``N`` already counts, but not the score and value products). The attention term equals
counting the ``Q K^T`` and ``A V`` products (2 FLOPs per multiply-add each) over the
causal half of the ``L x L`` score matrix.

The MemAgent paper's appendix (arXiv 2507.02259) applies this per pass:
- full context reads ``q + c + o`` tokens in one pass, quadratic in ``c``;
- MemAgent runs an initial pass of ``q + 200 + o`` tokens, ``ceil(c / N)`` memory passes of
  ``q + 200 + N + o`` tokens (chunk ``N``) and a final pass of ``q + 100 + o`` tokens,
  linear in ``c``. Paper setting: ``q = o = 1024``, ``N = 5000``, ``c`` from 8K to 4M.

Run ``python -m langgraph_memagent.evals.flops --out flops.png`` for the paper's figure 7.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..agents.extras import needs_extra


# Paper setting (MemAgent appendix): question and output budgets, chunk size, and the
# prompt-template tokens of a memory pass and of the final pass.
PAPER_QUESTION_TOKENS = 1024
PAPER_OUTPUT_TOKENS = 1024
PAPER_CHUNK_TOKENS = 5000
PAPER_MEMORY_PASS_OVERHEAD = 200
PAPER_FINAL_PASS_OVERHEAD = 100


def _count(name: str, value: Any, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class FlopsModelConfig:
    """The three numbers of a dense transformer that the FLOP estimate needs.

    ``params`` is the non-embedding parameter count (Kaplan's ``N``), ``layers`` the
    number of transformer blocks, ``hidden`` the model width; ``attention_dim`` is
    ``n_heads * head_dim`` and defaults to ``hidden``.

    >>> FlopsModelConfig("toy", params=1000, layers=2, hidden=8).attention_dim
    8
    """

    name: str
    params: int
    layers: int
    hidden: int
    attention_dim: int = 0

    def __post_init__(self) -> None:
        for field in ("params", "layers", "hidden"):
            _count(field, getattr(self, field), minimum=1)
        _count("attention_dim", self.attention_dim)
        if self.attention_dim == 0:
            object.__setattr__(self, "attention_dim", self.hidden)

    @classmethod
    def from_transformers_config(cls, config: Any, name: str | None = None) -> "FlopsModelConfig":
        """Count parameters exactly by building the architecture on the meta device (no memory, no weights).

        >>> from transformers import LlamaConfig
        >>> tiny = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=100)
        >>> FlopsModelConfig.from_transformers_config(tiny, "tiny")
        FlopsModelConfig(name='tiny', params=82240, layers=2, hidden=64, attention_dim=64)
        """
        with needs_extra("embedded", "FLOP counts of a transformers model"):
            import torch
            from transformers import AutoModelForCausalLM
            from transformers.initialization import no_init_weights

        # Weight initialization is pointless on meta tensors and costs seconds for a 7B model.
        with torch.device("meta"), no_init_weights():
            model = AutoModelForCausalLM.from_config(config)
        embeddings = {id(module.weight) for module in (model.get_input_embeddings(), model.get_output_embeddings()) if module is not None}
        params = sum(p.numel() for p in model.parameters() if id(p) not in embeddings)
        text = config.get_text_config()
        heads = text.num_attention_heads
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
        return cls(
            name=name or getattr(config, "_name_or_path", "") or text.model_type,
            params=params,
            layers=text.num_hidden_layers,
            hidden=text.hidden_size,
            attention_dim=heads * head_dim,
        )

    @classmethod
    def from_pretrained(cls, model_dir: str | Path) -> "FlopsModelConfig":
        """From a local model directory's ``config.json`` (nothing is downloaded)."""
        with needs_extra("embedded", "FLOP counts of a model directory"):
            from transformers import AutoConfig

        path = Path(model_dir).expanduser()
        if not (path / "config.json").is_file():
            raise ValueError(f"{str(path)!r} is not a model directory with a config.json")
        return cls.from_transformers_config(AutoConfig.from_pretrained(str(path)), name=path.name)


# Parameter counts from instantiating each model's config.json hyperparameters on the
# meta device (see FlopsModelConfig.from_transformers_config; tests/test_flops.py
# re-derives them). The model cards agree: Qwen2.5-7B-Instruct 7.61B total / 6.53B
# non-embedding (hidden 3584, 28 layers, 28 query heads of 128); Qwen2.5-14B-Instruct
# 14.7B / 13.1B (hidden 5120, 48 layers, 40 heads of 128); SmolLM2-135M-Instruct
# (hidden 576, 30 layers, 9 heads of 64, tied embeddings, the embedded model's config).
MODEL_CONFIGS: dict[str, FlopsModelConfig] = {
    config.name: config
    for config in (
        FlopsModelConfig("Qwen/Qwen2.5-7B-Instruct", params=6_525_621_760, layers=28, hidden=3584),
        FlopsModelConfig("Qwen/Qwen2.5-14B-Instruct", params=13_212_898_304, layers=48, hidden=5120),
        FlopsModelConfig("HuggingFaceTB/SmolLM2-135M-Instruct", params=106_203_456, layers=30, hidden=576),
    )
}
_ALIASES = {
    "qwen2.5-7b": "Qwen/Qwen2.5-7B-Instruct",
    "qwen2.5-14b": "Qwen/Qwen2.5-14B-Instruct",
    "smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct",
}


def flops_config(spec: FlopsModelConfig | str | Path | Any) -> FlopsModelConfig:
    """A :class:`FlopsModelConfig` from a preset name, a local model directory or a transformers config.

    Preset names: the Hugging Face ids in :data:`MODEL_CONFIGS` (with or without the owner)
    and the short names ``qwen2.5-7b``, ``qwen2.5-14b``, ``smollm2-135m``.

    >>> flops_config("qwen2.5-14b").layers
    48
    """
    if isinstance(spec, FlopsModelConfig):
        return spec
    if isinstance(spec, (str, Path)):
        key = str(spec).lower()
        for name, config in MODEL_CONFIGS.items():
            if key in (name.lower(), name.split("/")[-1].lower()) or _ALIASES.get(key) == name:
                return config
        if Path(spec).expanduser().is_dir():
            return FlopsModelConfig.from_pretrained(spec)
        raise ValueError(f"unknown model {str(spec)!r}: expected one of {sorted(_ALIASES)} or {sorted(MODEL_CONFIGS)}, or a local model directory")
    if hasattr(spec, "get_text_config"):
        return FlopsModelConfig.from_transformers_config(spec)
    raise TypeError(f"cannot make a FLOP config from {type(spec).__name__}: pass a preset name, a model directory or a transformers config")


def forward_flops(config: FlopsModelConfig, seq_len: int) -> int:
    """FLOPs of one causal forward pass over ``seq_len`` tokens (Kaplan et al. 2020, Table 1).

    >>> toy = FlopsModelConfig("toy", params=1000, layers=2, hidden=8)
    >>> forward_flops(toy, 10)   # 2*1000*10 + 2*2*8*10**2
    23200
    """
    seq_len = _count("seq_len", seq_len)
    return 2 * config.params * seq_len + 2 * config.layers * config.attention_dim * seq_len * seq_len


def estimate_call_flops(config: FlopsModelConfig, prompt_tokens: int, completion_tokens: int) -> int:
    """FLOPs of one LLM call: a causal pass over the prompt and the generated tokens.

    With a KV cache, prefill plus token-by-token decoding does the same work as one
    pass over ``prompt_tokens + completion_tokens``. The comparison harness sums this
    over every call of a run, using each call's reported token usage.

    >>> toy = FlopsModelConfig("toy", params=1000, layers=2, hidden=8)
    >>> estimate_call_flops(toy, 7, 3) == forward_flops(toy, 10)
    True
    """
    return forward_flops(config, _count("prompt_tokens", prompt_tokens) + _count("completion_tokens", completion_tokens))


def full_context_flops(
    config: FlopsModelConfig, context_tokens: int, q: int = PAPER_QUESTION_TOKENS, o: int = PAPER_OUTPUT_TOKENS
) -> int:
    """The baseline: one pass over question (``q``), context and output (``o``); paper: q = o = 1024."""
    return forward_flops(config, _count("q", q) + _count("context_tokens", context_tokens) + _count("o", o))


def memagent_passes(
    context_tokens: int,
    q: int = PAPER_QUESTION_TOKENS,
    o: int = PAPER_OUTPUT_TOKENS,
    chunk: int = PAPER_CHUNK_TOKENS,
    memory_overhead: int = PAPER_MEMORY_PASS_OVERHEAD,
    final_overhead: int = PAPER_FINAL_PASS_OVERHEAD,
) -> list[int]:
    """Sequence lengths of MemAgent's passes in the paper's cost model.

    An initial pass of ``q + memory_overhead + o``, ``ceil(c / chunk)`` memory passes of
    ``q + memory_overhead + chunk + o`` and a final pass of ``q + final_overhead + o``
    (paper: q = o = 1024, chunk = 5000, overheads 200 and 100; the memory a pass writes is its ``o``).

    >>> memagent_passes(12000)
    [2248, 7248, 7248, 7248, 2148]
    """
    for name, value in (("context_tokens", context_tokens), ("q", q), ("o", o), ("memory_overhead", memory_overhead), ("final_overhead", final_overhead)):
        _count(name, value)
    _count("chunk", chunk, minimum=1)
    memory_pass = q + memory_overhead + o
    return [memory_pass] + [memory_pass + chunk] * math.ceil(context_tokens / chunk) + [q + final_overhead + o]


def memagent_flops(
    config: FlopsModelConfig,
    context_tokens: int,
    q: int = PAPER_QUESTION_TOKENS,
    o: int = PAPER_OUTPUT_TOKENS,
    chunk: int = PAPER_CHUNK_TOKENS,
    memory_overhead: int = PAPER_MEMORY_PASS_OVERHEAD,
    final_overhead: int = PAPER_FINAL_PASS_OVERHEAD,
) -> int:
    """MemAgent's FLOPs for a context: the sum of :func:`memagent_passes`; linear in ``context_tokens``."""
    passes = memagent_passes(context_tokens, q, o, chunk, memory_overhead, final_overhead)
    return sum(forward_flops(config, length) for length in passes)


def crossover_context_tokens(config: FlopsModelConfig, **budgets: int) -> int:
    """The shortest context from which on full-context reading always costs at least as much as MemAgent.

    MemAgent's cost is constant on each chunk interval ``((k-1)N, kN]`` and jumps at the
    next one, so the baseline can draw level inside an interval and fall behind again
    after the jump. The gap at interval starts, baseline minus MemAgent, is convex in
    ``k`` (quadratic minus linear) and negative at ``k = 1``: the first interval whose
    start the baseline reaches begins the region where it stays ahead; the exact point
    is then found by bisection in the interval before it. ``budgets`` are ``q``, ``o``,
    ``chunk`` and the overheads, as in :func:`memagent_flops`.

    >>> crossover_context_tokens(flops_config("qwen2.5-7b"))
    46625
    """
    unknown = set(budgets) - {"q", "o", "chunk", "memory_overhead", "final_overhead"}
    if unknown:
        raise TypeError(f"unknown budget(s) {sorted(unknown)}; expected q, o, chunk, memory_overhead, final_overhead")
    q = budgets.get("q", PAPER_QUESTION_TOKENS)
    o = budgets.get("o", PAPER_OUTPUT_TOKENS)
    chunk = budgets.get("chunk", PAPER_CHUNK_TOKENS)

    def gap(context: int) -> int:
        return full_context_flops(config, context, q, o) - memagent_flops(config, context, **budgets)

    interval = 1
    while gap((interval - 1) * chunk + 1) < 0:
        interval += 1
    if interval == 1:
        return 0 if gap(0) >= 0 else 1
    low, high = (interval - 2) * chunk + 1, (interval - 1) * chunk
    if gap(high) < 0:
        return high + 1
    while low < high:  # MemAgent is constant here and the baseline grows: bisect
        middle = (low + high) // 2
        low, high = (low, middle) if gap(middle) >= 0 else (middle + 1, high)
    return low


def context_grid(min_tokens: int = 8 * 1024, max_tokens: int = 4 * 1024 * 1024, points_per_doubling: int = 4) -> list[int]:
    """Log-spaced context lengths from ``min_tokens`` to ``max_tokens`` (paper: 8K to 4M).

    >>> context_grid(8, 32, 1)
    [8, 16, 32]
    """
    _count("min_tokens", min_tokens, 1)
    _count("points_per_doubling", points_per_doubling, 1)
    if _count("max_tokens", max_tokens, 1) < min_tokens:
        raise ValueError(f"max_tokens ({max_tokens}) must be at least min_tokens ({min_tokens})")
    steps = round(math.log2(max_tokens / min_tokens) * points_per_doubling)
    grid = [round(min_tokens * 2 ** (step / points_per_doubling)) for step in range(steps + 1)]
    return sorted(set(grid) | {max_tokens})


def plot_flops(
    config: FlopsModelConfig,
    path: str | Path,
    *,
    min_tokens: int = 8 * 1024,
    max_tokens: int = 4 * 1024 * 1024,
    q: int = PAPER_QUESTION_TOKENS,
    o: int = PAPER_OUTPUT_TOKENS,
    chunk: int = PAPER_CHUNK_TOKENS,
) -> Path:
    """Draw FLOPs against context length for both methods, log-log (the paper's figure 7); returns the PNG path."""
    with needs_extra("plots", "the FLOPs figure"):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

    from .plots import save_figure

    grid = context_grid(min_tokens, max_tokens)
    baseline = [full_context_flops(config, c, q, o) for c in grid]
    memagent = [memagent_flops(config, c, q, o, chunk) for c in grid]
    crossover = crossover_context_tokens(config, q=q, o=o, chunk=chunk)
    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.loglog(grid, baseline, label="full context (one pass, quadratic)", color="tab:red", linewidth=2)
    axes.loglog(grid, memagent, label=f"MemAgent ({chunk}-token chunks, linear)", color="tab:blue", linewidth=2)
    if min_tokens <= crossover <= max_tokens:
        axes.axvline(crossover, color="gray", linestyle=":", label=f"crossover at {crossover:,} tokens")
    ratio = baseline[-1] / memagent[-1]
    axes.annotate(f"{ratio:.1f}x", xy=(grid[-1], baseline[-1]), xytext=(-40, -4), textcoords="offset points", color="tab:red")
    ticks = [c for c in (2**k for k in range(10, 31)) if min_tokens <= c <= max_tokens]
    axes.set_xticks(ticks, [f"{c // 1024**2}M" if c >= 1024**2 else f"{c // 1024}K" for c in ticks])
    axes.minorticks_off()
    axes.set_xlabel("context length (tokens)")
    axes.set_ylabel("FLOPs")
    axes.set_title(f"{config.name}: q={q}, o={o}")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    return save_figure(figure, path)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m langgraph_memagent.evals.flops --out flops.png``: plot and print the comparison."""
    parser = argparse.ArgumentParser(
        prog="python -m langgraph_memagent.evals.flops",
        description="FLOPs of MemAgent vs full-context reading from 8K to 4M tokens (MemAgent paper, figure 7).",
    )
    parser.add_argument("--out", default="flops.png", help="PNG file to write (default: flops.png)")
    parser.add_argument(
        "--model",
        default="Qwen/Qwen2.5-14B-Instruct",
        help=f"preset ({', '.join(sorted(_ALIASES))}) or a local model directory (default: Qwen/Qwen2.5-14B-Instruct)",
    )
    parser.add_argument("--q", type=int, default=PAPER_QUESTION_TOKENS, help="question tokens (paper: 1024)")
    parser.add_argument("--o", type=int, default=PAPER_OUTPUT_TOKENS, help="output / memory tokens (paper: 1024)")
    parser.add_argument("--chunk", type=int, default=PAPER_CHUNK_TOKENS, help="MemAgent chunk tokens (paper: 5000)")
    parser.add_argument("--min-tokens", type=int, default=8 * 1024, help="shortest context (default 8K)")
    parser.add_argument("--max-tokens", type=int, default=4 * 1024 * 1024, help="longest context (default 4M)")
    args = parser.parse_args(argv)
    try:
        config = flops_config(args.model)
        path = plot_flops(
            config, args.out, min_tokens=args.min_tokens, max_tokens=args.max_tokens, q=args.q, o=args.o, chunk=args.chunk
        )
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    print(f"{'context':>10}  {'full context':>12}  {'MemAgent':>12}  ratio")
    for c in context_grid(args.min_tokens, args.max_tokens, points_per_doubling=1):
        baseline, memagent = full_context_flops(config, c, args.q, args.o), memagent_flops(config, c, args.q, args.o, args.chunk)
        print(f"{c:>10,}  {baseline:>12.3e}  {memagent:>12.3e}  {baseline / memagent:6.2f}")
    print(f"crossover: {crossover_context_tokens(config, q=args.q, o=args.o, chunk=args.chunk):,} tokens; plot: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
