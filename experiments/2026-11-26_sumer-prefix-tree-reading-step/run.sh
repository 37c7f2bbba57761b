#!/usr/bin/env bash
# SUMER: the prefix-tree loss, runs 4-6, the reading step alone
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: the prefix-tree loss, runs 4-6, the reading step) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- Rows scored over their prefix tree (`--pack_prefixes`, 2026-11-26) ---
.venv/bin/python experiments/2026-11-26_sumer-prefix-tree-reading-step/bench_prefix_packing.py --packed-budget 16384 --rounds 1   # 04:58-05:08 UTC, Zen 4 host

# --- Fourth run (development split): run 3's recipe with the prefix-tree loss; the policy learnt to submit at once ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 2 --locomo-questions 8 --output-dir runs/sumer-dev4 -- --max_steps 12 \
    --evidence_reward_weight 2.0 --max_context_tokens 6144 --pack_prefixes true --max_tokens_per_forward 8192
# killed for memory at step 9; resumed from checkpoint-8 with the same command and --max_tokens_per_forward 6144

# --- Fifth run (development split): forced answers as submit calls, no submit bonus, T = 0.7; no after-evaluation yet ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 1 --locomo-questions 8 --output-dir runs/sumer-dev5 -- --max_steps 12 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false

# --- The reading step alone: why no search can score yet (`bench_sumer_reading`, 2026-11-26) ---
.venv/bin/python -m benchmarks.bench_sumer_reading --questions 32

# --- Sixth run (development split): the reading step trained alone, then whole episodes measured ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 1 --locomo-questions 8 --output-dir runs/sumer-read1 -- --max_steps 40 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory evidence --evidence_reward_weight 0 --per_device_train_batch_size 16
.venv/bin/python -m benchmarks.bench_sumer_reading --adapter runs/sumer-read1 --name bench_sumer_reading_read1 \
    --before benchmarks/results/bench_sumer_reading.json
