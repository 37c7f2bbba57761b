"""MemAgent's final answer decoded free (the paper) and under the ``\\boxed{}`` grammar, on the same haystacks.

The embedded SmolLM2-135M, greedy, the demo's budget (1000-token chunks, 128-token memory,
64-token answer), generated RULER ``niah_single_1`` at 4K and 16K tokens (the demo's length).
``memagent_free`` is MemAgent with ``constrained_answer=False``, as before this option;
``memagent`` is the default on the local backends, the answer decoded as ``\\boxed{...}``. The
memory updates are the same greedy calls in both: only the last call differs. Results land in
``benchmarks/results/answer_grammar/``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import RESULTS_DIR, run_compare_benchmark

NAME = "bench_answer_grammar"


def _free_answer(model: Any, options: Any, tokenizer: Any, **graph_kwargs: Any) -> Any:
    from langgraph_memagent.graphs.registry import GRAPHS

    return GRAPHS["memagent"].builder(model, options, tokenizer, constrained_answer=False, **graph_kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="4k,16k", help="document lengths (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=8, help="samples per length (default: %(default)s)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "answer_grammar"), help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent.evals.harness import ComparisonConfig
    from langgraph_memagent.evals.lengths import parse_lengths
    from langgraph_memagent.graphs.options import default_graph_options
    from langgraph_memagent.graphs.registry import register_graph

    register_graph("memagent_free", _free_answer)
    config = ComparisonConfig(
        graphs=("memagent_free", "memagent"),
        task="niah_single_1",
        lengths=tuple(parse_lengths(args.lengths)),
        samples=args.samples,
        graph_options=default_graph_options("smollm2-135m"),
        out=args.out,
    )
    return run_compare_benchmark(NAME, vars(args), config)


if __name__ == "__main__":
    raise SystemExit(main())
