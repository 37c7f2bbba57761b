"""bfloat16 training near float32 speed on x86 CPUs without AVX-512 BF16 or AMX.

There PyTorch has no fast bfloat16 matrix product: measured 2026-12-06 on an AVX2 EPYC (2 cores), a
(8 x 1300 x 576) by (576 x 1536) product took 1,980 ms in bfloat16 and 277 ms in float32. A fast bfloat16 kernel
multiplies bfloat16 inputs, sums in float32 and rounds the result to bfloat16 once. Casting the inputs to float32
(exact), multiplying in float32 and rounding the result gives the same numbers up to the order of the sum
(measured on that product: 1 output in 10,000 differs, by one unit in the last place).

:func:`float32_products` makes a model's ``Linear`` layers compute that way. The weights stay bfloat16, and so does
everything else: norms, activations and attention (PyTorch's bfloat16 attention is as fast as float32's there going
forward; its backward, about 5 times slower, is most of what is left between this and float32: a LoRA pass of the
embedded model took 1.4 times float32's time, ``benchmarks/bench_cpu_bf16.py``). A frozen weight keeps its float32
copy between calls and makes it again when the weight changes. The trainer trains this way
on its own when ``bf16=True`` runs on such a CPU (:meth:`~.trainer.MultiConvGRPOTrainer.train`).

>>> import torch
>>> layer = torch.nn.Linear(4, 2).to(torch.bfloat16)
>>> with float32_products(torch.nn.Sequential(layer)) as changed:
...     print(changed, type(layer).__name__, layer(torch.ones(1, 4, dtype=torch.bfloat16)).dtype)
1 Float32ProductLinear torch.bfloat16
>>> type(layer).__name__
'Linear'
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F


def cpu_emulates_bf16() -> bool:
    """True on an x86 CPU with neither AVX-512 BF16 nor AMX, where PyTorch's bfloat16 matrix products are slow."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False  # other CPUs: no check known here
    return not (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


class Float32ProductLinear(torch.nn.Linear):
    """A ``Linear`` whose bfloat16 product runs in float32 and is rounded to bfloat16 (see the module's docstring)."""

    _float32: tuple[Any, Any] | None = None  # (the weight's identity and version, its float32 copy)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.weight.dtype != torch.bfloat16 or self.weight.device.type != "cpu":
            return super().forward(input)
        bias = None if self.bias is None else self.bias.float()
        # Autocast would cast the float32 operands back to bfloat16 and take the slow kernel again.
        with torch.autocast("cpu", enabled=False):
            return F.linear(input.float(), self._float32_weight(), bias).to(torch.bfloat16)

    def _float32_weight(self) -> torch.Tensor:
        weight = self.weight
        if weight.requires_grad:
            return weight.float()  # trained: made each call, so its gradient flows back to the bfloat16 weight
        key = (weight.data_ptr(), weight._version)  # an in-place change (an optimizer step, a load) bumps the version
        if self._float32 is None or self._float32[0] != key:
            # Made outside inference mode, so that a copy first made while generating can serve a training pass too.
            with torch.inference_mode(False), torch.no_grad():
                self._float32 = (key, weight.float())
        return self._float32[1]


@contextmanager
def float32_products(*models: torch.nn.Module | None) -> Iterator[int]:
    """While inside, every plain ``torch.nn.Linear`` of ``models`` is a :class:`Float32ProductLinear` (``None`` is
    skipped); yields how many. The parameters and the modules holding the layers (PEFT's LoRA layers among them)
    are untouched, and the layers are plain ``Linear`` again on the way out, so a weight changed afterwards without
    PyTorch's knowing (``weight.data += ...``, as PEFT's merge does) never meets a stale float32 copy."""
    layers = [module for model in models if model is not None for module in model.modules() if type(module) is torch.nn.Linear]
    for layer in layers:
        layer.__class__ = Float32ProductLinear
    try:
        yield len(layers)
    finally:
        for layer in layers:
            layer.__class__ = torch.nn.Linear
            layer.__dict__.pop("_float32", None)


__all__ = ["Float32ProductLinear", "cpu_emulates_bf16", "float32_products"]
