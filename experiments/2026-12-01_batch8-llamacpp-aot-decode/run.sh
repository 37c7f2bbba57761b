#!/usr/bin/env bash
# Batch 8 vs batch 1 against llama.cpp, AOTInductor decode, where the 5x goal stands
# The commands of this experiment, as README.md (from BENCHMARKS.md: 10. Engine speed: llama.cpp at batch 8, Zen 4 reruns, AOTInductor, batch 8 by cache length (2026-12-01/02)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- llama.cpp decoding 8 sequences together: its own batch-8 gain is 1.64x on 2 cores (2026-12-01, Zen 4 host) ---
pip install llama-cpp-python==0.3.36                     # built from its sdist here (about 8 minutes), then: pip install diskcache
.venv/bin/python -m benchmarks.bench_step_floor          # 21:09 UTC, alone; bench_step_floor_zen4_2026-12-01.json
.venv/bin/python -m benchmarks.bench_decode              # 21:22-21:43 UTC, alone, other load 0.01 cores; bench_decode_zen4_llama_batch8_2026-12-01.json
.venv/bin/python -m benchmarks.bench_batching            # 22:00-22:01 UTC, alone
.venv/bin/python -m benchmarks.bench_prompt_lookup --lookup 12 --rounds 1   # 22:38 and 22:44 UTC, alone (below)

# --- Two more runs on the same Zen 4 host kind: the single-row ratio moves with the host (2026-12-02) ---
.venv/bin/python -m benchmarks.bench_decode --rounds 2   # 00:57-01:04 UTC, alone, other load 0.01 cores (before the warm-up change)
.venv/bin/python -m benchmarks.bench_decode              # 01:17-01:24 UTC, alone, other load 0.01 cores; bench_decode_zen4_2026-12-02.json

# --- `compile_decode` ahead of time (AOTInductor): batch 1 past llama.cpp, 1.12-1.17x (2026-12-02) ---
.venv/bin/python -m benchmarks.bench_decode    # run 1 03:49-04:05 UTC, run 2 04:24-04:31 UTC, alone, other load 0.01-0.02 cores
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --out acc/aoti --quiet --quantization int4 --compile-decode   # 04:19-04:22 UTC
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --out acc/eager --quiet --quantization int4                  # 04:11-04:14 UTC

# --- Batch 8 against batch 1 by cache length: where the 5x goal stands (2026-12-02, later session) ---
.venv/bin/python -m benchmarks.bench_step_floor --cached 64      # 06:34 UTC, alone, other load 0.01 cores
.venv/bin/python -m benchmarks.bench_step_floor --cached 600     # 06:35 UTC
.venv/bin/python -m benchmarks.bench_step_floor --cached 1490    # 06:35 UTC (the issue's prompt length)
.venv/bin/python -m benchmarks.bench_decode --prompt-tokens 64   # 06:40-06:47 UTC, alone, other load 0.01 cores

# --- commands named in the running text ---
.venv/bin/python -m benchmarks.bench_batching
