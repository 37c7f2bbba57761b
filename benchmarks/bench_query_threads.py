"""Single-query MiniLM embedding: torch's 2 threads in the calling thread vs a one-thread worker.

The memory bank's end-to-end search time is mostly the query embedding (``bench_memory``).
A query is a few dozen word pieces; this measures whether splitting its forward pass
across cores helps or hurts. ``torch.set_num_threads`` is thread-local under OpenMP, so
the worker runs with 1 thread while the calling thread keeps its pool. The two ways
alternate query by query over LoCoMo conv-30's questions, so machine noise hits both.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from ._common import OtherLoad, write_result
from .bench_memory import LOCOMO_FILE

NAME = "bench_query_threads"


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    pick = lambda fraction: round(1e3 * ordered[int(fraction * (len(ordered) - 1))], 1)  # noqa: E731
    return {"p50_ms": pick(0.5), "p95_ms": pick(0.95), "max_ms": pick(1.0)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch

    from langgraph_memagent.baselines.embeddings import load_embeddings
    from langgraph_memagent.evals.loaders import load_locomo

    embeddings = load_embeddings()
    questions = [sample.question for sample in load_locomo(LOCOMO_FILE)]
    worker = ThreadPoolExecutor(1, initializer=lambda: torch.set_num_threads(1))
    for question in questions[:10]:  # warm-up
        embeddings.embed_query(question)
        worker.submit(embeddings.embed_query, question).result()
    load = OtherLoad()
    caller, one_thread = [], []
    for _ in range(args.rounds):
        for question in questions:
            start = time.perf_counter()
            embeddings.embed_query(question)
            caller.append(time.perf_counter() - start)
            start = time.perf_counter()
            worker.submit(embeddings.embed_query, question).result()
            one_thread.append(time.perf_counter() - start)
    result = {
        "settings": vars(args),
        "queries": len(caller),
        "calling_thread": {"torch_threads": torch.get_num_threads(), **_percentiles(caller)},
        "one_thread_worker": _percentiles(one_thread),
        "other_cpu_cores": load.cores(),
    }
    write_result(NAME, result)
    print(
        f"{NAME}: query embedding p50/p95 {result['calling_thread']['p50_ms']}/{result['calling_thread']['p95_ms']} ms "
        f"with {result['calling_thread']['torch_threads']} threads, {result['one_thread_worker']['p50_ms']}/"
        f"{result['one_thread_worker']['p95_ms']} ms on a one-thread worker; other load {load.cores():.2f} cores"
    )
    return result


if __name__ == "__main__":
    main()
