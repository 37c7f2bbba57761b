#!/usr/bin/env bash
# AgeMem's answering step from a given memory (runs 47-55)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: AgeMem's answering step, runs 47-55) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- The answering step alone, from a memory that holds the evidence (runs 47 and 48): the answers still do not score ---
# untrained (and run 45's write adapter) answering from a given memory, dev
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --adapters /work/keep44/adapter45 \
    --name bench_agemem_episodes_dev_given_memory -- --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0
# run 47: that rollout trained with AgeMem's composite, then measured with the same command and name
# (the policies already measured are kept) and --adapters /work/keep44/adapter45 runs/agemem-answer47/checkpoint-12
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-answer47 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 47 --data_seed 47
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --adapters /work/keep44/adapter45 runs/agemem-answer47/checkpoint-12 \
    --name bench_agemem_episodes_dev_given_memory -- --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0
# run 48: the same with a forced retrieval first
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-answer48 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 --agemem_answer_mode retrieve \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 48 --data_seed 48
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --adapters runs/agemem-answer48/checkpoint-12 \
    --name bench_agemem_episodes_dev_retrieve -- --agemem_write_mode line --agemem_sessions given-memory \
    --agemem_distractor_messages 0 --agemem_answer_mode retrieve

# --- The answer as a submitted short answer (runs 50 and 51): the answers stay echoes, the rule is not met ---
# run 50: run 48's recipe, the answer as a forced submit_answer call
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-answer50 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 --agemem_answer_mode retrieve-submit \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 50 --data_seed 50
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --adapters runs/agemem-answer50/checkpoint-12 \
    --name bench_agemem_episodes_dev_submit -- --agemem_write_mode line --agemem_sessions given-memory \
    --agemem_distractor_messages 0 --agemem_answer_mode retrieve-submit
# run 51: run 50 at T = 0.7, scored by the answer's F1 alone; measured with --name bench_agemem_episodes_dev_submit_t07
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-answer51 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 --agemem_answer_mode retrieve-submit \
    --temperature 0.7 --agemem_task_weight 1 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 51 --data_seed 51
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --adapters runs/agemem-answer51/checkpoint-12 \
    --name bench_agemem_episodes_dev_submit_t07 -- --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 --agemem_answer_mode retrieve-submit

# --- The retrieval reply cut to one line (runs 52 and 53): greedy answer F1 +11.1 ± 4.0 and +3.4 ± 2.2 on dev; neither run met its rule ---
# the untrained policy alone, measured before any training (--adapters may now be left out; later runs with the
# same --name and settings keep it), then each adapter with the same command and name
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --name bench_agemem_episodes_dev_best \
    -- --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
       --agemem_answer_mode retrieve-submit --agemem_retrieve_reply best
# run 52 (run 53: --seed 53 --data_seed 53)
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-answer52 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
    --agemem_answer_mode retrieve-submit --agemem_retrieve_reply best \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 52 --data_seed 52
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-answer53 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
    --agemem_answer_mode retrieve-submit --agemem_retrieve_reply best \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 53 --data_seed 53
# the evidence recall of the retrievals, measured afterwards for all three policies under a new name
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --name bench_agemem_episodes_dev_best_retrieval \
    --adapters runs/agemem-answer52/checkpoint-12 runs/agemem-answer53/checkpoint-12 -- --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
    --agemem_answer_mode retrieve-submit --agemem_retrieve_reply best

# --- The answer as a span of the retrieved line (runs 54 and 55): the untrained F1 rises five-fold, training does not raise it ---
# the untrained policy alone, then each adapter with the same command and name
.venv/bin/python -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --name bench_agemem_episodes_dev_extract \
    -- --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
       --agemem_answer_mode retrieve-extract --agemem_retrieve_reply best
# run 54 (run 55: --seed 55 --data_seed 55 --output_dir runs/agemem-extract55)
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-extract54 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
    --agemem_answer_mode retrieve-extract --agemem_retrieve_reply best --agemem_task_weight 1 \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 54 --data_seed 54
.venv/bin/python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem-extract55 \
    --agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0 \
    --agemem_answer_mode retrieve-extract --agemem_retrieve_reply best --agemem_task_weight 1 \
    --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
    --dynamic_sampling_rounds 2 --save_steps 2 --seed 55 --data_seed 55
