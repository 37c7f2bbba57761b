"""int4 kernel vs float32 and bfloat16 weights for the embedded model's 120 Linear layers, by rows per product.

PyTorch's int4 CPU kernel (``_weight_int4pack_mm_for_cpu``) reads a seventh of float32's bytes,
which wins for the few rows of a decode step; for the many rows of a prompt the product is
compute-bound and the kernel's speed depends on the instruction set it was built for. This
times the 120 Linears of SmolLM2-135M (30 layers x q/k/v, o, gate/up, down, as the fused decode
step runs them: q/k/v and gate/up each as one product) three ways, interleaved, at each row
count: the int4 kernel, float32 weights, and the same weights in bfloat16 (oneDNN, float32
accumulation; fast where the CPU has bfloat16 instructions). It reports where each dense
format becomes faster than int4: the evidence for
:data:`~langgraph_memagent.agents.quantization.DENSE_PREFILL_MIN_ROWS` and for the prefill
weights :func:`~langgraph_memagent.agents.quantization.default_prefill_weights` picks here.

``python -m benchmarks.bench_linear_kernels`` (about 2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

from ._common import OtherLoad, write_result

NAME = "bench_linear_kernels"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1,8,16,32,64,256,1024", help="rows per product, comma-separated (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per row count and kernel (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.agents.fused_decode import create_decode_step
    from langgraph_memagent.agents.quantization import DENSE_PREFILL_MIN_ROWS, GROUP_SIZE, default_prefill_weights, quantize_for_cpu

    float32 = AutoModelForCausalLM.from_pretrained(embedded_model_dir()).eval()
    step = create_decode_step(quantize_for_cpu(copy.deepcopy(float32), "int4", prefill_weights="int4"))
    int4 = [weight for layer in step.layers for weight in (layer.qkv, layer.output, layer.gate_up, layer.down)]
    weights = []
    for layer in float32.model.layers:
        attention, mlp = layer.self_attn, layer.mlp
        weights += [
            torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight]).detach(),
            attention.o_proj.weight.detach(),
            torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).detach(),
            mlp.down_proj.weight.detach(),
        ]

    def run_int4(inputs: dict[int, torch.Tensor]) -> None:
        for fused, weight in zip(int4, weights):
            torch.ops.aten._weight_int4pack_mm_for_cpu(inputs[weight.shape[1]], fused.packed, GROUP_SIZE, fused.scales)

    bfloat16_weights = [weight.bfloat16() for weight in weights]

    def run_dense(inputs: dict[int, torch.Tensor]) -> None:
        dense = bfloat16_weights if next(iter(inputs.values())).dtype == torch.bfloat16 else weights
        for weight in dense:
            F.linear(inputs[weight.shape[1]], weight)

    load, results = OtherLoad(), {}
    with torch.inference_mode():
        for rows in (int(r) for r in args.rows.split(",")):
            inputs = {size: torch.randn(rows, size) for size in {w.shape[1] for w in weights}}
            bfloat16 = {size: x.bfloat16() for size, x in inputs.items()}
            kernels = (("int4", run_int4, bfloat16), ("float32", run_dense, inputs), ("bfloat16", run_dense, bfloat16))
            times: dict[str, list[float]] = {name: [] for name, _, _ in kernels}
            for _, run, given in kernels:
                run(given)  # warm-up
            for _ in range(args.rounds):
                for name, run, given in kernels:
                    start = time.perf_counter()
                    run(given)
                    times[name].append(time.perf_counter() - start)
            ms = {name: 1000 * statistics.median(measured) for name, measured in times.items()}
            results[rows] = {f"{name}_ms": value for name, value in ms.items()} | {
                f"{name}_over_int4_time": ms[name] / ms["int4"] for name in ("float32", "bfloat16")
            }
            print(f"  {rows:5d} rows: " + "  ".join(f"{name} {value:8.1f} ms" for name, value in ms.items()), flush=True)
    faster_from = {
        name: min((rows for rows, row in results.items() if row[f"{name}_over_int4_time"] < 1), default=None)
        for name in ("float32", "bfloat16")
    }
    result = {
        "settings": vars(args),
        "results": results,
        "float32_faster_from_rows": faster_from["float32"],
        "bfloat16_faster_from_rows": faster_from["bfloat16"],
        "dense_prefill_min_rows_in_use": DENSE_PREFILL_MIN_ROWS,
        "prefill_weights_chosen_here": default_prefill_weights(),
        "other_cpu_cores": load.cores(),
    }
    write_result(NAME, result)
    print(
        f"{NAME}: faster than the int4 kernel from {faster_from['float32']} rows (float32), {faster_from['bfloat16']} rows "
        f"(bfloat16); rows tried: {args.rows}; DENSE_PREFILL_MIN_ROWS = {DENSE_PREFILL_MIN_ROWS}; prefill weights chosen "
        f"here: {result['prefill_weights_chosen_here']}; other load {result['other_cpu_cores']:.2f} cores"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
