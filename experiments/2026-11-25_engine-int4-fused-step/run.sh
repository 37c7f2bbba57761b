#!/usr/bin/env bash
# Engine speed: the GGUF's own 4-bit codes and a fused decode step (issue 21), on AVX2, AVX-512 and Zen 4 hosts
# The commands of this experiment, as README.md (from BENCHMARKS.md: 10. Engine speed, first part: int4 codes, fused step, AVX2 / AVX-512 / Zen 4 hosts, bfloat16 prefill) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 10. Engine speed: the GGUF's own 4-bit codes and a fused decode step (issue 21: blocked on its two batching goals) ---
.venv/bin/python -m benchmarks.bench_decode --rounds 3 --steps 40      # 600-token cache, greedy steps
.venv/bin/python -m benchmarks.bench_batching                          # 8 documents, sequential vs batched
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k,16k --samples 8 --seed 21 --out acc/int4 --quiet --quantization int4
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k,16k --samples 8 --seed 21 --out acc/float32 --quiet --quantization none
.venv/bin/python -m benchmarks.bench_precision                         # loops and ties, no timing
.venv/bin/python -m benchmarks.bench_long_document                     # 1M tokens, run alone

# --- On an AVX2-only host: the same code 2-7x slower, and prompts through the float32 weights (2026-11-25) ---
.venv/bin/python -m benchmarks.bench_linear_kernels     # the 120 Linears of SmolLM2-135M, int4 vs float32, by rows

.venv/bin/python -m benchmarks.bench_decode --rounds 2 --prompt-tokens 1240 --steps 92   # 16:46-16:59 UTC
.venv/bin/python -m benchmarks.bench_decode --rounds 2 --steps 30                        # 600-token prompts, 16:15-16:21 UTC

# --- On an AVX-512 host: a compiled decode step, still short of llama.cpp (2026-11-25, later session) ---
.venv/bin/python -m benchmarks.bench_decode --rounds 3 --steps 40      # 19:41-19:54 UTC, 600-token prompts
.venv/bin/python -m benchmarks.bench_step_floor                       # 20:59 UTC
.venv/bin/python -m benchmarks.bench_batching                         # 20:12-20:17 UTC, eager (the default)
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 \
    --out acc/compiled --quiet --quantization int4 --compile-decode     # 20:01-20:11 UTC

# --- Same Zen 4 host: bfloat16 prefill, and the engine's decode step at its benchmarked speed (2026-11-25, third session) ---
.venv/bin/python -m benchmarks.bench_linear_kernels --rows 1,8,16,32,48,64,128,256,1024   # 22:05 UTC
.venv/bin/python -m benchmarks.bench_decode --rounds 3 --steps 40                          # 22:07-22:14 UTC
.venv/bin/python experiments/2026-11-25_engine-int4-fused-step/bench_prefill_weights.py --weights int4,bfloat16 --lengths 4k,8k,16k --samples 16 --seed 22   # 22:26-23:16 UTC
.venv/bin/memagent compare --graphs memagent --task niah_single_1 --lengths 4k,8k --samples 8 --seed 21 --out acc/bf16 --quiet --quantization int4   # 22:14-22:19 UTC
.venv/bin/python -m benchmarks.bench_batching                                              # 23:21-23:23 UTC, after both changes

