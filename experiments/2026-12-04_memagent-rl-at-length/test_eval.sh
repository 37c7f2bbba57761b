#!/usr/bin/env bash
# The test evaluation of issue 85, once, after every seed's adapter is trained (README, "The test evaluation"):
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
# 3. test_report.py: the table, the bar's verdicts, the shortcut checks and the figure.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-04_memagent-rl-at-length
TEST=runs/length-rl/test
OUT=runs/length-rl/test_out
ADAPTERS=("$HERE/results/adapter_stage5_seed1" runs/length-rl/recipe_seed2/adapter_stage4 runs/length-rl/recipe_seed3/adapter_stage4)
for adapter in "${ADAPTERS[@]}"; do
    [ -f "$adapter/adapter_config.json" ] || { echo "test_eval.sh: $adapter is not trained yet (recipe.sh)" >&2; exit 2; }
done

.venv/bin/python $HERE/make_test.py --out "$TEST"
COMMON=(--data "$TEST/4K.jsonl,$TEST/16K.jsonl,$TEST/64K.jsonl,$TEST/256K.jsonl,$TEST/1M.jsonl" --model smollm2-135m
        --quantization none --temperature 0 --chunk-tokens 1000 --memory-tokens 128 --answer-tokens 64 --quiet)
.venv/bin/memagent compare "${COMMON[@]}" --graphs memagent,rag,full_context --out "$OUT/untrained"
for seed in 1 2 3; do
    .venv/bin/memagent compare "${COMMON[@]}" --graphs memagent --adapter "${ADAPTERS[seed - 1]}" --out "$OUT/trained_seed$seed"
done
.venv/bin/python $HERE/test_report.py --runs "$OUT" --data "$TEST" --out $HERE/results --figure $HERE/figures/test_accuracy_vs_length.png
