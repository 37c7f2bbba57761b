#!/usr/bin/env bash
# AMX host: drafts through bfloat16 weights, sampling without sorting, a bfloat16 KV cache
# The commands of this experiment, as README.md (from BENCHMARKS.md: 10. Engine speed: AMX host, sampling without sorting, bfloat16 KV cache (2026-12-01)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- On an AMX host: drafts checked through the bfloat16 weights (2026-12-01) ---
.venv/bin/python -m benchmarks.bench_linear_kernels --rows 1,2,4,8,16,32,64 --rounds 3                  # 06:27 UTC
.venv/bin/python -m benchmarks.bench_linear_kernels --rows 1,8,10,11,12,13,16,64,1024 --rounds 5        # 07:11 UTC
# after the change, alone, each once:
.venv/bin/python -m benchmarks.bench_prompt_lookup --lookup 12 --rounds 2                                # 07:28-07:36 UTC
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --concurrency 1 \
    --out experiments/2026-11-30_prompt-lookup/results/prompt_lookup_accuracy/amx_lookup12 --quiet                                 # 07:36-07:40 UTC
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --concurrency 1 \
    --out experiments/2026-11-30_prompt-lookup/results/prompt_lookup_accuracy/amx_no_lookup --quiet --prompt-lookup 0   # 07:40-07:46 UTC

# --- Sampling a token without sorting the vocabulary (2026-12-01, later session, the same AMX host kind) ---
git show a3485d7:agents/sampling.py > /tmp/sampling_a3485d7.py   # the sampler before this change
.venv/bin/python -m benchmarks.bench_sampling --baseline-sampler /tmp/sampling_a3485d7.py         # 10:54-11:00 UTC, alone
# the trainer, before (a worktree of a3485d7) and after, alternating old, new, old, new, each alone (run 43's reading stage, one rollout batch):
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir /tmp/ab_{old,new}_{1,2} --max_steps 2 --save_steps 2 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --old_logps rollout --seed 43 --data_seed 43 --answer_rule yes-no --category_shares open-domain=0.25   # 11:00-11:05 UTC

# --- The batch-8 floor with a bfloat16 KV cache (2026-12-01, later session, the same AMX host kind) ---
.venv/bin/python -m benchmarks.bench_step_floor        # 11:11 UTC, alone; bench_step_floor_amx_2026-12-01.json

# --- commands named in the running text ---
.venv/bin/python -m benchmarks.bench_decode
.venv/bin/python -m benchmarks.bench_batching
