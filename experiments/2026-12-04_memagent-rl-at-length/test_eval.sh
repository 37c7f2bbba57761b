#!/usr/bin/env bash
# The test evaluation of issue 85, once (README, "The test evaluation" and its amendment on the order of the runs):
#
#     bash experiments/2026-12-04_memagent-rl-at-length/test_eval.sh
#
# 1. The test files (make_test.py): the bar's four NIAH tasks at 4K, 16K, 64K, 256K and 1M tokens, test keys,
#    16 / 8 / 4 / 2 / 1 questions a task.
# 2. `memagent compare` on them: MemAgent, RAG and full context on the untrained model, then MemAgent with each seed's
#    adapter (seed 1's is the one the package ships; seeds 2 and 3 come from recipe.sh). Greedy, float32 weights
#    for every run (the dev measures' precision), 1000-token chunks, 128-token memory, 64-token answers; the
#    adapters answer freely (load_chat_model's default with an adapter), the untrained model under the answer grammar
#    (the package default). Each compare run resumes where it stopped.
#    A model runs as soon as it exists: a seed's adapter that recipe.sh has not made yet is skipped with a message.
#    Two passes (README, amendment of 2026-12-07): every model on the judged lengths, 4K-256K, then every model at 1M,
#    which is half of each model's calls and is shown, not judged. compare resumes, so the second pass runs only 1M.
# 3. test_report.py, once every model has run a pass: the table, the bar's verdicts, the shortcut checks and the figure.
# Everything lands in runs/ of this folder; keep_progress.sh test stages a cut evaluation for commit.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-04_memagent-rl-at-length
TEST=$HERE/runs/test
OUT=$HERE/runs/test_out
ADAPTERS=("$HERE/results/adapter_stage5_seed1" "$HERE/runs/recipe_seed2/adapter_stage4" "$HERE/runs/recipe_seed3/adapter_stage4")

.venv/bin/python $HERE/make_test.py --out "$TEST"
(cd "$TEST" && sha256sum --quiet -c "../../test_files.sha256") \
    || { echo "test_eval.sh: error: $TEST differs from test_files.sha256; the split must be the one planned" >&2; exit 2; }
mkdir -p "$OUT"
source $HERE/host.sh  # host LABEL FILE: the host a model ran on
JUDGED="$TEST/4K.jsonl,$TEST/16K.jsonl,$TEST/64K.jsonl,$TEST/256K.jsonl"
COMMON=(--model smollm2-135m --quantization none --temperature 0 --chunk-tokens 1000 --memory-tokens 128
        --answer-tokens 64 --quiet)

every_model() {  # DATA: each model that exists on DATA; sets missing=1 when a seed's adapter does not exist yet
    host untrained "$OUT/hosts.log"
    .venv/bin/memagent compare --data "$1" "${COMMON[@]}" --graphs memagent,rag,full_context --out "$OUT/untrained"
    missing=0
    for seed in 1 2 3; do
        adapter=${ADAPTERS[seed - 1]}
        if [ ! -f "$adapter/adapter_config.json" ]; then
            echo "test_eval.sh: seed $seed's adapter ($adapter) is not trained yet (recipe.sh $seed); skipped" >&2
            missing=1; continue
        fi
        host "trained_seed$seed" "$OUT/hosts.log"
        .venv/bin/memagent compare --data "$1" "${COMMON[@]}" --graphs memagent --adapter "$adapter" --out "$OUT/trained_seed$seed"
    done
}

report() {
    [ $missing = 0 ] || { echo "test_eval.sh: the report waits for every seed's run" >&2; return 0; }
    .venv/bin/python $HERE/test_report.py --runs "$OUT" --data "$TEST" --out $HERE/results --figure $HERE/figures/test_accuracy_vs_length.png
}

every_model "$JUDGED"
report
every_model "$JUDGED,$TEST/1M.jsonl"
report
