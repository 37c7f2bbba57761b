"""Accuracy vs length on the embedded SmolLM2-135M: a miniature of the MemAgent paper's figure 5.

MemAgent vs full context vs RAG on RULER niah_single_1 and the synthetic multi-hop QA
task, at 4K, 8K, 16K and 32K tokens (the model's window is 8K), 8 samples each, greedy
decoding. This is ``memagent compare`` with fixed settings; it resumes like it (re-run
to finish an interrupted run). Tables and plots land in ``benchmarks/results/accuracy/``.
Expected shape: full context collapses past the 8K window; MemAgent holds.
"""

from __future__ import annotations

import argparse

from ._common import RESULTS_DIR, run_compare_benchmark

NAME = "bench_accuracy"
TASKS = ("niah_single_1", "qa_hotpotqa_synthetic")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks (default: %(default)s)")
    parser.add_argument("--lengths", default="4k,8k,16k,32k", help="document lengths (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=8, help="samples per task and length (default: %(default)s)")
    parser.add_argument("--graphs", default="memagent,full_context,rag", help="graphs (default: %(default)s)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "accuracy"), help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent.evals.harness import ComparisonConfig
    from langgraph_memagent.evals.lengths import parse_lengths

    config = ComparisonConfig(
        graphs=tuple(args.graphs.split(",")),
        task=tuple(args.tasks.split(",")),
        lengths=tuple(parse_lengths(args.lengths)),
        samples=args.samples,
        out=args.out,
    )
    return run_compare_benchmark(NAME, vars(args), config)


if __name__ == "__main__":
    raise SystemExit(main())
