#!/usr/bin/env bash
# SUMER: varied wording, the 48-step reading stage (runs 20-25), LoCoMo
# The commands of this experiment, as README.md (from BENCHMARKS.md: 11. Teaching tool use: varied wording, runs 20-25 (48-step reading stage), LoCoMo) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- A varied wording of the generated conversations: the four test2 adapters keep about three quarters of their dev gain ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/wording48.sh:
for split in dev-varied dev; do
.venv/bin/python -m benchmarks.bench_sumer_episodes --split $split --questions 48 --name bench_sumer_episodes_${split}48_test2_adapters \
    --adapters runs/sumer13-test/seed-7/checkpoint-6 runs/sumer14-test/seed-5/checkpoint-6 \
    runs/sumer18-test2/seed-11/checkpoint-6 runs/sumer19-test2/seed-13/checkpoint-6 \
    -- --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --search_reply plain --rollout_concurrency 32
done
.venv/bin/python experiments/2026-11-28_sumer-varied-wording-48-step-reading/wording_effect.py benchmarks/results/bench_sumer_episodes_dev48_test2_adapters.json \
    benchmarks/results/bench_sumer_episodes_dev-varied48_test2_adapters.json --json experiments/2026-11-28_sumer-varied-wording-48-step-reading/results/wording_effect_dev48_test2_adapters.json

# --- Twentieth run (dev only): the twelfth recipe trained on the varied wording; not better on dev-varied ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/chain20.sh: runs/chain19.sh's two stages with --conversation_wording varied (seed 13, as run 19), then
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev-varied --questions 48 --name bench_sumer_episodes_dev-varied48_run20_varied \
    --adapters runs/sumer19-test2/seed-13/checkpoint-6 runs/sumer20-varied/seed-13/checkpoint-6 -- --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --search_reply plain --rollout_concurrency 32

# --- The reading stage is cut off mid-learning: 16 more steps double the dev reading F1 (run 21's seed) ---
R=benchmarks/results
.venv/bin/python -m benchmarks.bench_sumer_reading --split dev --questions 64 --search_reply plain \
    --settings "evidence+question k=3,question k=5 context=0" --name bench_sumer_reading_dev64_plain_untrained
# each reading-stage checkpoint N in 16 20 24 28 32 of runs/sumer21-read:
for N in 16 20 24 28 32; do
    .venv/bin/python -m benchmarks.bench_sumer_reading --split dev --questions 64 --search_reply plain \
        --settings "evidence+question k=3" --adapter runs/sumer21-read/checkpoint-$N --name bench_sumer_reading_dev64_plain_run21_ckpt$N
done
# the stage-2 adapter, paired against checkpoint-32:
.venv/bin/python -m benchmarks.bench_sumer_reading --split dev --questions 64 --search_reply plain \
    --settings "evidence+question k=3" --adapter runs/sumer21-test2/seed-17/checkpoint-6 \
    --before $R/bench_sumer_reading_dev64_plain_run21_ckpt32.json --name bench_sumer_reading_dev64_plain_run21_stage2
# the reading stage resumed from checkpoint-32 to step 48 (its learning rate is constant after warm-up, so this
# continues the run exactly as a 48-step run would, save the data loader's shuffling state):
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer21-read48 --max_steps 48 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --seed 17 --data_seed 17 \
    --resume_from_checkpoint runs/sumer21-read48/checkpoint-32        # checkpoint-32 copied there first
# then checkpoints 40 and 48 as above:
for N in 40 48; do
    .venv/bin/python -m benchmarks.bench_sumer_reading --split dev --questions 64 --search_reply plain \
        --settings "evidence+question k=3" --adapter runs/sumer21-read48/checkpoint-$N --name bench_sumer_reading_dev64_plain_run21_continued$N
done

# --- Run 22: run 21's seed with the 48-step reading stage, once on test2: +3.9 ± 2.7 greedy F1, +9.4 ± 2.5 without yes/no; the bar is not met ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/select21/go22.sh: between checkpoints 40 and 48 of runs/sumer21-read48 the better on the dev reading measure above
# (48: 50.2 against 44.0), then runs/chain22.sh 48, which is run 21's stage 2 unchanged (seed 17):
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test2 --seeds 17 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer22-test2 -- --max_steps 10 --stop_after_steps 6 --max_turns 1 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --init_adapter runs/sumer21-read48/checkpoint-48      # run 21's before.json copied to runs/sumer22-test2/seed-17/ first
R=benchmarks/results; .venv/bin/python -m benchmarks.learning_report $R/bench_learning_sumer_test2_run22_read17x48.json \
    --json $R/learning_report_sumer_test2_run22_read17x48.json

# --- What the trained policy searches for: a tool name, a guess, a query cut at 27 characters; longer queries do not help (dev, 2026-11-29) ---
# every search call is now kept per rollout (search_calls: mode, query, speaker, session, k, hits)
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 64 --name bench_sumer_episodes_dev64_queries_run21_22 \
    --adapters runs/sumer21-test2/seed-17 runs/sumer22-test2/seed-17 -- --max_turns 1 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false --search_context 0 --search_reply plain --rollout_concurrency 32
# the same with --turn_tokens 192 (a query may then be 59 characters):
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 64 --name bench_sumer_episodes_dev64_turn192_run21_22 \
    --adapters runs/sumer21-test2/seed-17 runs/sumer22-test2/seed-17 -- --max_turns 1 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false --search_context 0 --search_reply plain --rollout_concurrency 32 \
    --turn_tokens 192

# --- Asking for the question's own words as the query: fewer searches, lower recall (dev, 2026-11-29, negative) ---
.venv/bin/python -m benchmarks.bench_sumer_episodes --split dev --questions 64 --name bench_sumer_episodes_dev64_queryhint_run21_22 \
    --adapters runs/sumer21-test2/seed-17 runs/sumer22-test2/seed-17 -- --max_turns 1 --max_context_tokens 6144 \
    --forced_answer_call submit --sumer_require_submit false --search_context 0 --search_reply plain --rollout_concurrency 32 \
    --query_style question

# --- Run 23: run 22's recipe from a fresh seed on the faster engine: 50.9 minutes of training, +7.0 ± 2.6 greedy F1 on test2; the bar is not met ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/chain23.sh: seed 29 for both stages, fixed before the run; the reading stage 48 steps, then run 21's stage 2; test2 once:
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer23-read --max_steps 48 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --seed 29 --data_seed 29
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test2 --seeds 29 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer23-test2 -- --max_steps 10 --stop_after_steps 6 --max_turns 1 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --init_adapter runs/sumer23-read          # run 21's test2 before.json copied to runs/sumer23-test2/seed-29/ first
R=benchmarks/results; .venv/bin/python -m benchmarks.learning_report $R/bench_learning_sumer_test2_run22_read17x48.json \
    $R/bench_learning_sumer_test2_run23_read29x48.json --json $R/learning_report_sumer_test2_run22_23.json

# --- The old policy's log-probs from the engine (`--old_logps rollout`): the reading stage 1.21x faster, the log-probs within 6e-5 ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/oldlogps.sh: run 23's reading stage (seed 29), 4 optimizer steps (2 rollout batches), alone, alternating, 2 rounds:
for N in 1 2; do for MODE in recompute rollout; do
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/oldlogps-$MODE-$N --max_steps 48 --stop_after_steps 4 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --seed 29 --data_seed 29 --old_logps $MODE --reward_curve false
done; done

# --- The reader never says "no": yes/no answers through the reading stage (dev), and `--category_shares` ---
# (a block of the text: its commands run, its prose stays as comments)
# # from the committed reading results above (bench_sumer_reading_dev64_plain_*), the 8 yes/no questions of the 64:
.venv/bin/python - <<'PY'
import json, re
for name in ["untrained"] + [f"run21_ckpt{c}" for c in (16, 20, 24, 28, 32)] + ["run21_continued40", "run21_continued48"]:
    rows = json.load(open(f"benchmarks/results/bench_sumer_reading_dev64_plain_{name}.json"))["memories"]["evidence+question k=3"]["per_question"]
    yes_no = [r for r in rows if [g.lower() for g in r["gold"]] in (["yes"], ["no"])]
    says = lambda word: sum(bool(re.search(rf"\b{word}\b", r["answer"].lower())) for r in yes_no)
    others = [r["f1"] for r in rows if r not in yes_no]
    print(name, len(yes_no), round(sum(r["f1"] for r in yes_no) / len(yes_no), 1), says("yes"), says("no"), round(sum(others) / len(others), 1))
PY

# --- Run 24: a third seed of the 48-step recipe, with the engine's log-probs: +12.7 ± 3.1 greedy F1 on test2 in 50.3 minutes; +7.9 ± 4.4 over the recipe's three seeds ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/chain24.sh: seed 31 for both stages, fixed before the run; run 23's commands with --old_logps rollout added to both stages,
# run from a frozen checkout of 0d173ef (a git worktree, PYTHONPATH pointing the package at it) so this session's edits could not leak in:
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer24-read --max_steps 48 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --old_logps rollout --seed 31 --data_seed 31
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test2 --seeds 31 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer24-test2 -- --max_steps 10 --stop_after_steps 6 --max_turns 1 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --old_logps rollout --init_adapter runs/sumer24-read     # run 21's test2 before.json copied to runs/sumer24-test2/seed-31/ first
R=benchmarks/results; .venv/bin/python -m benchmarks.learning_report $R/bench_learning_sumer_test2_run22_read17x48.json \
    $R/bench_learning_sumer_test2_run23_read29x48.json $R/bench_learning_sumer_test2_run24_read31x48.json \
    --json $R/learning_report_sumer_test2_run22_23_24.json

# --- Run 25: a fourth seed of the 48-step recipe: +10.6 ± 2.9 greedy F1 on test2 in 48.0 minutes; over four seeds +8.6 ± 3.9, the bar is not met ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/chain25.sh, second part: run 24's two commands unchanged but for seed 37 (fixed before the run) and the output
# directories runs/sumer25-read and runs/sumer25-test2, from a frozen checkout of 5ac185c:
.venv/bin/python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer25-read --max_steps 48 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
    --search_reply plain --old_logps rollout --seed 37 --data_seed 37
.venv/bin/python -m benchmarks.bench_learning --preset cpu-sumer --split test2 --seeds 37 --eval-questions 128 \
    --eval-samples 1 --locomo-questions 0 --output-dir runs/sumer25-test2 -- --max_steps 10 --stop_after_steps 6 --max_turns 1 \
    --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false --search_context 0 \
    --dynamic_sampling_rounds 1 --per_device_train_batch_size 16 --search_reply plain --rollout_concurrency 32 \
    --old_logps rollout --init_adapter runs/sumer25-read     # run 21's test2 before.json copied to runs/sumer25-test2/seed-37/ first
# then:
R=benchmarks/results; .venv/bin/python -m benchmarks.learning_report $R/bench_learning_sumer_test2_run22_read17x48.json \
    $R/bench_learning_sumer_test2_run23_read29x48.json $R/bench_learning_sumer_test2_run24_read31x48.json \
    $R/bench_learning_sumer_test2_run25_read37x48.json --json $R/learning_report_sumer_test2_run22_23_24_25.json
.venv/bin/python -m benchmarks.training_phases benchmarks/results/trainer_log_sumer_run2{3,4,5}_read.json --phases 1-32 33-48

# --- The 48-step recipe on LoCoMo conv-30: +5.5 ± 1.3 F1 over runs 22-25, +2.7 ± 1.4 without shortcuts; evidence recall +4.0 ± 2.8 ---
# (a block of the text: its commands run, its prose stays as comments)
# runs/chain25.sh, first part (from a frozen checkout of 5ac185c):
.venv/bin/python -m benchmarks.bench_sumer_episodes --split locomo --questions 81 --name bench_sumer_episodes_locomo81_read48_runs22_23_24 \
    --adapters runs/sumer22-test2/seed-17/checkpoint-6 runs/sumer23-test2/seed-29/checkpoint-6 runs/sumer24-test2/seed-31/checkpoint-6 \
    -- --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --search_reply plain --rollout_concurrency 32
# runs/locomo25.sh: the same with run 25's adapter:
.venv/bin/python -m benchmarks.bench_sumer_episodes --split locomo --questions 81 --name bench_sumer_episodes_locomo81_read48_run25 \
    --adapters runs/sumer25-test2/seed-37/checkpoint-6 \
    -- --max_turns 1 --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
    --search_context 0 --search_reply plain --rollout_concurrency 32

# --- commands named in the running text ---
.venv/bin/python -m benchmarks.training_phases benchmarks/results/trainer_log_sumer_run23_read.json benchmarks/results/trainer_log_sumer_run24_read.json --phases 1-32 33-48
