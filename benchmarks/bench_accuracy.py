"""Accuracy vs length on the embedded SmolLM2-135M: a miniature of the MemAgent paper's figure 5.

MemAgent vs full context vs RAG on RULER niah_single_1 and the synthetic multi-hop QA
task, at 4K, 8K, 16K and 32K tokens (the model's window is 8K), 8 samples each, greedy
decoding. This is ``memagent compare`` with fixed settings; it resumes like it (re-run
to finish an interrupted run). Tables and plots land in ``benchmarks/results/accuracy/``.
Expected shape: full context collapses past the 8K window; MemAgent holds.
"""

from __future__ import annotations

import argparse

from ._common import RESULTS_DIR, OtherLoad, write_result

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

    from langgraph_memagent.agents.loading import load_chat_model
    from langgraph_memagent.evals.harness import ComparisonConfig, parse_lengths, run_comparison

    load = OtherLoad()
    config = ComparisonConfig(
        graphs=tuple(args.graphs.split(",")),
        task=tuple(args.tasks.split(",")),
        lengths=tuple(parse_lengths(args.lengths)),
        samples=args.samples,
        out=args.out,
    )
    # Greedy, so a re-run reproduces every answer.
    result = run_comparison(config, model=load_chat_model("smollm2-135m", temperature=0))
    write_result(NAME, {"settings": vars(args), "out": str(result.out), "summary_md": result.markdown, "other_cpu_cores": load.cores()})
    print(result.markdown)
    print(f"{NAME}: tables and plots in {result.out}; other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
