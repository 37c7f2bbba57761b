#!/usr/bin/env bash
# GPU check of the vLLM paths (one H100 80GB)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 12. GPU check of the vLLM paths (H100)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- on the GPU machine, after the bundles are received and installed, with the environment that
# experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh exports (its header: recv .c1, then recv .c2 install) ---
python3 experiments/2026-11-25_gpu-vllm-check/gpu_vllm_window_check.py
