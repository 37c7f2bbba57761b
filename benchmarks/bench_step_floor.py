"""The kernels alone of one decode step of the embedded model, by rows: the floor under batched decoding.

A decode step of the int4 SmolLM2-135M is its kernels (the 120 int4 products of 30 layers, the
int8 output projection with its float32 re-scoring, 30 attention calls over the cache) plus the
small operations around them. This times the kernels alone at each row count, on the engine's
own fused weights and a cache of ``--cached`` tokens, beside the whole eager step, interleaved
round by round. Their sum bounds the step from below, whatever removes the small operations
(``compile_decode``), so ``rows x batch-1 step / kernel floor at rows`` is the most a batch can
gain over one row with these kernels on this machine: reported against today's eager batch-1
step, and against a batch-1 step reduced to its own kernels. Timed beside them, not part of the
floor: the same attention over a bfloat16 cache, which the engine does not keep.

``python -m benchmarks.bench_step_floor`` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import time

from ._common import OtherLoad, write_result

NAME = "bench_step_floor"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1,8", help="rows per step, comma-separated (default: %(default)s)")
    parser.add_argument("--cached", type=int, default=600, help="cached tokens per row (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=20, help="steps (or kernel sets) timed per round (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents._kv_slab import SlabLayer
    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.agents.fused_decode import _product, create_decode_step
    from langgraph_memagent.agents.quantization import quantize_for_cpu

    model = quantize_for_cpu(AutoModelForCausalLM.from_pretrained(embedded_model_dir()).eval(), "int4")
    step = create_decode_step(model)
    heads, kv_heads, head_dim, hidden_size = step.fused.heads, step.fused.kv_heads, step.fused.head_dim, model.config.hidden_size
    intermediate = model.config.intermediate_size
    row_counts = [int(r) for r in args.rows.split(",")]

    def parts(rows: int) -> dict:
        """One callable per kernel group of a step at ``rows``, and the whole eager step."""
        torch.manual_seed(0)
        hidden, activated = torch.randn(rows, hidden_size), torch.randn(rows, intermediate)
        query = torch.randn(rows, heads, 1, head_dim)
        # A cache per layer, as in a step: one shared cache would stay in the CPU's cache (at 8 rows and
        # 600 tokens the 30 layers' keys and values are 220 MB, read from memory every step).
        caches = [[torch.randn(rows, kv_heads, args.cached, head_dim) for _ in range(2)] for _ in step.layers]

        def int4_products() -> None:
            for layer in step.layers:
                _product(hidden, layer.qkv), _product(hidden, layer.output), _product(hidden, layer.gate_up), _product(activated, layer.down)

        def attention() -> None:
            for layer, (keys, values) in zip(step.layers, caches):
                F.scaled_dot_product_attention(query, keys, values, scale=layer.scaling, enable_gqa=True)

        # Not the engine's: the same attention over a bfloat16 cache (half the bytes read), the floor a
        # bfloat16 KV cache would lower to.
        caches_bfloat16 = [[states.to(torch.bfloat16) for states in cache] for cache in caches]
        query_bfloat16 = query.to(torch.bfloat16)

        def attention_bfloat16_cache() -> None:
            for layer, (keys, values) in zip(step.layers, caches_bfloat16):
                F.scaled_dot_product_attention(query_bfloat16, keys, values, scale=layer.scaling, enable_gqa=True)

        prompt = torch.randint(100, 40_000, (rows, args.cached))
        cache = model(input_ids=prompt, use_cache=True, logits_to_keep=1).cache
        cache.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in cache.layers]
        state = {"mask": torch.ones((rows, args.cached), dtype=torch.long), "position": args.cached}

        def whole_step() -> None:
            state["mask"] = torch.cat([state["mask"], torch.ones((rows, 1), dtype=torch.long)], dim=1)
            step(torch.ones((rows, 1), dtype=torch.long), state["mask"], torch.full((rows, 1), state["position"]), cache)
            state["position"] += 1

        return {"int4_products": int4_products, "output_projection": lambda: model.lm_head(hidden), "attention": attention,
                "attention_bfloat16_cache": attention_bfloat16_cache, "eager_step": whole_step}

    load, times = OtherLoad(), {}
    with torch.inference_mode():
        runs = {rows: parts(rows) for rows in row_counts}
        for _ in range(args.rounds):
            for rows, named in runs.items():
                for name, run in named.items():
                    run()  # warm
                    start = time.perf_counter()
                    for _ in range(args.repeats):
                        run()
                    times.setdefault((rows, name), []).append((time.perf_counter() - start) / args.repeats)
    results = {}
    for rows in row_counts:
        row = {name: 1000 * statistics.median(times[(rows, name)]) for name in runs[rows]}
        row["kernel_floor"] = row["int4_products"] + row["output_projection"] + row["attention"]
        results[rows] = row
        print(f"  {rows} rows: " + ", ".join(f"{name} {ms:.2f} ms" for name, ms in row.items()), flush=True)
    one = results[row_counts[0]]
    # A batch's step costs at least its kernels, so its gain over batch 1 is at most rows x (batch-1 step) / (its floor):
    # with today's eager batch-1 step, and with a batch-1 step that costs only its kernels too.
    bounds = {
        basis: {rows: rows * one[basis] / results[rows]["kernel_floor"] for rows in row_counts[1:]}
        for basis in ("eager_step", "kernel_floor")
    }
    result = {"settings": vars(args), "results_ms": results, "batch_gain_at_most_by_batch1_basis": bounds,
              "other_cpu_cores": load.cores()}
    write_result(NAME, result)
    print(f"{NAME}: a batch gains over batch 1 at most " + "; ".join(
        f"{gain:.2f}x at {rows} rows against the {basis.replace('_', ' ')} of batch 1"
        for basis, by_rows in bounds.items() for rows, gain in by_rows.items()
    ) + f"; other load {result['other_cpu_cores']:.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
