"""Int8 weights for CPU inference: the Linear layers of a causal LM through PyTorch's fbgemm kernels.

Decoding one token reads every weight once, so on a CPU it runs at the speed of memory: the
embedded SmolLM2-135M in float32 reads 540 MB a token. Dynamic int8 quantization stores each
Linear weight in int8 (per-tensor scale) and quantizes the activations of each call on the fly,
with int32 accumulation; the embedding table and the norms stay float32. Measured on 2 cores
(benchmarks/bench_decode.py, BENCHMARKS.md section 10): decode and prefill 3x float32's
tokens per second. It changes the numerics, and for MemAgent on this 135M model it breaks it:
greedy RULER niah_single_1 at 4K-8K fell from 11 of 16 to 0 of 16 (the memory updates drift off
the task; one direct question still comes out right, and next-token agreement with float32 over a
1,000-token prompt is about 90%). So it is experimental and off by default: the speed is there,
the accuracy is not yet.

For inference only: a trainer needs its float32 policy (exact log-probs, live weights).

>>> import torch
>>> layer = quantize_for_cpu(torch.nn.Sequential(torch.nn.Linear(8, 8)), "int8")
>>> type(layer[0]).__name__
'Linear'
>>> type(layer[0]).__module__
'torch.ao.nn.quantized.dynamic.modules.linear'
"""

from __future__ import annotations

import warnings
from typing import Any

QUANTIZATIONS = ("int8",)


def quantize_for_cpu(model: Any, quantization: str) -> Any:
    """``model`` with its ``torch.nn.Linear`` layers in int8 (``quantization="int8"``), on CPU."""
    import torch

    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {list(QUANTIZATIONS)} or None, got {quantization!r}")
    device = next(model.parameters()).device
    if device.type != "cpu":
        raise ValueError(f"int8 quantization runs on CPU only (fbgemm kernels); the model is on {device}")
    head, embeddings = getattr(model, "lm_head", None), getattr(model, "get_input_embeddings", lambda: None)()
    if head is not None and embeddings is not None and head.weight is embeddings.weight:
        # Tied weights: the output projection gets its own copy to quantize; the embedding table stays float32.
        head.weight = torch.nn.Parameter(head.weight.detach().clone(), requires_grad=False)
    with warnings.catch_warnings():
        # torch 2.13 marks its eager quantization API deprecated in favour of torchao, whose CPU
        # kernels are slower for this model (torchao 0.18, measured on 2 cores: int8 weight-only
        # decode 1.3x float32, int8 dynamic 0.5x; this API: 3.0x). torch is pinned in the lock,
        # and tests/test_local_model.py fails if the API goes.
        warnings.filterwarnings("ignore", message=r"torch\.ao\.quantization is deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor", category=UserWarning)
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
