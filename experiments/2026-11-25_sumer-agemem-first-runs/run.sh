#!/usr/bin/env bash
# Teaching tool use (issue 24): the set-up and SUMER runs 1-3
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: the set-up and SUMER runs 1-3) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 11. Teaching tool use: SUMER and AgeMem on generated conversations (issue 24) ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 2 --locomo-questions 8 --output-dir runs/sumer-dev -- --max_steps 8

# --- Second run (development split, one seed): answer F1 +12.5, all of it from a constant answer ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 2 --locomo-questions 8 --output-dir runs/sumer-dev2 -- --max_steps 12 --evidence_reward_weight 2.0

# --- Third run (development split): stopped at step 4 of 12, the loss passes too slow for the budget ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 2 --locomo-questions 8 --output-dir runs/sumer-dev3 -- --max_steps 12 \
    --evidence_reward_weight 2.0 --max_context_tokens 6144
