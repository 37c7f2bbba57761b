#!/usr/bin/env bash
# Issue 85: MemAgent RL at length. The commands in the order they are run; each step is added here
# when it is fixed (the recipe on dev first, the test split once, after it).
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-04_memagent-rl-at-length
keep() {  # keep CHECKPOINT NAME: its adapter (bfloat16 copy) as results/adapter_NAME, its trainer state as results/NAME_trainer_state.json
    .venv/bin/python $HERE/keep_adapter.py "$1" $HERE/results/adapter_$2
    cp "$1"/trainer_state.json $HERE/results/$2_trainer_state.json
}
reward_curve() {  # reward_curve NAME: a stopped run draws no curve, so draw it from its kept trainer state
    .venv/bin/python -c "import json, sys; from langgraph_memagent.training import plot_reward_curve as plot
plot(json.load(open(sys.argv[1]))['log_history'], sys.argv[2])" $HERE/results/$1_trainer_state.json $HERE/figures/$1_reward_curve.png
}

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

# 3. The stage-2 pilot (2026-12-05, seed 1), bfloat16 weights on the CPU (float32 LoRA weights).
#    Stage 1 again, 16 steps, then its adapter kept (bfloat16 copy, in git) and checked on dev at 300/1K.
../../.venv/bin/python bf16_pass_probe.py   # the cost that chose the precision
cd ../..
BF16="--bf16 true --use_cpu true"
timeout 2100 .venv/bin/python training/grpo_multiconv.py --preset cpu-smoke --train_file runs/length-rl/train300_seed1.jsonl \
    --chunk_tokens 1000 --memory_tokens 128 --answer_tokens 64 --num_generations 16 --per_device_train_batch_size 16 \
    --steps_per_generation 1 --gradient_accumulation_steps 1 --max_steps 16 --save_steps 2 \
    --activation_checkpointing false --max_tokens_per_forward 4096 $BF16 --seed 1 --data_seed 1 \
    --output_dir runs/length-rl/stage1bf16_seed1
keep runs/length-rl/stage1bf16_seed1/checkpoint-16 stage1bf16_seed1
cp runs/length-rl/stage1bf16_seed1/reward_curve.png $HERE/figures/stage1bf16_seed1_reward_curve.png  # the trainer draws it at the end
(cd $HERE && ../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 300 1000 --questions 16 --max-batch 16 \
    --adapter results/adapter_stage1bf16_seed1 --out results/dev_stage1bf16_seed1_300_1k.json)
(cd $HERE && ../../.venv/bin/python dev_table.py results/dev_untrained_300_1k.json results/dev_stage1bf16_seed1_300_1k.json &&
    ../../.venv/bin/python answer_forms.py results/dev_*_300_1k.json results/dev_*_4k.json)
#    Stage 2: 1K, 2K and 4K documents, from stage 1's adapter, stopped by wall time; then the dev measure at 4K.
#    In float32: the bfloat16 stage 1 missed its check (single-needle NIAH at 1K fell 12.5 points, over the 10 allowed).
.venv/bin/python $HERE/make_data.py --out runs/length-rl/train1k4k_seed1.jsonl --per-task 48 --lengths 1000 2000 4000 --seed 1
#    MULTI_CHUNK: the multi-chunk stages' command without its data, start, precision and output (stages 2 and 3 share it).
MULTI_CHUNK=(.venv/bin/python training/grpo_multiconv.py --preset cpu-smoke
    --chunk_tokens 1000 --memory_tokens 128 --answer_tokens 64 --num_generations 16 --per_device_train_batch_size 16
    --steps_per_generation 1 --gradient_accumulation_steps 1 --max_steps 1000 --save_steps 1
    --activation_checkpointing false --max_tokens_per_forward 4096 --seed 1 --data_seed 1)
STAGE2=("${MULTI_CHUNK[@]}" --train_file runs/length-rl/train1k4k_seed1.jsonl --init_adapter $HERE/results/adapter_stage1bf16_seed1
    --bf16 false --output_dir runs/length-rl/stage2_seed1)
timeout 4000 "${STAGE2[@]}" || true
#    The measured run was stopped by hand after step 3 (55 minutes), rather than cut inside step 4: checkpoint 3.
keep runs/length-rl/stage2_seed1/checkpoint-3 stage2_seed1
(cd $HERE && ../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter results/adapter_stage2_seed1 --out results/dev_stage2_seed1_4k.json)
#    Stage 2's start on the same 4K questions, and the tables.
(cd $HERE && ../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter results/adapter_stage1bf16_seed1 --out results/dev_stage1bf16_seed1_4k.json &&
    ../../.venv/bin/python dev_table.py results/dev_stage1bf16_seed1_4k.json results/dev_stage2_seed1_4k.json &&
    ../../.venv/bin/python answer_forms.py results/dev_*_4k.json)
#    Stage 2 continued (2026-12-05, third session): the same command resumed from its checkpoint 3 (optimizer, schedule and
#    KL reference with it), stopped by hand at 92 minutes after checkpoint 10, rather than cut inside step 11.
timeout 5700 "${STAGE2[@]}" --resume_from_checkpoint runs/length-rl/stage2_seed1/checkpoint-3 || true
keep runs/length-rl/stage2_seed1/checkpoint-10 stage2_seed1_step10
reward_curve stage2_seed1_step10
cd $HERE
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter results/adapter_stage2_seed1_step10 --out results/dev_stage2_seed1_step10_4k.json
../../.venv/bin/python dev_table.py results/dev_stage1bf16_seed1_4k.json results/dev_stage2_seed1_step10_4k.json
../../.venv/bin/python dev_table.py results/dev_untrained_4k.json results/dev_stage2_seed1_step10_4k.json
../../.venv/bin/python answer_forms.py results/dev_*_4k.json
#    The bar's shortcut checks (needle depth, first needle, where wrong numbers come from) on every 4K dev file.
../../.venv/bin/python shortcuts.py results/dev_untrained_4k.json results/dev_stage1_seed1_4k.json \
    results/dev_stage1bf16_seed1_4k.json results/dev_stage2_seed1_step10_4k.json
#    Planning measure for the next recipe: the spread of checkpoint 10's rewards at 1K and 2K, G = 16.
../../.venv/bin/python probe_reward.py --tasks niah_multikey_2 niah_multivalue niah_multiquery --lengths 1000 2000 --questions 4 \
    --draws 16 --max-batch 16 --adapter results/adapter_stage2_seed1_step10 --out results/probe_reward_stage2_1k_2k_g16.json

# 4. Stage 3 (2026-12-05, fourth session, seed 1): 1K-2K documents, multi-key NIAH weighted up, no VT, bfloat16,
#    from stage 2's checkpoint 10; stopped by wall time, the last whole checkpoint measured.
cd ../..
{ .venv/bin/python $HERE/make_data.py --out runs/length-rl/stage3_mk_seed1.jsonl --tasks niah_multikey_2 --per-task 64 --lengths 1000 2000 --seed 1 &&
  .venv/bin/python $HERE/make_data.py --out runs/length-rl/stage3_rest_seed1.jsonl --tasks niah_multivalue niah_multiquery --per-task 32 --lengths 1000 2000 --seed 1 &&
  .venv/bin/python $HERE/make_data.py --out runs/length-rl/stage3_single_seed1.jsonl --tasks niah_single_1 --per-task 16 --lengths 1000 2000 --seed 1
} && cat runs/length-rl/stage3_{mk,rest,single}_seed1.jsonl > runs/length-rl/train1k2k_mk_seed1.jsonl
STAGE3=("${MULTI_CHUNK[@]}" --train_file runs/length-rl/train1k2k_mk_seed1.jsonl
    --init_adapter $HERE/results/adapter_stage2_seed1_step10 $BF16 --output_dir runs/length-rl/stage3_seed1)
timeout 5700 "${STAGE3[@]}" || true
#    The measured run was stopped by hand after checkpoint 14 (84 minutes), rather than cut inside step 15 by the timeout.
keep runs/length-rl/stage3_seed1/checkpoint-14 stage3_seed1
reward_curve stage3_seed1
#    Dev: the 4K gate, and 1K (the training length) for its start and its end; then the tables.
cd $HERE
T4="niah_single_1 niah_multikey_2 niah_multivalue niah_multiquery"
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter results/adapter_stage3_seed1 --out results/dev_stage3_seed1_4k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 1000 --questions 16 --max-batch 16 --tasks $T4 \
    --adapter results/adapter_stage2_seed1_step10 --out results/dev_stage2_seed1_step10_1k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 1000 --questions 16 --max-batch 16 --tasks $T4 \
    --adapter results/adapter_stage3_seed1 --out results/dev_stage3_seed1_1k.json
../../.venv/bin/python dev_table.py results/dev_stage2_seed1_step10_4k.json results/dev_stage3_seed1_4k.json
../../.venv/bin/python dev_table.py results/dev_stage2_seed1_step10_1k.json results/dev_stage3_seed1_1k.json
../../.venv/bin/python dev_table.py results/dev_untrained_300_1k.json results/dev_stage3_seed1_1k.json
../../.venv/bin/python answer_forms.py results/dev_stage3_seed1_4k.json results/dev_stage3_seed1_1k.json results/dev_stage2_seed1_step10_1k.json
../../.venv/bin/python shortcuts.py results/dev_stage2_seed1_step10_4k.json results/dev_stage3_seed1_4k.json
#    Planning measure: stage 3's one-value gain at 16K (untrained against checkpoint 14, the two all-of tasks).
for model in untrained stage3_seed1; do
    adapter=(); [ $model = untrained ] || adapter=(--adapter results/adapter_$model)
    ../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 16000 --questions 8 --max-batch 16 \
        --tasks niah_multivalue niah_multiquery "${adapter[@]}" --out results/dev_${model}_16k.json
done
../../.venv/bin/python dev_table.py results/dev_untrained_16k.json results/dev_stage3_seed1_16k.json
../../.venv/bin/python shortcuts.py results/dev_untrained_16k.json results/dev_stage3_seed1_16k.json

# 5. Stage 3 continued (2026-12-05, fifth session): the same command resumed from checkpoint 14, stopped by wall time.
cd ../..
timeout 5700 "${STAGE3[@]}" --resume_from_checkpoint runs/length-rl/stage3_seed1/checkpoint-14 || true
#    Stopped by hand after checkpoint 29 (86 minutes). Its adapter, state and curve; dev at 4K (the gate), 1K and 16K.
keep runs/length-rl/stage3_seed1/checkpoint-29 stage3_seed1_step29
reward_curve stage3_seed1_step29
cd $HERE
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter results/adapter_stage3_seed1_step29 --out results/dev_stage3_seed1_step29_4k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 1000 --questions 16 --max-batch 16 --tasks $T4 \
    --adapter results/adapter_stage3_seed1_step29 --out results/dev_stage3_seed1_step29_1k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 16000 --questions 8 --max-batch 16 \
    --tasks niah_multivalue niah_multiquery niah_multikey_2 --adapter results/adapter_stage3_seed1_step29 --out results/dev_stage3_seed1_step29_16k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 16000 --questions 8 --max-batch 16 \
    --tasks niah_multikey_2 --out results/dev_untrained_16k_multikey.json
for pair in "stage3_seed1_4k stage3_seed1_step29_4k" "untrained_4k stage3_seed1_step29_4k" "stage3_seed1_1k stage3_seed1_step29_1k" "untrained_300_1k stage3_seed1_step29_1k" \
        "stage3_seed1_16k stage3_seed1_step29_16k" "untrained_16k stage3_seed1_step29_16k" "untrained_16k_multikey stage3_seed1_step29_16k"; do
    set -- $pair; ../../.venv/bin/python dev_table.py results/dev_$1.json results/dev_$2.json
done
../../.venv/bin/python answer_forms.py results/dev_stage3_seed1_4k.json results/dev_stage3_seed1_step29_4k.json results/dev_stage3_seed1_step29_1k.json
../../.venv/bin/python shortcuts.py results/dev_stage3_seed1_4k.json results/dev_stage3_seed1_step29_4k.json results/dev_stage3_seed1_1k.json \
    results/dev_stage3_seed1_step29_1k.json results/dev_untrained_16k_multikey.json results/dev_stage3_seed1_step29_16k.json

# 6. Stage 4 (2026-12-05, sixth session): the paper's strict verifier as the reward, 4K documents added, from checkpoint 29.
cd ../..
.venv/bin/python $HERE/make_data.py --out runs/length-rl/stage4_4k_mk_seed1.jsonl --tasks niah_multikey_2 --per-task 32 --lengths 4000 --seed 1
.venv/bin/python $HERE/make_data.py --out runs/length-rl/stage4_4k_rest_seed1.jsonl --tasks niah_multivalue niah_multiquery --per-task 16 --lengths 4000 --seed 1
.venv/bin/python $HERE/make_data.py --out runs/length-rl/stage4_4k_single_seed1.jsonl --tasks niah_single_1 --per-task 8 --lengths 4000 --seed 1
cat runs/length-rl/train1k2k_mk_seed1.jsonl runs/length-rl/stage4_4k_{mk,rest,single}_seed1.jsonl > runs/length-rl/stage4_seed1.jsonl
STAGE4=("${MULTI_CHUNK[@]}" --train_file runs/length-rl/stage4_seed1.jsonl --reward_metric strict_boxed --warmup_steps 0
    --init_adapter $HERE/results/adapter_stage3_seed1_step29 $BF16 --output_dir runs/length-rl/stage4_seed1)
timeout 4500 "${STAGE4[@]}" || true
#    Stopped by hand after 4 steps (27 minutes): all 160 rollouts drawn earned 0 (free answers are never boxed).
# 7. Stage 4b (2026-12-05, sixth session): the same data and start, whole-number matching in the reward (train_exact.py).
STAGE4B=("${STAGE4[@]}" --output_dir runs/length-rl/stage4b_seed1)
STAGE4B[1]=$HERE/train_exact.py
timeout 3600 "${STAGE4B[@]}" || true
#    Cut by the timeout inside step 7: checkpoint 6 (6 updates) is measured, at 4K (the gate) and 1K, then 16K.
keep runs/length-rl/stage4b_seed1/checkpoint-6 stage4b_seed1
cp runs/length-rl/stage4_seed1/checkpoint-3/trainer_state.json $HERE/results/stage4_seed1_trainer_state.json  # stage 4's 3 whole steps
reward_curve stage4b_seed1
cd $HERE
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --adapter results/adapter_stage4b_seed1 --out results/dev_stage4b_seed1_4k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 1000 --questions 16 --max-batch 16 --tasks $T4 \
    --adapter results/adapter_stage4b_seed1 --out results/dev_stage4b_seed1_1k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 16000 --questions 8 --max-batch 16 \
    --tasks niah_multivalue niah_multiquery niah_multikey_2 --adapter results/adapter_stage4b_seed1 --out results/dev_stage4b_seed1_16k.json
for pair in "stage3_seed1_step29_4k stage4b_seed1_4k" "untrained_4k stage4b_seed1_4k" "stage3_seed1_step29_1k stage4b_seed1_1k" \
        "untrained_300_1k stage4b_seed1_1k" "stage3_seed1_step29_16k stage4b_seed1_16k" "untrained_16k_multikey stage4b_seed1_16k" "untrained_16k stage4b_seed1_16k"; do
    set -- $pair; ../../.venv/bin/python dev_table.py results/dev_$1.json results/dev_$2.json
    ../../.venv/bin/python dev_table.py --strict results/dev_$1.json results/dev_$2.json
done
../../.venv/bin/python answer_forms.py results/dev_stage3_seed1_step29_4k.json results/dev_stage4b_seed1_4k.json results/dev_stage4b_seed1_1k.json
../../.venv/bin/python shortcuts.py results/dev_stage3_seed1_step29_4k.json results/dev_stage4b_seed1_4k.json results/dev_stage4b_seed1_1k.json results/dev_stage4b_seed1_16k.json
#    The same dev questions (8 a task) with the final answer decoded freely, as training rollouts decode it.
for model in stage3_seed1_step29 stage4b_seed1; do
    ../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 1000 4000 --questions 8 --max-batch 16 \
        --tasks niah_single_1 niah_multikey_2 --free-answer --adapter results/adapter_$model --out results/dev_${model}_free_1k_4k.json
done

# 8. Stage 5 (2026-12-05, seventh session): free answers as the dev measure; stage 4b resumed from its checkpoint 6.
#    Question 1: the 4K gate on free answers, for the untrained model, checkpoint 29 and stage 4b's checkpoint 6.
for model in untrained stage3_seed1_step29 stage4b_seed1; do
    adapter=(); [ $model = untrained ] || adapter=(--adapter results/adapter_$model)
    ../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
        --free-answer "${adapter[@]}" --out results/dev_${model}_free_4k.json
done
#    Question 2: stage 4b's command resumed from checkpoint 6, stopped by wall time; its last checkpoint kept and measured.
cd ../..
timeout 3600 "${STAGE4B[@]}" --resume_from_checkpoint runs/length-rl/stage4b_seed1/checkpoint-6 || true
LAST=$(ls -d runs/length-rl/stage4b_seed1/checkpoint-* | sort -V | tail -1)
keep $LAST stage5_seed1
reward_curve stage5_seed1
cd $HERE
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 4000 --questions 8 --max-batch 16 \
    --free-answer --adapter results/adapter_stage5_seed1 --out results/dev_stage5_seed1_free_4k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 1000 --questions 16 --max-batch 16 --tasks $T4 \
    --free-answer --adapter results/adapter_stage5_seed1 --out results/dev_stage5_seed1_free_1k.json
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 16000 --questions 8 --max-batch 16 \
    --tasks niah_multivalue niah_multiquery niah_multikey_2 --free-answer --adapter results/adapter_stage5_seed1 \
    --out results/dev_stage5_seed1_free_16k.json
#    For the rule that picks seeds 2 and 3's recipe: checkpoint 29's free answers at 16K.
../../.venv/bin/python probe_reward.py --draws 1 --temperature 0 --lengths 16000 --questions 8 --max-batch 16 \
    --tasks niah_multivalue niah_multiquery niah_multikey_2 --free-answer --adapter results/adapter_stage3_seed1_step29 \
    --out results/dev_stage3_seed1_step29_free_16k.json
#    The tables, shortcuts and answers' forms of stage 5.
for pair in "untrained_free_4k stage3_seed1_step29_free_4k" "stage3_seed1_step29_4k stage3_seed1_step29_free_4k" "untrained_free_4k stage4b_seed1_free_4k" \
        "stage3_seed1_step29_free_4k stage5_seed1_free_4k" "untrained_free_4k stage5_seed1_free_4k" "stage3_seed1_step29_1k stage5_seed1_free_1k" \
        "untrained_300_1k stage5_seed1_free_1k" "stage3_seed1_step29_free_16k stage5_seed1_free_16k" "untrained_16k_multikey stage5_seed1_free_16k" \
        "untrained_16k stage5_seed1_free_16k"; do
    set -- $pair; ../../.venv/bin/python dev_table.py results/dev_$1.json results/dev_$2.json
done
../../.venv/bin/python shortcuts.py results/dev_{untrained,stage3_seed1_step29,stage4b_seed1,stage5_seed1}_free_4k.json \
    results/dev_stage5_seed1_free_1k.json results/dev_{stage3_seed1_step29,stage5_seed1}_free_16k.json
../../.venv/bin/python answer_forms.py results/dev_{untrained,stage3_seed1_step29,stage4b_seed1,stage5_seed1}_free_4k.json \
    results/dev_stage5_seed1_free_1k.json results/dev_stage5_seed1_free_16k.json
#    The recipe fixed on dev (stage 5's), for training seeds 2 and 3: bash recipe.sh 2; bash recipe.sh 3
