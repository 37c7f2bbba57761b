"""Decode-step time of the embedded SmolLM2-135M: transformers' growing cache vs the in-place slab.

transformers' ``DynamicLayer`` appends each token with ``torch.cat``, copying the whole
KV cache every step; the engine's :class:`~langgraph_memagent.agents._kv_slab.SlabLayer`
writes into spare columns instead. Both run here on the same prompts, interleaved
round by round so machine noise hits them alike, at batch 1 and batch 8 with a
``--prompt-tokens`` cache. Reports the median step time and decode tokens per second.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ._common import OtherLoad, write_result

NAME = "bench_decode"
CACHES = ("dynamic", "slab")


def _decode_steps(model: Any, prompt: Any, cache_kind: str, steps: int) -> list[float]:
    import torch

    from langgraph_memagent.agents._kv_slab import SlabLayer

    rows, length = prompt.shape
    with torch.inference_mode():
        output = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        cache = output.cache
        if cache_kind == "slab":
            cache.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in cache.layers]
        mask = torch.ones((rows, length), dtype=torch.long)
        token = output.logits[:, -1].argmax(-1, keepdim=True)
        times = []
        for step in range(steps):
            mask = torch.cat([mask, torch.ones((rows, 1), dtype=torch.long)], dim=1)
            start = time.perf_counter()
            output = model(
                input_ids=token,
                attention_mask=mask,
                position_ids=torch.full((rows, 1), length + step),
                cache=cache,
                use_cache=True,
            )
            times.append(time.perf_counter() - start)
            token = output.logits[:, -1].argmax(-1, keepdim=True)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=600, help="cached tokens per row before decoding (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=40, help="decode steps timed per round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs both caches at each batch size (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents.embedded import embedded_model_dir

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(embedded_model_dir()).eval()
    step_times: dict[tuple[int, str], list[float]] = {(rows, kind): [] for rows in (1, 8) for kind in CACHES}
    load = OtherLoad()
    for _ in range(args.rounds):
        for rows in (1, 8):
            prompt = torch.randint(100, 40_000, (rows, args.prompt_tokens))
            for kind in CACHES:
                step_times[(rows, kind)] += _decode_steps(model, prompt, kind, args.steps)
    results = {}
    for (rows, kind), times in step_times.items():
        median = statistics.median(times)
        results[f"batch{rows}_{kind}"] = {"rows": rows, "cache": kind, "median_step_ms": 1000 * median, "tokens_per_s": rows / median}
    speedups = {rows: results[f"batch{rows}_dynamic"]["median_step_ms"] / results[f"batch{rows}_slab"]["median_step_ms"] for rows in (1, 8)}
    batch_gain = {kind: results[f"batch8_{kind}"]["tokens_per_s"] / results[f"batch1_{kind}"]["tokens_per_s"] for kind in CACHES}
    result = {
        "settings": vars(args),
        "results": results,
        "slab_speedup": speedups,
        "batch8_vs_batch1_tokens_per_s": batch_gain,
        "other_cpu_cores": load.cores(),
    }
    write_result(NAME, result)
    for key, row in results.items():
        print(f"  {key:15s} {row['median_step_ms']:7.1f} ms/step {row['tokens_per_s']:6.1f} tok/s")
    print(
        f"{NAME}: slab vs dynamic step time {speedups[1]:.2f}x (batch 1), {speedups[8]:.2f}x (batch 8); "
        f"batch 8 vs 1 decode tokens/s {batch_gain['dynamic']:.2f}x dynamic, {batch_gain['slab']:.2f}x slab; "
        f"other load {result['other_cpu_cores']:.2f} cores"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
