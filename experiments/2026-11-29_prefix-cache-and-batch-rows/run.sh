#!/usr/bin/env bash
# The prefix cache and rows that join or leave the batch (AVX2-only host)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 10. Engine speed: the prefix cache, rows joining or leaving, the rerun (2026-11-29)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- Prompts that share a beginning: the prefix cache (2026-11-29, AVX2-only host) ---
.venv/bin/python -m benchmarks.bench_prefix_cache --groups 4 --questions 24 --rounds 2

# --- Rows that join or leave copy themselves, not the batch (2026-11-29, AVX2-only host) ---
.venv/bin/python experiments/2026-11-29_prefix-cache-and-batch-rows/bench_revisions.py --before 80796bb    # the code before, in a worktree, against the working tree

# --- Rerun after the batch changes, with llama.cpp and the compiled step (2026-11-29, later session, AVX2-only host) ---
.venv/bin/python -m benchmarks.bench_decode --rounds 2 --steps 30     # 18:05-18:25 UTC, alone, other load 0.02 cores
.venv/bin/python -m benchmarks.bench_batching                         # 18:25-18:29 UTC, alone, other load 0.01 cores
