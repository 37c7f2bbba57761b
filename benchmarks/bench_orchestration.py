"""Orchestration overhead of the MemAgent graph against a bare Python loop making the same calls.

With an instant model (fixed reply, no compute), everything measured is the code around
the model. For each document length and each variant, a fresh subprocess builds a RULER
noise document, then times ``--repeats`` runs, split into

* chunking: tokenize + chunk (``chunk_text`` with the embedded model's tokenizer), and
* the loop: every memory update plus the final answer, chunking excluded.

Variants: ``loop`` (hand-written loop: same prompts, same ``model.bind(...).invoke``
calls, same chunking), ``graph`` (no checkpointer), ``graph_inmemory``
(``InMemorySaver``) and ``graph_sqlite`` (``SqliteSaver`` on a file in a temp dir); with
a checkpointer the graph writes each checkpoint before the next step (its default
``durability="sync"``). No ``recursion_limit`` is passed: the graph sizes its own.
Inside the graph, chunking is timed by a wrapper codec that marks when ``chunk_text``
starts encoding and finishes decoding; everything after that mark is the loop.

A subprocess per (length, variant) gives comparable peak RSS: the first run of each
measures peak RSS above the process's size with the document built, over the whole run
and over the loop alone (from the first model call). Checkpoint bytes per step are the
payload bytes a checkpointer stored per checkpoint (checkpoint + metadata + the writes
saved under it + new channel blobs for ``InMemorySaver``) over steps >= 1; the input
checkpoint and step 0, which hold the document by design, are reported separately.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph_memagent.evals.lengths import format_tokens

from ._common import (
    InstantChatModel,
    OtherLoad,
    current_rss,
    embedded_codec,
    median,
    noise_document,
    parse_tokens,
    peak_rss,
    reset_peak_rss,
    write_result,
)

NAME = "bench_orchestration"
REPO_ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("loop", "graph", "graph_inmemory", "graph_sqlite")
QUESTION = "What is the special magic number for fearless-harbor mentioned in the provided text?"
GOAL_OVERHEAD_MS = 2.0
GOAL_LINEARITY = 1.15


class PhaseCodec:
    """A TokenCodec that records when chunking starts (its first encode) and ends (its last decode)."""

    def __init__(self, codec: Any):
        self.codec = codec
        self.name = codec.name
        self.started = self.finished = 0.0

    def reset(self) -> None:
        self.started = self.finished = 0.0

    def encode_batch(self, texts):
        # Chunking streams: batches of segments are encoded and decoded in turn.
        self.started = self.started or time.perf_counter()
        return self.codec.encode_batch(texts)

    def decode_batch(self, token_ids):
        texts = self.codec.decode_batch(token_ids)
        self.finished = time.perf_counter()
        return texts


class MemoryProbe:
    """Splits one run's peak RSS into chunking and loop phases at the first model call."""

    def __init__(self) -> None:
        gc.collect()
        self.base = current_rss()  # document built, nothing run yet
        self.chunking_peak = self.loop_start = 0
        reset_peak_rss()

    def first_call(self) -> None:
        self.chunking_peak = peak_rss()
        self.loop_start = current_rss()
        reset_peak_rss()

    def report(self) -> dict[str, float]:
        loop_peak = peak_rss()
        return {
            "base_rss_mb": self.base / 1e6,
            "peak_above_base_mb": (max(self.chunking_peak, loop_peak) - self.base) / 1e6,
            "chunking_peak_above_base_mb": (self.chunking_peak - self.base) / 1e6,
            "loop_peak_above_loop_start_mb": (loop_peak - self.loop_start) / 1e6,
        }


class ProbedModel(InstantChatModel):
    """The instant model, calling ``probe.first_call()`` once, at the first memory update."""

    probe: Any = None

    def _result(self, messages):
        if self.probe is not None:
            self.probe.first_call()
            self.probe = None
        return super()._result(messages)


def bare_loop(model: Any, question: str, chunks: list[str], memory_tokens: int, answer_tokens: int) -> dict[str, Any]:
    """MemAgent by hand: what the graph does, without the graph."""
    from langgraph_memagent.agents.prompts import MEMORY_START, final_prompt, memory_update_prompt

    memory_model = model.bind(max_tokens=memory_tokens)
    answer_model = model.bind(max_tokens=answer_tokens)
    memory, input_tokens, output_tokens = MEMORY_START, 0, 0
    for chunk in chunks:
        reply = memory_model.invoke([HumanMessage(memory_update_prompt(question, memory, chunk))])
        memory = reply.text.strip()
        input_tokens += reply.usage_metadata["input_tokens"]
        output_tokens += reply.usage_metadata["output_tokens"]
    reply = answer_model.invoke([HumanMessage(final_prompt(question, memory))])
    usage = {
        "llm_calls": len(chunks) + 1,
        "input_tokens": input_tokens + reply.usage_metadata["input_tokens"],
        "output_tokens": output_tokens + reply.usage_metadata["output_tokens"],
    }
    return {"response": reply.text, "chunks_read": len(chunks), "usage": usage}


def sqlite_bytes_per_checkpoint(path: str, thread_id: str) -> list[tuple[int, int]]:
    """(step, payload bytes) per checkpoint of a thread: checkpoint + metadata + its writes."""
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            """
            select json_extract(c.metadata, '$.step'),
                   length(c.checkpoint) + length(c.metadata)
                   + coalesce((select sum(length(w.value)) from writes w
                               where w.thread_id = c.thread_id and w.checkpoint_id = c.checkpoint_id), 0)
            from checkpoints c where c.thread_id = ? order by c.checkpoint_id
            """,
            (thread_id,),
        ).fetchall()


def inmemory_bytes_per_checkpoint(saver: Any, thread_id: str) -> list[tuple[int, int]]:
    """(step, payload bytes) per checkpoint: checkpoint + metadata + its writes + blobs it added."""
    rows, seen = [], set()
    for checkpoint_id, (checkpoint, metadata, _parent) in sorted(saver.storage[thread_id][""].items()):
        size = len(checkpoint[1]) + len(metadata[1])
        size += sum(len(value[1]) for _task, _channel, value, _path in saver.writes[(thread_id, "", checkpoint_id)].values())
        # A channel value is stored once per version; charge it to the first checkpoint naming it.
        for channel, version in saver.serde.loads_typed(checkpoint)["channel_versions"].items():
            key = (thread_id, "", channel, version)
            if key not in seen and key in saver.blobs:
                seen.add(key)
                size += len(saver.blobs[key][1])
        rows.append((saver.serde.loads_typed(metadata)["step"], size))
    return rows


def checkpoint_summary(rows: list[tuple[int, int]]) -> dict[str, float]:
    steady = [size for step, size in rows if step >= 1]
    return {
        "steps": len(steady),
        "bytes_per_step": sum(steady) / len(steady),
        "max_step_bytes": max(steady),
        "input_and_step0_bytes": sum(size for step, size in rows if step < 1),
    }


def run_worker(variant: str, tokens: int, repeats: int, chunk_tokens: int) -> dict[str, Any]:
    """Time ``repeats`` runs of one variant at one length (run 1 also measures memory)."""
    from langgraph_memagent import build_memagent_graph
    from langgraph_memagent.agents.tokenizers import chunk_text

    codec = PhaseCodec(embedded_codec())
    document, exact_tokens = noise_document(codec.codec, tokens)
    model = ProbedModel()
    memory_tokens = answer_tokens = 64
    saver, temp_dir = None, tempfile.TemporaryDirectory()
    db_path = os.path.join(temp_dir.name, "checkpoints.sqlite")
    if variant == "graph_inmemory":
        from langgraph.checkpoint.memory import InMemorySaver

        saver = InMemorySaver()
    elif variant == "graph_sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        saver = SqliteSaver(sqlite3.connect(db_path, check_same_thread=False))
    graph = build_memagent_graph(
        model, chunk_tokens=chunk_tokens, memory_tokens=memory_tokens, answer_tokens=answer_tokens, tokenizer=codec, checkpointer=saver
    )

    runs, memory, load = [], None, OtherLoad()
    for repeat in range(repeats):
        probe = model.probe = MemoryProbe() if repeat == 0 else None
        codec.reset()
        start = time.perf_counter()
        if variant == "loop":
            chunks = chunk_text(document, codec, chunk_tokens)
            result = bare_loop(model, QUESTION, chunks, memory_tokens, answer_tokens)
        else:
            config = {"configurable": {"thread_id": f"run-{repeat}"}} if saver is not None else None
            result = graph.invoke({"question": QUESTION, "document": document}, config)
        end = time.perf_counter()
        if probe is not None:
            memory = probe.report()
        assert result["chunks_read"] > 0 and result["response"] == model.reply, result
        runs.append({"total_s": end - start, "chunk_s": codec.finished - codec.started, "loop_s": end - codec.finished})

    checkpoints = None
    if variant == "graph_inmemory":
        checkpoints = checkpoint_summary(inmemory_bytes_per_checkpoint(saver, "run-0"))
    elif variant == "graph_sqlite":
        checkpoints = checkpoint_summary(sqlite_bytes_per_checkpoint(db_path, "run-0"))
        saver.conn.close()
    temp_dir.cleanup()
    return {
        "variant": variant,
        "tokens": exact_tokens,
        "document_bytes": len(document.encode("utf-8")),
        "chunks": result["chunks_read"],
        "runs": runs,
        "chunk_s": median([r["chunk_s"] for r in runs]),
        "loop_s": median([r["loop_s"] for r in runs]),
        "total_s": median([r["total_s"] for r in runs]),
        "memory": memory,
        "checkpoints": checkpoints,
        "other_cpu_cores": load.cores(),
    }


def run_subprocess(variant: str, tokens: int, repeats: int, chunk_tokens: int) -> dict[str, Any]:
    """One worker in a fresh interpreter, so its peak RSS is its own."""
    command = [sys.executable, "-m", f"benchmarks.{NAME}", "--worker", variant, "--lengths", str(tokens)]
    command += ["--repeats", str(repeats), "--chunk-tokens", str(chunk_tokens)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker {variant} at {tokens} tokens failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarize(lengths: list[int], measured: dict[int, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    per_length, graph_variants = [], [v for v in VARIANTS if v != "loop"]
    for tokens in lengths:
        row = measured[tokens]
        chunks = row["loop"]["chunks"]
        per_length.append(
            {
                "target_tokens": tokens,
                "tokens": row["loop"]["tokens"],
                "chunks": chunks,
                "chunk_s": {v: row[v]["chunk_s"] for v in VARIANTS},
                "loop_s": {v: row[v]["loop_s"] for v in VARIANTS},
                "loop_ms_per_chunk": {v: 1000 * row[v]["loop_s"] / chunks for v in VARIANTS},
                "overhead_ms_per_chunk": {v: 1000 * (row[v]["loop_s"] - row["loop"]["loop_s"]) / chunks for v in graph_variants},
                "memory": {v: row[v]["memory"] for v in VARIANTS},
                "checkpoints": {v: row[v]["checkpoints"] for v in ("graph_inmemory", "graph_sqlite")},
            }
        )
    first, last = per_length[0], per_length[-1]
    worst_overhead = max(p["overhead_ms_per_chunk"]["graph"] for p in per_length)
    linearity = last["loop_ms_per_chunk"]["graph"] / first["loop_ms_per_chunk"]["graph"]
    checkpoint_growth = {
        saver: last["checkpoints"][saver]["bytes_per_step"] / first["checkpoints"][saver]["bytes_per_step"]
        for saver in ("graph_inmemory", "graph_sqlite")
    }
    return {
        "per_length": per_length,
        "goals": {
            "graph_overhead_ms_per_chunk_max": worst_overhead,
            "graph_overhead_under_2ms": worst_overhead < GOAL_OVERHEAD_MS,
            "graph_loop_per_chunk_largest_over_smallest": linearity,
            "within_1.15x_of_linear": linearity <= GOAL_LINEARITY,
            "checkpoint_bytes_per_step_largest_over_smallest": checkpoint_growth,
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{NAME}",
        description="MemAgent graph vs a bare loop with an instant model: per-chunk overhead, scaling, peak RSS, checkpoint bytes.",
    )
    parser.add_argument("--lengths", default="128K,1M,3.5M", help="document sizes in tokens, comma-separated; 1K = 1024 (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per length and variant; medians are reported (default: %(default)s)")
    parser.add_argument("--chunk-tokens", type=int, default=5000, help="tokens per chunk (default: %(default)s, the paper's)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of %(default)s; 'loop' and 'graph' are needed for the overhead")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)  # internal: one subprocess measurement
    args = parser.parse_args(argv)
    lengths = [parse_tokens(text) for text in args.lengths.split(",")]

    if args.worker:
        print(json.dumps(run_worker(args.worker, lengths[0], args.repeats, args.chunk_tokens)))
        return {}

    variants = [v for v in VARIANTS if v in args.variants.split(",")]
    load = OtherLoad()
    measured: dict[int, dict[str, dict[str, Any]]] = {}
    for tokens in lengths:
        measured[tokens] = {}
        for variant in variants:
            measured[tokens][variant] = run_subprocess(variant, tokens, args.repeats, args.chunk_tokens)
            m = measured[tokens][variant]
            print(
                f"  {format_tokens(tokens):>5} {variant:<15} chunks={m['chunks']} chunk={m['chunk_s']:.2f}s "
                f"loop={m['loop_s']:.3f}s other-load={m['other_cpu_cores']:.2f} cores",
                file=sys.stderr,
            )
    result: dict[str, Any] = {
        "settings": vars(args) | {"lengths": lengths, "variants": variants},
        "other_cpu_cores": load.cores(),
        "raw": measured,
    }
    if {"loop", "graph"} <= set(variants) and set(variants) == set(VARIANTS):
        result.update(summarize(lengths, measured))
        goals = result["goals"]
        summary = (
            f"{NAME}: graph overhead {goals['graph_overhead_ms_per_chunk_max']:.2f} ms/chunk (goal < {GOAL_OVERHEAD_MS}: "
            f"{'met' if goals['graph_overhead_under_2ms'] else 'MISSED'}), loop time per chunk "
            f"{format_tokens(lengths[-1])} vs {format_tokens(lengths[0])} = {goals['graph_loop_per_chunk_largest_over_smallest']:.2f}x "
            f"(goal <= {GOAL_LINEARITY}: {'met' if goals['within_1.15x_of_linear'] else 'MISSED'})"
        )
    else:
        summary = f"{NAME}: measured {variants} at {[format_tokens(t) for t in lengths]} (subset: no goal check)"
    summary += f"; other load {result['other_cpu_cores']:.2f} cores"
    write_result(NAME, result)
    print(summary)
    return result


if __name__ == "__main__":
    main()
