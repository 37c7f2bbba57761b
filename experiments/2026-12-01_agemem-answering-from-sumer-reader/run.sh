#!/usr/bin/env bash
# AgeMem's answering stage from SUMER's reading stage (runs 56-58, the 64-step reader, test4).
# The commands of README.md (BENCHMARKS.md section 11, last part), with "run 56's command unchanged" and the
# {N} placeholders of the text written out. Each training stage takes 13-19 minutes on the 2-core Zen 4 host,
# each measure 5-20 minutes; run a step at a time with `bash run.sh <step>` (steps below), or all in order.
# The measures write benchmarks/results/<name>.json (the files this folder links to).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
HERE=experiments/2026-12-01_agemem-answering-from-sumer-reader
# AgeMem's answering flags (run 52's): the memory is given, the retrieval reply is the best line, the answer is submitted
AGEMEM_FLAGS=(--agemem_write_mode line --agemem_sessions given-memory --agemem_distractor_messages 0
              --agemem_answer_mode retrieve-submit --agemem_retrieve_reply best)

reading_stage() {  # SUMER's reading stage (run 43's command): $1 seed, $2 steps, $3 output dir, then extra options
    local seed=$1 steps=$2 out=$3; shift 3
    $PY training/grpo_multiconv.py --preset cpu-sumer --output_dir "$out" --max_steps "$steps" \
        --max_context_tokens 6144 --temperature 0.7 --forced_answer_call submit --sumer_require_submit false \
        --reading_memory "evidence+question k=3" --evidence_reward_weight 0 --per_device_train_batch_size 16 \
        --search_reply plain --old_logps rollout --seed "$seed" --data_seed "$seed" --answer_rule yes-no \
        --category_shares open-domain=0.25 "$@"
}
answering_stage() {  # run 52's AgeMem recipe from a reading adapter: $1 seed, $2 init adapter, $3 output dir
    $PY training/grpo_multiconv.py --preset cpu-agemem --output_dir "$3" "${AGEMEM_FLAGS[@]}" \
        --temperature 1.0 --per_device_train_batch_size 16 --steps_per_generation 1 --max_steps 12 --warmup_steps 2 \
        --dynamic_sampling_rounds 2 --save_steps 2 --seed "$1" --data_seed "$1" --init_adapter "$2"
}
episodes() {  # bench_agemem_episodes: $1 split, $2 questions, $3 samples, $4 name, then options before the trainer flags
    local split=$1 questions=$2 samples=$3 name=$4; shift 4
    $PY -m benchmarks.bench_agemem_episodes --split "$split" --questions "$questions" --samples "$samples" --name "$name" \
        "$@" -- "${AGEMEM_FLAGS[@]}"
}

step_run56_to_58() {  # test3, seeds 56-58 (runs 56, 57, 58): 48-step reading stage, then 12 AgeMem steps
    # dev of seed 56: the untrained policy of bench_agemem_episodes_dev_best_retrieval.json (run 52-53's file) was copied to
    # bench_agemem_episodes_dev_best_reader56.json; --untrained-from does that copy now.
    for seed in 56 57 58; do
        reading_stage $seed 48 runs/sumer$seed-read
        answering_stage $seed runs/sumer$seed-read runs/agemem-answer$seed
        local dev_untrained=experiments/2026-11-30_agemem-answering-step/results/bench_agemem_episodes_dev_best_retrieval.json
        [ $seed = 56 ] || dev_untrained=benchmarks/results/bench_agemem_episodes_dev_best_reader56.json
        episodes dev 16 1 bench_agemem_episodes_dev_best_reader$seed --untrained-from "$dev_untrained" \
            --adapters runs/sumer$seed-read runs/agemem-answer$seed/checkpoint-12
        if [ $seed = 56 ]; then
            episodes test3 32 1 bench_agemem_episodes_test3_reader56 --adapters runs/sumer56-read runs/agemem-answer56/checkpoint-12
        else  # seeds 57 and 58 keep run 56's untrained policy
            episodes test3 32 1 bench_agemem_episodes_test3_reader$seed --untrained-from benchmarks/results/bench_agemem_episodes_test3_reader56.json \
                --adapters runs/sumer$seed-read runs/agemem-answer$seed/checkpoint-12
        fi
        local locomo_untrained=()
        [ $seed = 56 ] || locomo_untrained=(--untrained-from benchmarks/results/bench_agemem_episodes_locomo81_reader56.json)
        episodes locomo 81 1 bench_agemem_episodes_locomo81_reader$seed "${locomo_untrained[@]}" \
            --adapters runs/sumer$seed-read runs/agemem-answer$seed/checkpoint-12
    done
    $PY -m benchmarks.learning_report benchmarks/results/bench_agemem_episodes_test3_reader5[678].json \
        --plot "$HERE/figures/learning_agemem_test3_seeds56-58.png"
    # whole episodes with run 56's adapter (stage 1 stores the sessions itself; no given memory):
    $PY -m benchmarks.bench_agemem_episodes --split dev --questions 16 --samples 1 --name bench_agemem_episodes_dev_whole_reader56 \
        --adapters runs/agemem-answer56/checkpoint-12 -- --agemem_write_mode line --agemem_answer_mode retrieve-submit --agemem_retrieve_reply best
}

step_read64_dev() {  # the reading stage continued from step 48 to 64 for seeds 56-58, dev only (2026-12-02)
    for seed in 56 57 58; do
        $PY -m benchmarks.bench_sumer_reading --split dev --questions 64 --search_reply plain --answer_rule yes-no \
            --settings "evidence+question k=3" --adapter runs/sumer$seed-read --name bench_sumer_reading_dev64_rule_run${seed}_read48
        mkdir -p runs/sumer$seed-read64 && cp -r runs/sumer$seed-read/checkpoint-48 runs/sumer$seed-read64/
        reading_stage $seed 64 runs/sumer$seed-read64 --resume_from_checkpoint runs/sumer$seed-read64/checkpoint-48
        $PY -m benchmarks.bench_sumer_reading --split dev --questions 64 --search_reply plain --answer_rule yes-no \
            --settings "evidence+question k=3" --adapter runs/sumer$seed-read64/checkpoint-64 --name bench_sumer_reading_dev64_rule_run${seed}_read64 \
            --before benchmarks/results/bench_sumer_reading_dev64_rule_run${seed}_read48.json
        answering_stage $seed runs/sumer$seed-read64/checkpoint-64 runs/agemem-answer$seed-read64
        episodes dev 16 1 bench_agemem_episodes_dev_best_reader${seed}_read64 --untrained-from benchmarks/results/bench_agemem_episodes_dev_best_reader56.json \
            --adapters runs/sumer$seed-read runs/agemem-answer$seed/checkpoint-12 runs/sumer$seed-read64/checkpoint-64 runs/agemem-answer$seed-read64/checkpoint-12
    done
}

step_test4() {  # the headline: fresh seeds 59-61, 64-step reading stage run directly, 12 AgeMem steps, test4 once
    for seed in 59 60 61; do
        reading_stage $seed 64 runs/sumer$seed-read64
        answering_stage $seed runs/sumer$seed-read64 runs/agemem-answer$seed-read64
        if [ $seed = 59 ]; then
            episodes test4 32 1 bench_agemem_episodes_test4_reader59_read64 --adapters runs/sumer59-read64 runs/agemem-answer59-read64/checkpoint-12
        else
            episodes test4 32 1 bench_agemem_episodes_test4_reader${seed}_read64 --untrained-from benchmarks/results/bench_agemem_episodes_test4_reader59_read64.json \
                --adapters runs/sumer$seed-read64 runs/agemem-answer$seed-read64/checkpoint-12
        fi
    done
    local files=(benchmarks/results/bench_agemem_episodes_test4_reader{59,60,61}_read64.json)
    $PY -m benchmarks.learning_report "${files[@]}" --plot "$HERE/figures/learning_agemem_test4_seeds59-61.png"  # greedy: +48.6 ± 6.5
    $PY -m benchmarks.learning_report "${files[@]}" --decoding sampled
    $PY -m benchmarks.learning_report "${files[@]}" --adapter sumer
    $PY -m benchmarks.learning_report "${files[@]}" --baseline sumer
    # LoCoMo conv-30, greedy: the untrained policy and the chains of seeds 59 and 60, then seed 61's
    episodes locomo 81 0 bench_agemem_episodes_locomo81_greedy_read64 \
        --adapters runs/agemem-answer59-read64/checkpoint-12 runs/agemem-answer60-read64/checkpoint-12
    episodes locomo 81 0 bench_agemem_episodes_locomo81_greedy_read64_seed61 \
        --untrained-from "$HERE/results/bench_agemem_episodes_locomo81_greedy_read64.json" --adapters runs/agemem-answer61-read64/checkpoint-12
}

steps=("${@:-run56_to_58 read64_dev test4}")
for s in ${steps[@]}; do "step_$s"; done
