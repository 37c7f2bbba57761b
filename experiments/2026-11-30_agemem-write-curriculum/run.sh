#!/usr/bin/env bash
# AgeMem runs 44-45: the writing curriculum
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: AgeMem runs 44-45, the writing curriculum) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- Run 44: AgeMem's writing curriculum scored by what it stored (`--write_curriculum true`, item 4) ---
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-write44 \
    --agemem_sessions evidence-shuffled --agemem_write_mode line --agemem_distractor_messages 0 --write_curriculum true \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --dynamic_sampling_rounds 2 \
    --seed 44 --data_seed 44
.venv/bin/python -m benchmarks.bench_agemem_writing --split dev --questions 16 --samples 8 --temperature 1.0 \
    --adapter runs/agemem-write44 --name bench_agemem_writing_write44 --before benchmarks/results/bench_agemem_writing.json

# --- Run 45: four more steps of the write curriculum; dev +4.3 ± 2.0, then test3 once: sampled +11.3 ± 5.0, greedy unchanged ---
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-write45 \
    --agemem_sessions evidence-shuffled --agemem_write_mode line --agemem_distractor_messages 0 --write_curriculum true \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 6 --warmup_steps 0 \
    --dynamic_sampling_rounds 2 --init_adapter runs/agemem-write44 --seed 45 --data_seed 45
    # stopped after checkpoint-4 for the session's time (decided at 13:36 UTC, before any held-out result of this run)
.venv/bin/python -m benchmarks.bench_agemem_writing --split dev --questions 16 --samples 8 --temperature 1.0 \
    --adapter runs/agemem-write45/checkpoint-4 --name bench_agemem_writing_write45 --before benchmarks/results/bench_agemem_writing.json
# the rule met, test3 once: the untrained policy, then the adapter
.venv/bin/python -m benchmarks.bench_agemem_writing --split test3 --questions 16 --samples 8 --temperature 1.0 --name bench_agemem_writing_test3
.venv/bin/python -m benchmarks.bench_agemem_writing --split test3 --questions 16 --samples 8 --temperature 1.0 \
    --adapter runs/agemem-write45/checkpoint-4 --name bench_agemem_writing_write45_test3 --before experiments/2026-11-30_agemem-write-curriculum/results/bench_agemem_writing_test3.json

# --- Run 45's adapter in whole AgeMem episodes: no answer scores, and memory recall does not move greedy; the write-curriculum gain is fragile ---
.venv/bin/python -m benchmarks.bench_agemem_episodes --split test3 --questions 16 --samples 1 \
    --adapters /work/keep44/adapter45 --name bench_agemem_episodes_test3_write45 -- --agemem_write_mode line
.venv/bin/python -m benchmarks.bench_agemem_episodes --split locomo --questions 8 --samples 0 \
    --adapters /work/keep44/adapter45 --name bench_agemem_episodes_locomo8_write45 -- --agemem_write_mode line
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 \
    --adapters /work/keep44/adapter45 --name bench_agemem_episodes_dev_write45 -- --agemem_write_mode line
# the length check, on dev: the untrained policy, then the adapter
.venv/bin/python -m benchmarks.bench_agemem_writing --split dev --questions 16 --samples 8 --temperature 1.0 --name bench_agemem_writing_dev_length
.venv/bin/python -m benchmarks.bench_agemem_writing --split dev --questions 16 --samples 8 --temperature 1.0 \
    --adapter /work/keep44/adapter45 --name bench_agemem_writing_write45_dev_length --before experiments/2026-11-30_agemem-write-curriculum/results/bench_agemem_writing_dev_length.json
# /work/keep44/adapter45 is run 45's runs/agemem-write45/checkpoint-4, copied out of its worktree
