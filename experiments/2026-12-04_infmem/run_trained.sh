#!/usr/bin/env bash
# Issue 86 with the trained MemAgent adapter (smollm2-135m-memagent, shipped 2026-12-05): run.sh's comparison again,
# every graph on the trained model (float32 weights, the adapter's default). MemAgent decodes its answer freely, as
# the adapter was trained; InfMem keeps its decision and answer grammar. Resumable: compare skips finished cells.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/memagent compare --graphs infmem,memagent,rag,full_context --model smollm2-135m-memagent \
    --task niah_multikey_2,niah_multivalue,qa_hotpotqa_synthetic --lengths 4k,16k --samples 8 \
    --chunk-tokens 1000 --memory-tokens 128 --answer-tokens 64 --prethink-tokens 64 --infmem-unit-tokens 250 \
    --out experiments/2026-12-04_infmem/results/compare_trained --quiet
