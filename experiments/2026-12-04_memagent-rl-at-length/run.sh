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
