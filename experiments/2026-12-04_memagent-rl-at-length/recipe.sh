#!/usr/bin/env bash
# The recipe that made seed 1's stage-5 checkpoint (issue 85), from nothing, for one training seed:
#
#     bash experiments/2026-12-04_memagent-rl-at-length/recipe.sh SEED
#
# Stage 1: 16 GRPO steps on 300-token documents (the five tasks), bfloat16 weights.
# Stage 2: 10 steps on 1K, 2K and 4K documents (the five tasks), float32.
# Stage 3: 29 steps on 1K and 2K documents, multi-key NIAH weighted up, no VT, bfloat16.
# Stage 4: 12 steps of train_exact.py (whole-number matching in the reward) on stage 3's documents plus 4K ones,
#          bfloat16, no warm-up (seed 1's stage 4b and its continuation, stage 5).
# Each stage starts from the previous stage's adapter rounded to bfloat16 (keep_adapter.py), as seed 1's stages did;
# the schedule is constant after warm-up, so stopping at a step count gives seed 1's learning rates.
# Interrupted, it goes on where it stopped: a finished stage is skipped, a cut one resumes from its last checkpoint.
# The adapter ends in $HERE/runs/recipe_seed$SEED/adapter_stage4 (inside this folder, so that keep_progress.sh can commit
# a cut run's state and a fresh checkout resumes it). Seed 1's stages took 27, 142, 180 and 110 minutes
# of training steps on a 2-core Zen 4 host with AVX-512 BF16 (their trainer states in results/).
set -euo pipefail
SEED=${1:?usage: recipe.sh SEED (a training seed, e.g. 2)}
[[ $SEED =~ ^[0-9]+$ ]] || { echo "recipe.sh: error: SEED must be a whole number, got '$SEED'" >&2; exit 2; }
# Stages 1, 3 and 4 train in bfloat16. On a CPU without AVX-512 BF16 or AMX the trainer multiplies their Linear layers
# in float32 (training/cpu_bf16.py; README, amendment "bfloat16 training on an AVX2 host"); each stage's host is logged.
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-04_memagent-rl-at-length
RUNS=$HERE/runs/recipe_seed$SEED
mkdir -p "$RUNS"
source $HERE/host.sh  # host LABEL FILE: each stage's host (README, amendment "bfloat16 training on an AVX2 host")
COMMON=(--preset cpu-smoke --chunk_tokens 1000 --memory_tokens 128 --answer_tokens 64 --num_generations 16
        --per_device_train_batch_size 16 --steps_per_generation 1 --gradient_accumulation_steps 1 --max_steps 1000
        --save_steps 1 --activation_checkpointing false --max_tokens_per_forward 4096 --seed "$SEED" --data_seed "$SEED")
BF16=(--bf16 true --use_cpu true)

data() {  # data NAME MAKE_DATA_ARGS...: a training file of this seed, written once
    [ -s "$RUNS/$1.jsonl" ] || .venv/bin/python $HERE/make_data.py --out "$RUNS/$1.jsonl" --seed "$SEED" "${@:2}"
}

stage() {  # [TRAINER=script] stage NAME STEPS TRAINER_ARGS...: train to STEPS optimizer steps, keep the adapter as adapter_NAME
    local out=$RUNS/$1 steps=$2 last
    if [ ! -d "$RUNS/adapter_$1" ]; then
        last=$(ls -d "$out"/checkpoint-* 2>/dev/null | sort -V | tail -1 || true)
        if [ "$last" != "$out/checkpoint-$steps" ]; then
            host "$1 from ${last:-the start}" "$RUNS/hosts.log"
            .venv/bin/python "${TRAINER:-training/grpo_multiconv.py}" "${COMMON[@]}" --stop_after_steps "$steps" --output_dir "$out" \
                "${@:3}" ${last:+--resume_from_checkpoint "$last"}
        fi
        .venv/bin/python $HERE/keep_adapter.py "$out/checkpoint-$steps" "$RUNS/adapter_$1"
    fi
}

data train300 --per-task 64 --lengths 300
data train1k4k --per-task 48 --lengths 1000 2000 4000
data stage3_mk --tasks niah_multikey_2 --per-task 64 --lengths 1000 2000
data stage3_rest --tasks niah_multivalue niah_multiquery --per-task 32 --lengths 1000 2000
data stage3_single --tasks niah_single_1 --per-task 16 --lengths 1000 2000
[ -s "$RUNS/train1k2k_mk.jsonl" ] || cat "$RUNS"/stage3_{mk,rest,single}.jsonl > "$RUNS/train1k2k_mk.jsonl"
data stage4_4k_mk --tasks niah_multikey_2 --per-task 32 --lengths 4000
data stage4_4k_rest --tasks niah_multivalue niah_multiquery --per-task 16 --lengths 4000
data stage4_4k_single --tasks niah_single_1 --per-task 8 --lengths 4000
[ -s "$RUNS/stage4.jsonl" ] || cat "$RUNS"/{train1k2k_mk,stage4_4k_mk,stage4_4k_rest,stage4_4k_single}.jsonl > "$RUNS/stage4.jsonl"

stage stage1 16 --train_file "$RUNS/train300.jsonl" "${BF16[@]}"
stage stage2 10 --train_file "$RUNS/train1k4k.jsonl" --init_adapter "$RUNS/adapter_stage1" --bf16 false
stage stage3 29 --train_file "$RUNS/train1k2k_mk.jsonl" --init_adapter "$RUNS/adapter_stage2" "${BF16[@]}"
TRAINER=$HERE/train_exact.py stage stage4 12 --train_file "$RUNS/stage4.jsonl" --init_adapter "$RUNS/adapter_stage3" \
    --warmup_steps 0 "${BF16[@]}"
echo "recipe.sh: seed $SEED's adapter: $RUNS/adapter_stage4"
