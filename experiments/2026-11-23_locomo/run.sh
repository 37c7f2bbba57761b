#!/usr/bin/env bash
# LoCoMo conv-30 with the embedded model: five, then six graphs; forced tool calls
# The commands of this experiment, as README.md (from BENCHMARKS.md: 8. LoCoMo with the embedded model, forced tool calls, the six graphs) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 8. LoCoMo with the embedded model (`bench_locomo`, issue 4) ---
.venv/bin/python -m benchmarks.bench_locomo --limit 16     # 16 seeded questions, 5 graphs (then), greedy

# --- The tool graphs on LoCoMo with constrained calls (issue 23) ---
.venv/bin/python -m benchmarks.bench_locomo --graphs sumer,langmem --limit 16 --out experiments/2026-11-23_locomo/results/locomo_tools

# --- All six graphs in one run (issue 23) ---
.venv/bin/python -m benchmarks.bench_locomo --limit 16 --out experiments/2026-11-23_locomo/results/locomo_six
