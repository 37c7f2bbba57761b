#!/usr/bin/env bash
# MemAgent core speed goals: orchestration overhead, batching, chunking, decode slab
# The commands of this experiment, as README.md (from BENCHMARKS.md: Status table at the top; 1. Orchestration overhead; 2. Batched throughput; 3. Chunking 3.5M tokens; 4. Decode step: growing cache vs slab) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 1. Orchestration overhead (`bench_orchestration`) ---
.venv/bin/python -m benchmarks.bench_orchestration          # --lengths 128K,1M,3.5M --repeats 5 --chunk-tokens 5000

# --- 2. Batched throughput (`bench_batching`) ---
.venv/bin/python -m benchmarks.bench_batching               # --docs 8 --doc-tokens 2000 --chunk-tokens 500 --memory-tokens 64 --answer-tokens 32

# --- 3. Chunking 3.5M tokens (`bench_chunking`) ---
.venv/bin/python -m benchmarks.bench_chunking                # --tokens 3.5M --chunk-tokens 5000 --repeats 3 --naive-repeats 1

# --- 4. Decode step: growing cache vs slab (`bench_decode`) ---
.venv/bin/python -m benchmarks.bench_decode          # --prompt-tokens 600 --steps 40 --rounds 3

# --- commands named in the running text ---
.venv/bin/python -m benchmarks.run_all --only bench_chunking
