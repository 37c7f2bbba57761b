#!/usr/bin/env bash
# Prompt lookup decoding: MemAgent's memory updates copy their memory
# The commands of this experiment, as README.md (from BENCHMARKS.md: 10. Engine speed: prompt lookup decoding (2026-11-30)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- Prompt lookup decoding: MemAgent's memory updates copy their memory (2026-11-30, AVX2-only host) ---
.venv/bin/python -m benchmarks.bench_prompt_lookup          # 00:06-00:19 UTC, alone, other load 0.04 cores
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --concurrency 1 \
    --out experiments/2026-11-30_prompt-lookup/results/prompt_lookup_accuracy/lookup --quiet                    # drafts on (the default)
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --concurrency 1 \
    --out experiments/2026-11-30_prompt-lookup/results/prompt_lookup_accuracy/no_lookup --quiet --prompt-lookup 0

# --- Prompt lookup on a Zen 4 host: one OpenMP team, 12-token drafts, and the 1M-token run (2026-11-30, later session) ---
# development: the draft length, on haystack seed 22 (not the benchmark's seed 21)
.venv/bin/python -m benchmarks.bench_prompt_lookup --seed 22 --lookup 2,4,6,8,12 --rounds 1   # 02:41-02:48 UTC
.venv/bin/python -m benchmarks.bench_prompt_lookup --seed 22 --lookup 8,10,12,16 --rounds 2   # 02:48-02:58 UTC
# then once each, with the chosen default (12), on seed 21, from one commit, alone:
.venv/bin/python -m benchmarks.bench_prompt_lookup --lookup 12,4 --rounds 2                    # 03:01-03:07 UTC
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --concurrency 1 \
    --out experiments/2026-11-30_prompt-lookup/results/prompt_lookup_accuracy/zen4_lookup12 --quiet                                 # 03:07-03:11 UTC
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --concurrency 1 \
    --out experiments/2026-11-30_prompt-lookup/results/prompt_lookup_accuracy/zen4_no_lookup --quiet --prompt-lookup 0  # 03:11-03:18 UTC
.venv/bin/python -m benchmarks.bench_long_document --out experiments/2026-11-30_prompt-lookup/results/long_document_prompt_lookup   # 03:18-03:56 UTC

# --- The draft length per call, not per engine: a rerun (2026-11-30, next session, the same Zen 4 host family) ---
.venv/bin/python -m benchmarks.bench_prompt_lookup --lookup 12 --rounds 1      # 06:59-07:02 UTC, alone, at d4695f1

# --- commands named in the running text ---
make demo
.venv/bin/python -m benchmarks.bench_batching
