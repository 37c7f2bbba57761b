"""4-bit weights for CPU inference: the GGUF's own Q4_1 codes, run by PyTorch's int4 CPU kernel.

Decoding one token reads every weight once, so on a CPU it runs at the speed of memory: the
embedded SmolLM2-135M in float32 reads 540 MB a token. Its float32 weights are not arbitrary:
they are de-quantized from the Q4_1 GGUF it ships as (blocks of 32 weights, each
``scale * code + minimum`` with a 4-bit code), so every block's minimum and maximum are weights
of the block and the codes can be read back exactly. ``quantization="int4"`` does that and
runs each Linear layer with ``torch.ops.aten._weight_int4pack_mm_for_cpu`` (group size 32,
float32 accumulation): the same weights in a seventh of the bytes, the format llama.cpp runs.

What changes in the numerics, and nothing else: the kernel takes bfloat16 inputs, scales and
minimums, and returns bfloat16, so each Linear's input and output are rounded to bfloat16
(8-bit mantissa); the residual stream, norms, rotary embedding, attention and softmax stay
float32. The output projection (tied to the embedding table, Q8_0 in the GGUF) runs in
int8 with one scale per row, and its 16 highest logits are recomputed in float32, so neither
int8 nor bfloat16 rounding can turn a near-tie into a tie. For weights that do not come from
a Q4_1 file the same group-wise rounding is lossy: :func:`int4_rounding_error` says by how
much. Measured on 2 cores (BENCHMARKS.md section 10): speed, next-token agreement with
float32 and MemAgent's RULER accuracy.

Prefill depends on the CPU, so the layers keep a dense copy of the same weights for products of
``DENSE_PREFILL_MIN_ROWS`` rows or more (prompts), chosen by :func:`default_prefill_weights`:

- ``"bfloat16"`` where the CPU has bfloat16 instructions (AVX512-BF16 or AMX): oneDNN's
  bfloat16 product with float32 accumulation ran 2.1x float32's speed on a Zen 4 host (2
  cores), and 2.2x the int4 kernel's at 1,024 rows. The numerics are the int4 kernel's (inputs
  and outputs rounded to bfloat16) except that each weight is rounded to bfloat16 (8-bit
  mantissa) instead of the scale and minimum of its block.
- ``"int4"`` on other AVX-512 hosts: the int4 kernel for every product.
- ``"float32"`` on hosts without AVX-512, where the int4 kernel has no fast path (2.1x slower
  than float32 weights at 1,024 rows, 5.8x faster at one row): prompts then run float32
  arithmetic on exactly the same weights, as in the unquantized model.

Decoding (fewer rows) runs the int4 kernel, except on CPUs with AMX tiles, where the bfloat16
weights take products from ``AMX_DENSE_MIN_ROWS`` rows: a checked draft or a large decode batch.

For inference only: a trainer needs its float32 policy (exact log-probs, live weights).

>>> import torch
>>> layer = torch.nn.Linear(64, 32, bias=False)
>>> model = quantize_for_cpu(torch.nn.ModuleDict({"mlp": layer, "lm_head": torch.nn.Linear(64, 8)}), "int4")
>>> type(model["mlp"]).__name__, type(model["lm_head"]).__name__
('Int4Linear', 'OutputProjection')
>>> tuple(model["mlp"](torch.randn(3, 64)).shape)
(3, 32)
"""

from __future__ import annotations

from typing import Any

from .extras import needs_extra

with needs_extra("embedded", "int4 quantization"):
    import torch

QUANTIZATIONS = ("int4",)
GROUP_SIZE = 32  # the Q4_1 block: weights sharing one scale and one minimum
CODES = 15  # a 4-bit code is 0..15
RESCORED = 16  # highest bfloat16 logits recomputed in float32: enough to hold every near-tie at the top
PREFILL_WEIGHTS = ("int4", "float32", "bfloat16")
# Rows from which dense weights outrun the int4 kernel (benchmarks.bench_linear_kernels, the 120
# Linears of SmolLM2-135M: on an AVX2 host float32/int4 time 1.43 at 32 rows, 0.81 at 64, 0.48
# at 1,024; on a Zen 4 host bfloat16/int4 time 0.83 at 32 rows, 0.70 at 64, 0.44 at 1,024).
DENSE_PREFILL_MIN_ROWS = 64
# On an AMX host oneDNN's bfloat16 product is bound by the weights' bytes up to 16 rows (17.7 ms
# for the 120 Linears at 1 row, 18.0 at 16) and outruns the int4 kernel from about 12 rows (int4/bfloat16
# time 0.82 at 8 rows, 1.20 at 12, 1.37 at 13, 1.5-2.3 at 16; two runs of bench_linear_kernels, 2 cores). A prompt-lookup
# draft check (12 drafted tokens and the last one: 13 rows) and a decode batch of 12 rows or more
# then run through the bfloat16 weights too.
AMX_DENSE_MIN_ROWS = 12


def _int4_codes(weight: Any) -> tuple[Any, Any, Any]:
    """Per block of ``GROUP_SIZE`` input columns: 4-bit codes, scales and minimums of ``weight``."""
    rows, columns = weight.shape
    blocks = weight.detach().float().reshape(rows, columns // GROUP_SIZE, GROUP_SIZE)
    minimum, maximum = blocks.amin(-1), blocks.amax(-1)
    scale = (maximum - minimum) / CODES
    # A constant block has scale 0: every code is 0 and the minimum is the value.
    codes = ((blocks - minimum[..., None]) / torch.where(scale > 0, scale, 1.0)[..., None]).round().clamp(0, CODES)
    return codes, scale, minimum


def int4_rounding_error(weight: Any) -> float:
    """The largest change int4 makes to ``weight``, in units of its block's step (0.0 for Q4_1 weights)."""
    codes, scale, minimum = _int4_codes(weight)
    blocks = weight.detach().float().reshape(codes.shape)
    error = (codes * scale[..., None] + minimum[..., None] - blocks).abs()
    return float((error / scale.clamp_min(1e-30)[..., None]).amax()) if scale.max() > 0 else 0.0


class _BFloat16Kernel(torch.nn.Module):
    """A Linear layer whose kernel runs in bfloat16: inputs of any leading shape, their dtype in and out."""

    def __init__(self, linear: Any):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bias = None if linear.bias is None else linear.bias.detach().float()

    def forward(self, inputs: Any) -> Any:
        flat = inputs.reshape(-1, inputs.shape[-1]).to(torch.bfloat16)
        outputs = self._matmul(flat)
        if self.bias is not None:
            outputs = outputs.float() + self.bias
        return outputs.reshape(*inputs.shape[:-1], self.out_features).to(inputs.dtype)


def default_prefill_weights() -> str:
    """The fastest weights for prompts on this CPU: ``"bfloat16"``, ``"int4"`` or ``"float32"`` (see the module doc).

    Measured with 2 cores (600-token prompts): on an AVX2-only host int4 prefilled 214 tokens/s
    against float32's 371; on an AVX-512 Zen 4 host with bfloat16 instructions int4 prefilled
    573 tokens/s, float32 633 and bfloat16 1,010 (BENCHMARKS.md section 10).
    """
    if torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported():
        return "bfloat16"
    return "int4" if torch.backends.cpu.get_cpu_capability().startswith("AVX512") else "float32"


def dense_min_rows(prefill_weights: str) -> int:
    """Rows from which a product runs through the dense weights: ``AMX_DENSE_MIN_ROWS`` for bfloat16
    weights on a CPU with AMX tiles, else ``DENSE_PREFILL_MIN_ROWS`` (prompts alone)."""
    return AMX_DENSE_MIN_ROWS if prefill_weights == "bfloat16" and torch.cpu._is_amx_tile_supported() else DENSE_PREFILL_MIN_ROWS


class Int4Linear(_BFloat16Kernel):
    """A ``torch.nn.Linear`` as 4-bit codes with one bfloat16 scale and minimum per 32 weights.

    ``prefill_weights`` other than ``"int4"`` keeps a dense copy for products of
    ``dense_min_rows`` rows or more (:func:`dense_min_rows`): ``"float32"`` the Linear's own
    weight (kept, not copied) in float32 arithmetic, ``"bfloat16"`` the weight rounded to
    bfloat16 in the int4 kernel's bfloat16 arithmetic. Fewer rows always run the int4 kernel.
    """

    def __init__(self, linear: Any, *, prefill_weights: str = "int4"):
        super().__init__(linear)
        self.prefill_weights = prefill_weights
        self.dense_min_rows = dense_min_rows(prefill_weights)
        weight = linear.weight.detach()
        self.dense_weight = None if prefill_weights == "int4" else weight.bfloat16() if prefill_weights == "bfloat16" else weight
        codes, scale, minimum = _int4_codes(linear.weight)
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack_for_cpu(
            codes.reshape(self.out_features, self.in_features).to(torch.int32), 1))
        # The kernel computes (code - 8) * scale + zero, so zero is the block's middle.
        zero = minimum + 8 * scale
        self.register_buffer("scales_and_zeros", torch.stack([scale, zero], -1).transpose(0, 1).contiguous().bfloat16())

    def forward(self, inputs: Any) -> Any:
        if self.prefill_weights == "float32" and inputs.numel() >= self.dense_min_rows * inputs.shape[-1]:
            return torch.nn.functional.linear(inputs.float(), self.dense_weight, self.bias).to(inputs.dtype)
        return super().forward(inputs)

    def _matmul(self, inputs: Any) -> Any:
        if self.prefill_weights == "bfloat16" and inputs.shape[0] >= self.dense_min_rows:
            return torch.nn.functional.linear(inputs, self.dense_weight)
        return torch.ops.aten._weight_int4pack_mm_for_cpu(inputs, self.packed, GROUP_SIZE, self.scales_and_zeros)


class OutputProjection(_BFloat16Kernel):
    """The output projection in int8, with the ``RESCORED`` highest logits recomputed in float32.

    Every logit first comes from int8 weights (one scale per vocabulary row, PyTorch's
    ``_weight_int8pack_mm``: a quarter of float32's bytes, 0.5 ms instead of 1.7 in bfloat16 on
    2 cores) and is rounded to bfloat16, which turns near-ties into exact ties and flips greedy
    choices. The candidates for the top are then scored again with the float32 weights (the
    embedding table it is tied to), so greedy decoding and the head of the sampling
    distribution see float32 logits. Measured on 1,500 positions of English text: the float32
    argmax always ranks within the int8 top 3, and the int8 logits are off by 0.07 on average.
    """

    def __init__(self, linear: Any):
        super().__init__(linear)
        self.float32_weight = linear.weight  # shared with a tied embedding table: no copy
        weight = linear.weight.detach().float()
        scale = weight.abs().amax(-1).clamp_min(1e-30) / 127
        self.register_buffer("weight", (weight / scale[:, None]).round().to(torch.int8))
        self.register_buffer("scales", scale.to(torch.bfloat16))

    def _matmul(self, inputs: Any) -> Any:
        return torch.ops.aten._weight_int8pack_mm(inputs, self.weight, self.scales)

    def forward(self, inputs: Any) -> Any:
        logits = super().forward(inputs).float()
        top = logits.topk(min(RESCORED, self.out_features), dim=-1).indices
        exact = torch.einsum("...d,...kd->...k", inputs.float(), self.float32_weight.detach()[top])
        if self.bias is not None:
            exact = exact + self.bias[top]
        return logits.scatter_(-1, top, exact).to(inputs.dtype)


def quantize_for_cpu(model: Any, quantization: str, *, prefill_weights: str | None = None) -> Any:
    """``model`` with its Linear layers in int4 (``lm_head``: :class:`OutputProjection`), on CPU, changed in place.

    Every Linear must have a multiple of 32 input features; any other shape is refused by name.
    ``prefill_weights`` (one of ``PREFILL_WEIGHTS``) is what products of many rows run on (see
    :class:`Int4Linear`); None picks the fastest here (:func:`default_prefill_weights`).
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {list(QUANTIZATIONS)} or None, got {quantization!r}")
    if prefill_weights not in (None, *PREFILL_WEIGHTS):
        raise ValueError(f"prefill_weights must be one of {list(PREFILL_WEIGHTS)} or None, got {prefill_weights!r}")
    device = next(model.parameters()).device
    if device.type != "cpu":
        raise ValueError(f"int4 quantization runs on CPU only (PyTorch's int4 CPU kernel); the model is on {device}")
    linears = [(name, module) for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]
    for name, linear in linears:
        if linear.in_features % GROUP_SIZE:
            raise ValueError(f"int4 needs Linear input sizes divisible by {GROUP_SIZE}; {name!r} has {linear.in_features}")
    prefill_weights = prefill_weights or default_prefill_weights()
    for name, linear in linears:
        parent_name, _, attribute = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        quantized = OutputProjection(linear) if attribute == "lm_head" else Int4Linear(linear, prefill_weights=prefill_weights)
        setattr(parent, attribute, quantized)
    return model


def prefill_path(model: Any) -> str:
    """How ``model`` prefills a prompt: ``"int4"``, ``"float32 weights of int4 layers"``, ``"bfloat16 ..."`` or its dtype's name."""
    layers = [module for module in model.modules() if isinstance(module, Int4Linear)]
    if not layers:
        return str(next(model.parameters()).dtype).removeprefix("torch.")
    return "int4" if layers[0].prefill_weights == "int4" else f"{layers[0].prefill_weights} weights of int4 layers"
