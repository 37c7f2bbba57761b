"""LoCoMo on the embedded SmolLM2-135M: SUMER, AgeMem, RAG, full context and MemAgent on one real conversation.

The conversation is ``shared/data/locomo_conv30.json`` (LoCoMo conv-30: 19 sessions, 369
turns, 81 questions without the adversarial category). A seeded subset of questions is
run (``--limit``; every graph answers the same ones), greedy, with the per-category
token F1 and BLEU-1 of Mem0's evaluation code (as the SUMER paper reports) and, with
``--judge``, the LLM judge's J. This is ``memagent compare`` with fixed settings; it resumes
like it. Runs alone (not in ``make bench``): 16 questions take about 3 hours on 2 cores.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import RESULTS_DIR, run_compare_benchmark

NAME = "bench_locomo"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_conv30.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(LOCOMO), help="LoCoMo file, either layout (default: %(default)s)")
    parser.add_argument("--graphs", default="sumer,agemem,rag,full_context,memagent", help="graphs (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=16, help="questions, a seeded subset (default: %(default)s)")
    parser.add_argument("--judge", default=None, help="judge model spec, e.g. smollm2-135m (default: none: F1 and BLEU-1 only)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "locomo"), help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent.evals.harness import ComparisonConfig

    config = ComparisonConfig(
        graphs=tuple(args.graphs.split(",")), task=None, lengths=(), data=(args.data,), limit=args.limit, judge=args.judge, out=args.out
    )
    return run_compare_benchmark(NAME, vars(args), config)


if __name__ == "__main__":
    raise SystemExit(main())
