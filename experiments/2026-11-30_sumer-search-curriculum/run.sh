#!/usr/bin/env bash
# SUMER runs 41-43: a yes/no rule and the search curriculum
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: runs 41-43, the search curriculum) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- Run 41 (dev only): a yes/no rule in the answer prompt and more yes/no questions; the policy still answers a constant "yes" ---
# the untrained policy, sampled, on every yes/no question among the first 256 dev questions (38), the evidence shown:
.venv/bin/python -m benchmarks.bench_sumer_reading --questions 256 --yes-no-only --settings evidence --temperature 1 --samples 8 \
    --search_reply plain --name bench_sumer_reading_dev256_yesno_T1_untrained
.venv/bin/python -m benchmarks.bench_sumer_reading --questions 256 --yes-no-only --settings evidence --temperature 1 --samples 8 \
    --search_reply plain --answer_rule yes-no --name bench_sumer_reading_dev256_yesno_T1_rule_untrained
# runs/chain41.sh (from a frozen checkout of a032208; seed 41, fixed before the run): run 25's two commands with
#   --answer_rule yes-no added to both, --category_shares open-domain=0.25 to the reading stage, and stage 2 on dev:
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer41-read --max_steps 48 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --old_logps rollout --seed 41 --data_seed 41 --answer_rule yes-no --category_shares open-domain=0.25
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --seeds 41 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer41-dev --tag run41_yesno -- --max_steps 10 --stop_after_steps 6 \
    --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --old_logps rollout --answer_rule yes-no --init_adapter runs/sumer41-read
.venv/bin/python -m benchmarks.learning_report experiments/2026-11-30_sumer-search-curriculum/results/bench_learning_sumer_dev_run41_yesno.json \
    --json experiments/2026-11-30_sumer-search-curriculum/results/learning_report_sumer_dev_run41_yesno.json
# the two adapters, greedy, on the same 38 questions (read48 = the reading stage's checkpoint-48, stage2 = stage 2's checkpoint-6):
# (adapter paths: the reading stage's checkpoint-48 in runs/sumer41-read, stage 2's checkpoint-6 in runs/sumer41-dev/seed-41)
for pair in read:runs/sumer41-read/checkpoint-48 stage2:runs/sumer41-dev/seed-41/checkpoint-6; do
    .venv/bin/python -m benchmarks.bench_sumer_reading --questions 256 --yes-no-only --settings "evidence,evidence+question k=3" \
        --search_reply plain --answer_rule yes-no --adapter "${pair#*:}" --name "bench_sumer_reading_dev256_yesno_greedy_rule_run41_${pair%%:*}"
done

# --- Run 42 (dev): a search curriculum between the reading stage and the episodes; greedy F1 +25.2 ± 4.3, evidence recall +58.6 ± 4.6 ---
# stage 1: run 41's reading adapter (seed 41, its last checkpoint, 48), reused as it is, kept as /work/keep41/read48
# stage 2, new: 16 steps of the search curriculum (a chain script, from a frozen checkout of e3ed43d)
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer42-search --max_steps 16 \
    --init_adapter /work/keep41/read48 --search_curriculum true --max_turns 1 --max_context_tokens 6144 --temperature 0.7 \
    --forced_answer_call submit --sumer_require_submit false --search_context 0 --search_reply plain \
    --per_device_train_batch_size 16 --dynamic_sampling_rounds 1 --rollout_concurrency 32 --old_logps rollout \
    --seed 41 --data_seed 41
# stage 3: run 41's episode stage on dev, from the search adapter (run 41's dev before.json written into
# runs/sumer42-dev/seed-41/ from the "before" of bench_learning_sumer_dev_run41_yesno.json: the same untrained policy,
# questions and settings; bench_learning checks the settings)
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split dev --seeds 41 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer42-dev --tag run42_search -- --max_steps 10 --stop_after_steps 6 \
    --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --old_logps rollout --answer_rule yes-no --init_adapter runs/sumer42-search
.venv/bin/python -m benchmarks.learning_report experiments/2026-11-30_sumer-search-curriculum/results/bench_learning_sumer_dev_run42_search.json \
    --json experiments/2026-11-30_sumer-search-curriculum/results/learning_report_sumer_dev_run42_search.json

# --- Runs 42 and 43 on test3, once each: the search curriculum's recipe ---
# run 42's final adapter and the untrained policy, greedy, on the new split (from the frozen checkout of 4fe0e4f, which adds test3):
.venv/bin/python -m benchmarks.bench_sumer_episodes --split test3 --questions 128 --name bench_sumer_episodes_test3_128_run42 \
    --adapters runs/sumer42-dev/seed-41/checkpoint-6 -- --max_turns 1 --max_context_tokens 6144 --forced_answer_call submit \
    --sumer_require_submit false --search_context 0 --search_reply plain --rollout_concurrency 32 --answer_rule yes-no
# run 43: the whole recipe from seed 43 (fixed before the run), each stage's command as in runs 41 and 42 but for the seed:
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer43-read --max_steps 48 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --old_logps rollout --seed 43 --data_seed 43 --answer_rule yes-no --category_shares open-domain=0.25
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer43-search --max_steps 16 \
    --init_adapter runs/sumer43-read --search_curriculum true --max_turns 1 --max_context_tokens 6144 --temperature 0.7 \
    --forced_answer_call submit --sumer_require_submit false --search_context 0 --search_reply plain \
    --per_device_train_batch_size 16 --dynamic_sampling_rounds 1 --rollout_concurrency 32 --old_logps rollout \
    --seed 43 --data_seed 43
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test3 --seeds 43 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer43-test3 --tag run43_search -- --max_steps 10 --stop_after_steps 6 \
    --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --old_logps rollout --answer_rule yes-no --init_adapter runs/sumer43-search

# --- commands named in the running text ---
.venv/bin/python -m benchmarks.bench_sumer_episodes --split locomo --questions 81 --name bench_sumer_episodes_locomo81_run42_43 --adapters runs/sumer42-dev/seed-41/checkpoint-6 runs/sumer43-test3/seed-43/checkpoint-6  # the trainer flags of the command above follow "--" in the text
