#!/usr/bin/env bash
# Accuracy vs length on the embedded model (the paper's figure 5 in miniature)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 5. Accuracy vs length on the embedded model) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 5. Accuracy vs length on the embedded model (`bench_accuracy`) ---
.venv/bin/python -m benchmarks.bench_accuracy        # niah_single_1 + qa_hotpotqa_synthetic, 4k-32k, 8 samples, 3 graphs
