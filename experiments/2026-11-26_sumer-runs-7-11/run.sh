#!/usr/bin/env bash
# SUMER runs 7-11: reading adapter, distractors, one search turn, reply and loss variants
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: SUMER runs 7-11, loss weighting, rollouts on the trainer's thread) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- Seventh run: the reading adapter trained on for 12 steps of whole episodes with short tool replies; dev +16.1, test +0.9 ---
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 \
    --eval-samples 1 --locomo-questions 8 --output-dir runs/sumer-stage2 -- --max_steps 12 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --init_adapter runs/sumer-read1
# the test split, evaluated once with the same adapter (checkpoint-12 copied, so nothing retrains):
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test --eval-questions 16 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer-stage2-test -- --max_steps 12 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --init_adapter runs/sumer-read1

.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 16 --adapters runs/sumer-read1 \
    runs/sumer-stage2 --name bench_sumer_episodes_dev -- --search_context 0 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false
.venv/bin/python -m benchmarks.bench_sumer_episodes --split test --questions 16 --adapters runs/sumer-stage2 \
    --name bench_sumer_episodes_test -- --search_context 0 --max_context_tokens 6144 --forced_answer_call submit --sumer_require_submit false

# --- Eighth run (development split): the reading stage with distractors, then whole episodes with dynamic sampling; dev +10.3 on 16 questions, +5.1 on 32; no test evaluation ---
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer8-read --max_steps 32 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 16 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer8-stage2 -- --max_steps 8 --max_context_tokens 6144 --temperature 0.7 \
    --forced_answer_call submit --sumer_require_submit false --search_context 0 --init_adapter runs/sumer8-read \
    --dynamic_sampling_rounds 1
.venv/bin/python -m benchmarks.bench_sumer_reading --adapter runs/sumer8-read --name bench_sumer_reading_run8 \
    --before benchmarks/results/bench_sumer_reading.json \
    --settings 'evidence,question k=1 context=0,question k=3 context=0,question k=5 context=0,question k=5 context=2'
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 32 --adapters runs/sumer8-read \
    runs/sumer8-stage2 --name bench_sumer_episodes_dev_run8 -- --search_context 0 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false

# --- Ninth run: one search turn, then the answer; three seeds, dev +10.3 ± 4.3, test +3.8 ± 2.0 ---
# stage 1 is the eighth run's reading adapter (runs/sumer8-read, 32.0 minutes), reused as it is
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer9-turn1 -- --max_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16
# the test split, evaluated once with the same adapter (checkpoint-6 copied, so nothing retrains):
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test --eval-questions 32 --eval-samples 1 \
    --locomo-questions 0 --output-dir runs/sumer9-turn1-test -- --max_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16
# the ablation, the reading adapter alone under the same graph settings (run as --name probe_turns1, file renamed):
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 32 --adapters runs/sumer8-read \
    --name bench_sumer_episodes_dev_run9_stage1 -- --max_turns 1 --search_context 0 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false

.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test --seeds 1 --eval-questions 32 --eval-samples 1 \
    --locomo-questions 0 --output-dir runs/sumer9-seed1-test -- --max_steps 10 --stop_after_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16
# (at the time: --max_steps 10 stopped by hand after checkpoint-6, then rerun with --max_steps 6 for the evaluation;
#  --stop_after_steps 6 is the trainer's later option for the same cut)
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --seeds 1 --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer9-seed1-dev -- --max_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16
# (checkpoint-6 of runs/sumer9-seed1-test copied into runs/sumer9-seed1-dev first, so nothing retrains)

# --- Tenth run: the search reply without the query (`--search_reply plain`); dev only, not better ---
# an evaluation-only probe first: the ninth run's adapters and the reading adapter under a reply without the query
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 32 \
    --adapters runs/sumer9-turn1/checkpoint-6 runs/sumer9-seed1-test/seed-1/checkpoint-6 runs/sumer8-read \
    --name bench_sumer_episodes_dev_run9_plain_reply -- --max_turns 1 --search_context 0 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false --search_reply plain
# the tenth run: the ninth run's recipe and reading adapter, trained and evaluated under the plain reply
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer10-plain -- --max_steps 10 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain
#   stopped after checkpoint-6, then rerun with --max_steps 6 for the evaluation, as in the ninth run
# its second seed (the first seed's before.json copied into runs/sumer10-seed1-dev first):
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --seeds 1 --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer10-seed1-dev -- --max_steps 10 --stop_after_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain

# --- Eleventh run: each rollout weighted once (`--loss_aggregation rollout`); dev only, below the token mean ---
# the ninth run's recipe and reading adapter, with each rollout's rows summing to one rollout's share of the loss
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer11-rollout -- --max_steps 10 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --loss_aggregation rollout
#   stopped by hand after checkpoint-6 (a watcher script's test failed, so step 7 also ran and was discarded),
#   then rerun with --max_steps 6 for the evaluation, as in the ninth run
# its second seed, cut by the trainer's new --stop_after_steps 6 (the same cut, in one command):
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --seeds 1 --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer11-seed1-dev -- --max_steps 10 --stop_after_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --loss_aggregation rollout
# a third seed of the ninth run (token mean) for the comparison, the same way:
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --seeds 2 --eval-questions 32 --eval-samples 1 \
    --locomo-questions 8 --output-dir runs/sumer9-seed2-dev -- --max_steps 10 --stop_after_steps 6 --max_turns 1 --max_context_tokens 6144 \
    --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --init_adapter runs/sumer8-read --dynamic_sampling_rounds 1 --per_device_train_batch_size 16

# --- Loss weighting across rollouts of different lengths, on one SUMER rollout batch (item 5) ---
.venv/bin/python experiments/2026-11-26_sumer-runs-7-11/bench_loss_aggregation.py     # finished 15:47 UTC, Zen 4 host, run alone (other load 0.01 cores)

# --- Rollouts decoded on the trainer's own thread (2026-11-26) ---
.venv/bin/python experiments/2026-11-26_sumer-runs-7-11/bench_rollout_serving.py      # 02:12-02:18 UTC, Zen 4 host, other load 0.00 cores

