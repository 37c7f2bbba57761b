"""The fused decode step compiled ahead of time by AOTInductor: a package per kind of batch, cached on disk.

``torch.compile`` keeps Python in every call: Dynamo checks its guards over the step's ~300
weights and the cache's 60 buffers, and AOTAutograd's wrappers unpack the arguments. AOTInductor
compiles the exported step into a shared library of the same kind of generated code, called from
C++ with a list of tensors: at batch 1 on 2 cores 9.5-10.0 ms a step against 12.4-12.5 through
``torch.compile`` and 13.3-14.4 eager (BENCHMARKS.md section 10).

The step is exported as a function of its weights: they are inputs of the package, not
constants copied into it, so a package holds code alone (a few MB), reads the model's own
weight memory, and serves any model of the same shapes. A package is named by a digest of the
exported program (its graph, shapes and size ranges), PyTorch's version and the CPU's
instruction set, and lands in the cache by a rename, so a killed compile leaves no half file.

Kinds of batch: one row or several, padded (masked) or not, and where the layers keep bfloat16
weights for many rows, rows below or from ``dense_min_rows``. Within a kind the rows, the cached
length and the buffers' room are symbols, so each kind compiles once (about a minute for the
embedded model on 2 cores, seconds to load once cached).

>>> from langgraph_memagent.agents.loading import load_chat_model
>>> load_chat_model("smollm2-135m", compile_decode=True).engine.decode_path  # doctest: +SKIP
'compiled-fused-int4-llama'
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from .atomic_files import temporary_beside
from .extras import needs_extra

with needs_extra("embedded", "the compiled decode step"):
    import torch

# Example sizes for the export: primes no weight dimension shares, so none is mistaken for another.
_EXAMPLE_CACHED, _EXAMPLE_ROOM = 97, 131


def package_dir() -> Path:
    """Where compiled packages are kept: ``compiled-steps`` in the package's cache."""
    from .embedded import cache_root

    return cache_root() / "compiled-steps"


class _Exported(torch.nn.Module):
    """The fused layers as a function of a flat list of their weights and the step's tensors."""

    def __init__(self, fused: Any, names: list[str]):
        super().__init__()
        # A plain attribute, not a submodule: export would copy a submodule's weights into the package.
        object.__setattr__(self, "fused", fused)
        self.names = names

    def forward(self, weights: list, input_ids: Any, position_ids: Any, mask: Any, cached: Any, key_buffers: list, value_buffers: list) -> Any:
        # The cached length comes as a size (of a 0-byte tensor): export makes sizes symbols, an int argument it fixes.
        arguments = (input_ids, mask, position_ids, cached.shape[0], key_buffers, value_buffers)
        return torch.func.functional_call(self.fused, dict(zip(self.names, weights)), arguments)


class CompiledStep:
    """``step(input_ids, mask, position_ids, length, key_buffers, value_buffers)``: the fused layers'
    logits through an AOTInductor package, one token per row (drafts are checked by the eager step).

    ``package_folder`` is where packages are kept (default :func:`package_dir`).
    """

    def __init__(self, fused: Any, *, package_folder: Path | None = None):
        self.fused = fused
        state = [*fused.named_parameters(), *fused.named_buffers()]  # tied weights once: functional_call ties them again
        self.names = [name for name, _ in state]
        self.weights = [tensor.detach() for _, tensor in state]
        strided = [name for name, tensor in state if not tensor.is_contiguous()]
        if strided:
            raise ValueError(f"the compiled step needs contiguous weights; {strided[0]!r} is a strided view")
        first = fused.layers[0]
        self.dense_min_rows = first.dense_min_rows if first.down_dense is not None else None
        self.package_folder = package_folder or package_dir()
        self.packages: dict[tuple, Path] = {}  # kind of batch -> its package
        self._runners: dict[tuple, Any] = {}

    def kind(self, rows: int, masked: bool) -> tuple[str, bool]:
        """The kind of batch a package serves: ``("one" | "several" | "dense", masked)``."""
        size = "one" if rows == 1 else "dense" if self.dense_min_rows and rows >= self.dense_min_rows else "several"
        return size, masked

    def __call__(self, input_ids: Any, mask: Any, position_ids: Any, length: int, key_buffers: list, value_buffers: list) -> Any:
        rows, tokens = input_ids.shape
        if tokens != 1:
            raise ValueError(f"the compiled step decodes one token per row, got {tokens}; drafts are checked by the eager step")
        step_inputs = [input_ids, position_ids, *([] if mask is None else [mask]), torch.empty((length, 0)), *key_buffers, *value_buffers]
        # The package indexes its inputs by the example's contiguous strides and checks none: a strided view would be read wrong.
        strided = next((index for index, tensor in enumerate(step_inputs) if not tensor.is_contiguous()), None)
        if strided is not None:
            raise ValueError(f"the compiled step needs contiguous inputs; input {strided} has strides {step_inputs[strided].stride()}")
        kind = self.kind(rows, mask is not None)
        runner = self._runners.get(kind) or self._load(kind)
        # The loader's own entry point: the package's __call__ would flatten ~400 arguments again every step.
        return runner.loader.boxed_run([*self.weights, *step_inputs])[0]

    def _load(self, kind: tuple[str, bool]) -> Any:
        with torch.inference_mode():
            arguments, shapes = self._example(kind)
            exported = torch.export.export(_Exported(self.fused, self.names), arguments, dynamic_shapes=shapes)
            identity = f"{torch.__version__}\n{torch.backends.cpu.get_cpu_capability()}\n{exported}"
            path = self.package_folder / f"{hashlib.sha256(identity.encode()).hexdigest()[:32]}.pt2"
            if not path.is_file():
                rows = {"one": "one row", "several": "several rows", "dense": "many rows"}[kind[0]]
                print(f"compiling the decode step for {rows}{', padded' if kind[1] else ''} (once; kept in {path.parent})", file=sys.stderr)
                with temporary_beside(path, suffix=".pt2") as temporary:  # the packager insists on the ending
                    torch._inductor.aoti_compile_and_package(exported, package_path=str(temporary))
        self.packages[kind] = path
        self._runners[kind] = torch._inductor.aoti_load_package(str(path))
        return self._runners[kind]

    def _example(self, kind: tuple[str, bool]) -> tuple[tuple, tuple]:
        """Example arguments of ``kind`` and which of their sizes are symbols."""
        size, masked = kind
        fused, dim = self.fused, torch.export.Dim
        if size == "one":
            rows, batch = 1, {}
        else:
            low, high = (self.dense_min_rows, 1 << 20) if size == "dense" else (2, (self.dense_min_rows or 1 << 20) - 1)
            rows, batch = low, {0: dim("rows", min=low, max=high)}

        def buffers() -> list:
            return [torch.zeros((rows, fused.kv_heads, _EXAMPLE_ROOM, fused.head_dim), dtype=fused.embed.weight.dtype) for _ in fused.layers]

        arguments = (
            self.weights, torch.zeros((rows, 1), dtype=torch.long), torch.full((rows, 1), _EXAMPLE_CACHED),
            torch.ones((rows, 1, 1, _EXAMPLE_CACHED + 1), dtype=torch.bool) if masked else None,
            torch.empty((_EXAMPLE_CACHED, 0)), buffers(), buffers(),
        )
        room = batch | {2: dim.AUTO}
        shapes = (
            [None] * len(self.weights), batch or None, batch or None, (batch | {3: dim.AUTO}) if masked else None,
            {0: dim.AUTO}, [room] * len(fused.layers), [room] * len(fused.layers),
        )
        return arguments, shapes
