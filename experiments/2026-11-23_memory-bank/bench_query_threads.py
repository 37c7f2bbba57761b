"""Single-query MiniLM embedding: torch's 2 threads in the calling thread vs a one-thread worker.

The memory bank's end-to-end search time is mostly the query embedding (``bench_memory``).
A query is a few dozen word pieces; this measures whether splitting its forward pass
across cores helps or hurts: ``SentenceTransformerEmbeddings(query_threads=None)`` (the
calling thread, all of torch's threads) vs the default ``query_threads=1`` (a worker
thread; ``torch.set_num_threads`` is thread-local under OpenMP). The two alternate query
by query over LoCoMo conv-30's questions, so machine noise hits both.
"""

from __future__ import annotations

import argparse
import time

from langgraph_memagent.benchmarks._common import OtherLoad, write_result
from langgraph_memagent.benchmarks.bench_memory import LOCOMO_FILE

NAME = "bench_query_threads"


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    pick = lambda fraction: round(1e3 * ordered[int(fraction * (len(ordered) - 1))], 1)  # noqa: E731
    return {"p50_ms": pick(0.5), "p95_ms": pick(0.95), "max_ms": pick(1.0)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-23_memory-bank/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch

    from langgraph_memagent.baselines.embeddings import SentenceTransformerEmbeddings, default_embedding_model_dir
    from langgraph_memagent.evals.loaders import load_locomo

    in_caller = SentenceTransformerEmbeddings(default_embedding_model_dir(), query_threads=None)
    on_worker = SentenceTransformerEmbeddings(default_embedding_model_dir(), query_threads=1)
    questions = [sample.question for sample in load_locomo(LOCOMO_FILE)]
    for question in questions[:10]:  # warm-up
        in_caller.embed_query(question)
        on_worker.embed_query(question)
    load = OtherLoad()
    caller, one_thread = [], []
    for _ in range(args.rounds):
        for question in questions:
            start = time.perf_counter()
            in_caller.embed_query(question)
            caller.append(time.perf_counter() - start)
            start = time.perf_counter()
            on_worker.embed_query(question)
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
