"""One RULER haystack of 1M tokens, answered end to end by MemAgent on the embedded SmolLM2-135M.

A generated ``niah_single_1`` sample (one needle in a 1,048,576-token haystack of the RULER
noise text) goes through ``memagent compare`` with the embedded model's defaults: 1000-token
chunks, a 128-token memory, greedy decoding, and the engine's default weights (int4, the GGUF's
own codes). About 1,050 memory updates one after another, so this measures the engine's
single-sequence speed over a whole long run. Records the wall time, the answer and its score
in ``benchmarks/results/bench_long_document.json``; tables land in
``benchmarks/results/long_document/``. ``--model smollm2-135m-memagent`` runs the shipped trained
adapter instead (float32 weights, so no prompt lookup), recorded under that name. Run it alone (38 minutes on 2 Zen 4 cores with prompt lookup, 53 without); an
interrupted run resumes from its results file, not from the middle of the document.
"""

from __future__ import annotations

import argparse
import json

from ._common import RESULTS_DIR, run_compare_benchmark

NAME = "bench_long_document"


def main(argv: list[str] | None = None) -> int:
    from langgraph_memagent.agents.loading import EMBEDDED_MODELS
    from langgraph_memagent.agents.prompt_lookup import DRAFT_TOKENS

    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--length", default="1M", help="haystack length in tokens (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=21, help="seed of the generated sample (default: %(default)s)")
    parser.add_argument("--out", help="output directory (default: results/long_document, or long_document_<model>)")
    parser.add_argument("--compile-decode", action="store_true", help="decode through the compiled fused step (compile_decode=True)")
    parser.add_argument(
        "--prompt-lookup", type=int, default=DRAFT_TOKENS, metavar="N", help="the engine's prompt lookup draft tokens, 0 = off (default: %(default)s)"
    )
    parser.add_argument("--model", choices=EMBEDDED_MODELS, default=EMBEDDED_MODELS[0], help="embedded model (default: %(default)s)")
    args = parser.parse_args(argv)
    suffix = "" if args.model == EMBEDDED_MODELS[0] else f"_{args.model}"  # another model's run is recorded apart
    name, args.out = NAME + suffix, args.out or str(RESULTS_DIR / f"long_document{suffix}")
    if args.prompt_lookup < 0:
        parser.error(f"--prompt-lookup must be a whole number of draft tokens >= 0 (0 = off), got {args.prompt_lookup}")

    from langgraph_memagent.evals.harness import ComparisonConfig
    from langgraph_memagent.evals.lengths import parse_length
    from langgraph_memagent.evals.results import RESULTS_FILE

    config = ComparisonConfig(
        graphs=("memagent",), task="niah_single_1", lengths=(parse_length(args.length),), samples=1, seed=args.seed, out=args.out,
        model=args.model,
    )
    status = run_compare_benchmark(name, vars(args), config, compile_decode=args.compile_decode, prompt_lookup_num_tokens=args.prompt_lookup)
    with open(f"{args.out}/{RESULTS_FILE}", encoding="utf-8") as handle:
        row = json.loads(handle.readline())
    print(
        f"{name}: {row['document_tokens']:,} tokens, {row['llm_calls']} model calls in {row['seconds'] / 60:.1f} min; "
        f"gold {row['answers']}, score {row['score']:g}; response {row['response']!r}"
    )
    return status


if __name__ == "__main__":
    raise SystemExit(main())
