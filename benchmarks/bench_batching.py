"""Batched vs sequential throughput of the MemAgent graph on the embedded SmolLM2-135M.

The local backend decodes concurrent calls together (continuous batching: each prompt
is prefilled alone, then all active requests share each decode step). This runs the
same N RULER niah_single_1 documents three ways, in one process, side by side:

* ``sequential``: ``graph.invoke`` one document after another (one request at a time);
* ``batch``: ``graph.batch(inputs, config={"max_concurrency": N})`` -- the explicit
  concurrency matters: LangChain's default thread pool has only 6 workers on 2 cores;
* ``abatch``: ``await graph.abatch(...)`` with the same concurrency (skip: ``--no-async``).

Throughput counts prompt + completion tokens from each result's ``usage``. Batching is
shown by the engine's ``batches_run`` counter before and after (busy spells: requests
that overlap in time count as one) and ``peak_rows`` (most requests sharing one decode
step). Accuracy is RULER's ``string_match_all`` of the gold number in the response.
Goal: batch >= 2x sequential tokens per second. Greedy decoding (temperature 0) so the
modes are comparable.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from ._common import OtherLoad, write_result

NAME = "bench_batching"
GOAL_RATIO = 3.0  # batched tokens/s over sequential, the engine-speed goal (2.0 before int4 weights)


def run_mode(mode: str, graph: Any, engine: Any, inputs: list[dict], concurrency: int) -> tuple[dict[str, Any], list[dict]]:
    """Run all inputs in one mode: wall time, tokens, and how the engine batched them."""
    config = {"max_concurrency": concurrency}
    batches_before, load = engine.batches_run, OtherLoad()
    start = time.perf_counter()
    if mode == "sequential":
        results = [graph.invoke(item) for item in inputs]
    elif mode == "batch":
        results = graph.batch(inputs, config=config)
    else:
        results = asyncio.run(graph.abatch(inputs, config=config))
    seconds = time.perf_counter() - start
    prompt_tokens = sum(r["usage"]["input_tokens"] for r in results)
    completion_tokens = sum(r["usage"]["output_tokens"] for r in results)
    return {
        "seconds": seconds,
        "llm_calls": sum(r["usage"]["llm_calls"] for r in results),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "tokens_per_s": (prompt_tokens + completion_tokens) / seconds,
        "completion_tokens_per_s": completion_tokens / seconds,
        # batches_run counts busy spells of the continuous-batching engine (overlapping
        # requests are one spell); peak_rows is the most requests decoded in one step so far.
        "engine_busy_spells": engine.batches_run - batches_before,
        "engine_peak_rows": engine.peak_rows,
        "other_cpu_cores": load.cores(),
    }, results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{NAME}",
        description="Tokens/s of N MemAgent runs on the embedded model: graph.batch (and abatch) vs one after another.",
    )
    parser.add_argument("--docs", type=int, default=8, help="documents, all run concurrently in batch mode (default: %(default)s)")
    parser.add_argument("--doc-tokens", type=int, default=2000, help="tokens per niah_single_1 document (default: %(default)s)")
    parser.add_argument("--chunk-tokens", type=int, default=500, help="tokens per chunk (default: %(default)s)")
    parser.add_argument("--memory-tokens", type=int, default=64, help="generation limit of a memory update (default: %(default)s)")
    parser.add_argument("--answer-tokens", type=int, default=32, help="generation limit of the final answer (default: %(default)s)")
    parser.add_argument("--no-async", action="store_true", help="skip the asyncio graph.abatch mode")
    parser.add_argument("--compile-decode", action="store_true", help="decode through the compiled fused step (compile_decode=True)")
    args = parser.parse_args(argv)

    from langgraph_memagent import build_memagent_graph, load_chat_model
    from langgraph_memagent.evals.ruler import niah_single_1
    from langgraph_memagent.evals.scoring import score

    start = time.perf_counter()
    model = load_chat_model("smollm2-135m", temperature=0, compile_decode=args.compile_decode)
    engine = model.engine
    model.invoke("Hello", max_tokens=4)  # warm-up: the first generate call is slower
    if args.compile_decode:  # a package per kind of batch (several rows, padded or not), compiled or loaded before any timing
        model.batch(["Hello", "Name three colors of the rainbow, please."], max_tokens=8)
        model.batch(["Hello", "Hello"], max_tokens=8)
    load_s = time.perf_counter() - start
    graph = build_memagent_graph(
        model, chunk_tokens=args.chunk_tokens, memory_tokens=args.memory_tokens, answer_tokens=args.answer_tokens
    )
    samples = [niah_single_1(graph.memagent_codec, args.doc_tokens, seed=seed) for seed in range(args.docs)]
    inputs = [{"question": s.question, "document": s.document} for s in samples]

    modes = ["sequential", "batch"] + ([] if args.no_async else ["abatch"])
    measured, responses = {}, {}
    for mode in modes:
        measured[mode], results = run_mode(mode, graph, engine, inputs, args.docs)
        hits = [score(r["response"], s.answers, "string_match_all") for r, s in zip(results, samples)]
        measured[mode]["accuracy"] = sum(hits) / len(hits)
        measured[mode]["chunks_per_doc"] = [r["num_chunks"] for r in results]
        responses[mode] = [r["response"] for r in results]

    ratios = {mode: measured[mode]["tokens_per_s"] / measured["sequential"]["tokens_per_s"] for mode in modes[1:]}
    result = {
        "settings": vars(args),
        "model": f"smollm2-135m ({model.quantization or 'float32'}, greedy), engine max_batch_size={engine.max_batch_size}",
        "decode_path": engine.decode_path,
        "model_load_s": load_s,
        "modes": measured,
        "speedup_vs_sequential": ratios,
        # Padding in a batch can change the numerics, hence greedy outputs; count agreement.
        "responses_identical_to_sequential": {
            mode: sum(a == b for a, b in zip(responses[mode], responses["sequential"])) for mode in modes[1:]
        },
        "goal_met": ratios["batch"] >= GOAL_RATIO,
    }
    write_result(NAME, result)
    seq, bat = measured["sequential"], measured["batch"]
    line = (
        f"{NAME}: {args.docs} docs x {args.doc_tokens} tokens: sequential {seq['tokens_per_s']:.0f} tok/s "
        f"({seq['engine_busy_spells']} busy spells, acc {seq['accuracy']:.2f}), batch {bat['tokens_per_s']:.0f} tok/s "
        f"({bat['engine_busy_spells']} busy spells, up to {bat['engine_peak_rows']} rows/step, acc {bat['accuracy']:.2f}) = {ratios['batch']:.2f}x "
        f"(goal >= {GOAL_RATIO:g}x: {'met' if result['goal_met'] else 'MISSED'})"
    )
    if "abatch" in measured:
        line += f"; abatch {measured['abatch']['tokens_per_s']:.0f} tok/s = {ratios['abatch']:.2f}x"
    line += f"; other load {max(m['other_cpu_cores'] for m in measured.values()):.2f} cores max"
    print(line)
    return result


if __name__ == "__main__":
    main()
