#!/usr/bin/env bash
# Memory bank: ingestion and search latency
# The commands of this experiment, as README.md (from BENCHMARKS.md: 7. Memory bank: ingestion and search) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 7. Memory bank: ingestion and search (`bench_memory`, issue 4) ---
.venv/bin/python -m benchmarks.bench_memory          # LoCoMo conv-30 (369 turns) + 100K items

# --- commands named in the running text ---
.venv/bin/python experiments/2026-11-23_memory-bank/bench_query_threads.py
.venv/bin/python -m benchmarks.bench_memory
