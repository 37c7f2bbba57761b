#!/usr/bin/env bash
# Issue 85: MemAgent RL at length. The commands in the order they are run; each step is added here
# when it is fixed (the recipe on dev first, the test split once, after it).
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-04_memagent-rl-at-length

# 1. The training mix: 5 RULER tasks x 64 records at 2K, 4K and 8K tokens, training keys, per training seed.
for seed in 1 2 3; do
    .venv/bin/python $HERE/make_data.py --out runs/length-rl/train_seed$seed.jsonl --per-task 64 --lengths 2000 4000 8000 --seed $seed
done

# 2. Stage 1 on this host (2026-12-05, one seed): the 300-token mix, G = 16, one question a step; stopped by
#    wall time and resumed from its last checkpoint (add --resume_from_checkpoint runs/length-rl/stage1_seed1/checkpoint-N).
.venv/bin/python $HERE/make_data.py --out runs/length-rl/train300_seed1.jsonl --per-task 64 --lengths 300 --seed 1
timeout 4500 .venv/bin/python training/grpo_multiconv.py --preset cpu-smoke --train_file runs/length-rl/train300_seed1.jsonl \
    --chunk_tokens 1000 --memory_tokens 128 --answer_tokens 64 --num_generations 16 --per_device_train_batch_size 16 \
    --steps_per_generation 1 --gradient_accumulation_steps 1 --max_steps 1000 --save_steps 2 \
    --activation_checkpointing false --max_tokens_per_forward 4096 --bf16 false --seed 1 --data_seed 1 \
    --output_dir runs/length-rl/stage1_seed1 || true
# Its greedy dev accuracy against the untrained model's (300 tokens and 1K, 16 questions a task).
cd $HERE
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 300 1000 --questions 16 --max-batch 16 \
    --out results/dev_untrained_300_1k.json
last=$(ls -d ../../runs/length-rl/stage1_seed1/checkpoint-* | sort -V | tail -1)
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 300 1000 --questions 16 --max-batch 16 \
    --adapter "$last" --out results/dev_stage1_seed1_300_1k.json
# The same at 4K, 8 questions a task.
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 --out results/dev_untrained_4k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter "$last" --out results/dev_stage1_seed1_4k.json
