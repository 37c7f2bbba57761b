#!/usr/bin/env bash
# AgeMem's memory tools: the trainer path, the cpu-agemem preset, an untrained baseline, a writing curriculum
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: AgeMem's memory tools, the writing curriculum) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- AgeMem's memory tools (item 4): the trainer's AgeMem path mended, a `cpu-agemem` preset, an untrained baseline and the cost of one rollout batch; no learning result ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-agemem --split dev --eval-questions 16 --eval-samples 1 \
    --locomo-questions 0 --output-dir runs/agemem1 -- --temperature 0.7 --beta 0.001
# (run before the preset dropped the KL term, when beta was the trainer's default, 0.001; stopped after its first optimizer step)

# --- Storing one line: a position shortcut, a shuffled curriculum, and four optimizer steps ---
.venv/bin/python -m benchmarks.bench_agemem_writing --questions 16 --samples 8 --temperature 1.0
.venv/bin/python -m benchmarks.bench_agemem_writing --questions 16 --samples 8 --temperature 1.6 --name bench_agemem_writing_t16
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-line1 \
    --agemem_sessions evidence-shuffled --agemem_write_mode line --agemem_distractor_messages 0 \
    --temperature 1.0 --max_steps 12 --per_device_train_batch_size 16 --steps_per_generation 1
    # stopped after checkpoint-4 for the session's time
.venv/bin/python -m benchmarks.bench_agemem_writing --questions 16 --samples 8 --temperature 1.0 \
    --adapter runs/agemem-line1/checkpoint-4 --name bench_agemem_writing_line1 --before benchmarks/results/bench_agemem_writing.json
