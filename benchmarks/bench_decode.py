"""Decode-step time of the embedded SmolLM2-135M: growing cache vs slab, float32 vs int4, fused step, and llama.cpp.

transformers' ``DynamicLayer`` appends each token with ``torch.cat``, copying the whole
KV cache every step; the engine's :class:`~langgraph_memagent.agents._kv_slab.SlabLayer`
writes into spare columns instead. ``slab_int4`` is the slab with the engine's
``quantization="int4"`` weights (:mod:`~langgraph_memagent.agents.quantization`: the GGUF's
Q4_1 codes) through the model's forward; ``fused_int4`` is the same model through the
engine's :class:`~langgraph_memagent.agents.fused_decode.FusedDecodeStep`; both prefill with the
int4 kernel. ``engine`` is what ``load_chat_model`` builds: the fused step, and prefill through
the layers' float32 weights where PyTorch's int4 kernel has no AVX-512 path; ``compiled`` is
the engine with ``compile_decode=True`` (the fused step compiled ahead of time by AOTInductor,
compiled or loaded from the package cache before the rounds, that time reported apart); ``torch_compile`` is what ``compile_decode`` ran before: the same
step through ``torch.compile`` (Dynamo, Inductor's C++ wrapper). All run here
on the same prompts, interleaved round by round so machine noise hits them alike, at batch 1
and batch 8 with a ``--prompt-tokens`` cache. Reports the median step time, decode tokens per
second and prefill tokens per second. When ``llama-cpp-python`` is installed, llama.cpp runs
the same GGUF file (the one the embedded model is converted from) in the same rounds, as the
anchor a CPU user would otherwise pick: batch 1 through llama-cpp-python's ``Llama``, batch 8
through its low-level API (one context with a KV cache per sequence, every step one
``llama_decode`` of 8 tokens), so its own batch-8 gain sits beside ours; otherwise the result
says how to install it (it builds llama.cpp from source).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Any

from ._common import OtherLoad, write_result

NAME = "bench_decode"
VARIANTS = ("dynamic", "slab", "slab_int4", "fused_int4", "engine", "torch_compile", "compiled")  # how a step runs, then the weights when not float32
LLAMA_CPP_INSTALL = (
    "pip install llama-cpp-python (builds llama.cpp from its sdist; a C++ compiler and cmake are needed; where a native "
    "build dies with 'Illegal instruction', as on a VM reporting AMX, build with CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" and the "
    "instruction sets to use: BENCHMARKS.md section 10)"
)


def _decode_steps(model: Any, prompt: Any, steps: int, *, slab: bool, fused: Any = None) -> tuple[list[float], float]:
    """Decode-step times and the prefill time of ``prompt``: transformers' cache or the slab, steps by the
    model's forward or by ``fused`` (a :class:`FusedDecodeStep`, built once per model: it fuses the weights)."""
    import torch

    from langgraph_memagent.agents._kv_slab import SlabLayer

    rows, length = prompt.shape
    with torch.inference_mode():
        started = time.perf_counter()
        output = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        prefill = time.perf_counter() - started
        cache = output.cache
        if slab:
            cache.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in cache.layers]
        mask = torch.ones((rows, length), dtype=torch.long)
        token = output.logits[:, -1].argmax(-1, keepdim=True)
        times = []
        for step in range(steps):
            mask = torch.cat([mask, torch.ones((rows, 1), dtype=torch.long)], dim=1)
            positions = torch.full((rows, 1), length + step)
            start = time.perf_counter()
            if fused is not None:
                logits = fused(token, mask, positions, cache)
            else:
                logits = model(input_ids=token, attention_mask=mask, position_ids=positions, cache=cache).logits[:, -1]
            times.append(time.perf_counter() - start)
            token = logits.argmax(-1, keepdim=True)
    return times, prefill


def _torch_compiled_step(model: Any) -> Any:
    """The fused step through ``torch.compile`` with dynamic sizes, as ``compile_decode`` ran before AOTInductor."""
    import functools

    import torch

    from langgraph_memagent.agents.fused_decode import create_decode_step

    step = create_decode_step(model)
    step._forward = torch.compile(functools.partial(step.fused.forward, layer_weights=step.layers), dynamic=True, options={"cpp_wrapper": True})
    return step


def llama_cpp_model(context_tokens: int, *, logits_all: bool = True, draft_tokens: int = 0, flash_attn: bool = True) -> Any:
    """llama.cpp on the embedded model's GGUF, with this process's thread count; None when not installed.

    ``logits_all`` keeps every position's logits, so the last one can be read back after ``eval()``;
    ``draft_tokens`` turns on llama-cpp-python's own prompt lookup (it checks a draft against every
    position's logits, so it needs ``logits_all``: passed, since the library sizes its buffer from the argument).
    ``flash_attn`` defaults to llama.cpp's own choice, which is on for this model on the CPU ("auto"), while
    llama-cpp-python's ``Llama`` turns it off unless asked; each benchmark keeps llama.cpp at its faster setting
    (BENCHMARKS.md section 10).
    """
    try:
        import llama_cpp
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
    except ImportError as error:
        if error.name == "llama_cpp":
            return None
        # Installed with --no-deps, it imports packages of its own (diskcache): not "not installed".
        raise SystemExit(f"llama-cpp-python is installed but does not import: {error}; install {error.name!r}") from None
    import torch

    from langgraph_memagent.agents.embedded import smollm2_gguf_path

    draft = LlamaPromptLookupDecoding(num_pred_tokens=draft_tokens) if draft_tokens else None
    return llama_cpp.Llama(
        str(smollm2_gguf_path()), n_ctx=context_tokens, n_threads=torch.get_num_threads(), draft_model=draft,
        logits_all=logits_all or draft is not None, flash_attn=flash_attn, verbose=False,
    )


def _llama_cpp_steps(llm: Any, prompt: list[int], steps: int) -> tuple[list[float], float]:
    """llama.cpp's decode-step times (greedy, batch 1) and prefill time of ``prompt``."""
    import numpy as np

    llm.reset()
    started = time.perf_counter()
    llm.eval(prompt)
    prefill = time.perf_counter() - started
    times = []
    for _ in range(steps):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        start = time.perf_counter()
        llm.eval([token])
        times.append(time.perf_counter() - start)
    return times, prefill


class _LlamaCppBatch:
    """llama.cpp decoding ``rows`` sequences together: a context of the loaded model with a KV cache per sequence.

    llama-cpp-python's public ``Llama`` decodes one sequence, so this drives llama.cpp's C batch API through the
    library's own thin wrappers of it (``_internals``), on the model ``llm`` already loaded.
    """

    def __init__(self, llm: Any, rows: int, context_tokens: int):
        import llama_cpp
        from llama_cpp import _internals

        params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)  # the batch-1 context's settings
        # n_ctx is split between the sequences, each share rounded to llama.cpp's padding of 256.
        params.n_ctx, params.n_seq_max = rows * -(-context_tokens // 256) * 256, rows
        self.rows, self.n_batch, self.n_vocab = rows, params.n_batch, llm.n_vocab()
        self.context = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.batch = _internals.LlamaBatch(n_tokens=max(rows, params.n_batch), embd=0, n_seq_max=rows, verbose=False)

    def close(self) -> None:
        """Frees the context and the batch before the model (left to exit, llama-cpp-python's teardown raises)."""
        self.context.close()
        self.batch.close()

    def _decode(self, entries: list[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of (token, position, sequence, wants logits) entries."""
        batch = self.batch.batch
        for index, (token, position, sequence, logits) in enumerate(entries):
            batch.token[index], batch.pos[index], batch.n_seq_id[index] = token, position, 1
            batch.seq_id[index][0], batch.logits[index] = sequence, logits
        batch.n_tokens = len(entries)
        self.context.decode(self.batch)

    def _next_tokens(self) -> list[int]:
        import llama_cpp
        import numpy as np

        return [int(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.context.ctx, row), shape=(self.n_vocab,)).argmax())
                for row in range(self.rows)]

    def steps(self, prompts: list[list[int]], steps: int) -> tuple[list[float], float]:
        """Decode-step times (greedy, all rows in one call a step) and the prefill time of ``prompts``."""
        self.context.kv_cache_clear()
        # Logits last only for the latest llama_decode: every row's last prompt token goes in one call of its own.
        entries = [(token, position, row, False) for row, prompt in enumerate(prompts) for position, token in enumerate(prompt[:-1])]
        started = time.perf_counter()
        for start in range(0, len(entries), self.n_batch):
            self._decode(entries[start : start + self.n_batch])
        self._decode([(prompt[-1], len(prompt) - 1, row, True) for row, prompt in enumerate(prompts)])
        prefill = time.perf_counter() - started
        times, length = [], len(prompts[0])
        for step in range(steps):
            tokens = self._next_tokens()
            start = time.perf_counter()
            self._decode([(token, length + step, row, True) for row, token in enumerate(tokens)])
            times.append(time.perf_counter() - start)
        return times, prefill


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=600, help="cached tokens per row before decoding (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=40, help="decode steps timed per round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs both caches at each batch size (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.agents.fused_decode import create_decode_step
    from langgraph_memagent.agents.quantization import prefill_path, quantize_for_cpu

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(embedded_model_dir()).eval()
    int4 = quantize_for_cpu(copy.deepcopy(model), "int4", prefill_weights="int4")
    engine = quantize_for_cpu(copy.deepcopy(model), "int4")
    compiled = quantize_for_cpu(copy.deepcopy(model), "int4")
    models = {"dynamic": model, "slab": model, "slab_int4": int4, "fused_int4": int4, "engine": engine, "torch_compile": compiled, "compiled": compiled}
    fused = {
        "fused_int4": create_decode_step(int4), "engine": create_decode_step(engine),
        "torch_compile": _torch_compiled_step(compiled), "compiled": create_decode_step(compiled, compiled=True),
    }
    compile_s = {}
    for name in ("torch_compile", "compiled"):
        for rows in (1, 8):  # one compile per kind of batch, outside the timed rounds
            started = time.perf_counter()
            # At the rounds' prompt length: torch.compile's first buffers then have the rounds' sizes, so no size
            # that happened to equal a weight's (and was compiled as static) recompiles in round 1.
            _decode_steps(compiled, torch.randint(100, 40_000, (rows, args.prompt_tokens)), 2, slab=True, fused=fused[name])
            compile_s[f"{name}_{rows}"] = time.perf_counter() - started
    llm = llama_cpp_model(args.prompt_tokens + args.steps + 16)
    llm_batch = _LlamaCppBatch(llm, 8, args.prompt_tokens + args.steps + 16) if llm is not None else None
    variants = [*VARIANTS, *(["llama_cpp"] if llm is not None else [])]
    step_times: dict[tuple[int, str], list[float]] = {(rows, name): [] for rows in (1, 8) for name in variants}
    prefill_times: dict[tuple[int, str], list[float]] = {key: [] for key in step_times}
    call_times: dict[tuple[int, str], list[float]] = {key: [] for key in step_times}  # prefill + every step of a round
    load = OtherLoad()
    for _ in range(args.rounds):
        for rows in (1, 8):
            prompt = torch.randint(100, 40_000, (rows, args.prompt_tokens))
            for name in variants:
                if name == "llama_cpp" and rows > 1:
                    times, prefill = llm_batch.steps(prompt.tolist(), args.steps)
                elif name == "llama_cpp":
                    times, prefill = _llama_cpp_steps(llm, prompt[0].tolist(), args.steps)
                else:
                    times, prefill = _decode_steps(models[name], prompt, args.steps, slab=name != "dynamic", fused=fused.get(name))
                step_times[(rows, name)] += times
                prefill_times[(rows, name)].append(prefill)
                call_times[(rows, name)].append(prefill + sum(times))
    if llm is not None:
        llm_batch.close()
        llm.close()
    results = {}
    for (rows, name), times in step_times.items():
        if not times:
            continue
        median = statistics.median(times)
        prefill = statistics.median(prefill_times[(rows, name)])
        results[f"batch{rows}_{name}"] = {
            "rows": rows, "variant": name, "median_step_ms": 1000 * median, "tokens_per_s": rows / median,
            "prefill_tokens_per_s": rows * args.prompt_tokens / prefill,
            # One whole call: prefill the prompt, then --steps tokens (MemAgent's calls in the 1M-token
            # run averaged 1,239 prompt and 92 completion tokens: --prompt-tokens 1240 --steps 92).
            "call_s": statistics.median(call_times[(rows, name)]),
        }
    speedups = {rows: results[f"batch{rows}_dynamic"]["median_step_ms"] / results[f"batch{rows}_slab"]["median_step_ms"] for rows in (1, 8)}
    int4_gain = {rows: results[f"batch{rows}_slab_int4"]["tokens_per_s"] / results[f"batch{rows}_slab"]["tokens_per_s"] for rows in (1, 8)}
    batch_gain = {name: results[f"batch8_{name}"]["tokens_per_s"] / results[f"batch1_{name}"]["tokens_per_s"] for name in variants}
    versus_llama = (
        {f"{name}_{key}": results[f"batch1_{name}"][key] / results["batch1_llama_cpp"][key]
         for name in VARIANTS[1:] for key in ("tokens_per_s", "prefill_tokens_per_s")}
        | {f"{name}_call_speed": results["batch1_llama_cpp"]["call_s"] / results[f"batch1_{name}"]["call_s"]
           for name in VARIANTS[1:]}
        if llm is not None
        else None
    )
    result = {
        "settings": vars(args),
        "engine_prefill_path": prefill_path(engine),
        "compile_or_load_s": compile_s,
        "results": results,
        "slab_speedup": speedups,
        "int4_vs_float32_decode_tokens_per_s": int4_gain,
        "batch8_vs_batch1_tokens_per_s": batch_gain,
        "llama_cpp": "measured" if llm is not None else f"not installed: {LLAMA_CPP_INSTALL}",
        "batch1_versus_llama_cpp": versus_llama,
        "other_cpu_cores": load.cores(),
    }
    write_result(NAME, result)
    for key, row in results.items():
        print(f"  {key:17s} {row['median_step_ms']:7.1f} ms/step {row['tokens_per_s']:6.1f} tok/s  prefill {row['prefill_tokens_per_s']:6.0f} tok/s  call {row['call_s']:6.2f} s")
    print(
        f"{NAME}: slab vs dynamic step time {speedups[1]:.2f}x (batch 1), {speedups[8]:.2f}x (batch 8); int4 vs float32 decode "
        f"{int4_gain[1]:.2f}x (batch 1), {int4_gain[8]:.2f}x (batch 8); batch 8 vs 1 decode tokens/s "
        f"{batch_gain['slab']:.2f}x slab, {batch_gain['slab_int4']:.2f}x slab_int4, {batch_gain['fused_int4']:.2f}x fused_int4, "
        f"{batch_gain['engine']:.2f}x engine, {batch_gain['torch_compile']:.2f}x torch_compile, {batch_gain['compiled']:.2f}x compiled"
        + (f", {batch_gain['llama_cpp']:.2f}x llama.cpp" if llm is not None else "")
        + f" (prefill: {result['engine_prefill_path']}; "
        f"compile or load: {', '.join(f'{key} {seconds:.0f} s' for key, seconds in compile_s.items())}); "
        f"llama.cpp: {result['llama_cpp']}; "
        f"other load {result['other_cpu_cores']:.2f} cores"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
