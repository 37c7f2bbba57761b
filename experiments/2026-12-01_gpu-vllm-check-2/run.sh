#!/usr/bin/env bash
# The second GPU check (one H200): LoRA training, tools through vllm serve, the exit hang
# The commands of this experiment, as README.md (from BENCHMARKS.md: 12. The second GPU check (H200)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- commands named in the running text ---
python3 -m benchmarks.gpu_vllm_check engine --model /tmp/gpu/smol_bf16 --json engine_smol_graphs.json --checks plain_call,memagent_niah,tools_required,sumer_graph_required,agemem_graph_required
.venv/bin/python -m benchmarks.gpu_vllm_check plot-train --history benchmarks/results/gpu_vllm/2026-12-01/train_smol_history.json --out experiments/2026-12-01_gpu-vllm-check-2/figures/gpu_vllm_train_smol_lora.png
