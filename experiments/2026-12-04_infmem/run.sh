#!/usr/bin/env bash
# Issue 86: InfMem beside MemAgent, RAG and full context in one resumable `memagent compare` run.
# 2026-12-04: 4K (17 min 47 s on 2 cores), then 16K (1 h 9 min). Add 64k to --lengths to extend it; compare skips done cells.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/memagent compare --graphs infmem,memagent,rag,full_context \
    --task niah_multikey_2,niah_multivalue,qa_hotpotqa_synthetic --lengths 4k,16k --samples 8 \
    --chunk-tokens 1000 --memory-tokens 128 --answer-tokens 64 --prethink-tokens 64 --infmem-unit-tokens 250 \
    --out experiments/2026-12-04_infmem/results/compare --quiet
