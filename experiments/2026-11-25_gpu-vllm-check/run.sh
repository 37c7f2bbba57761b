#!/usr/bin/env bash
# GPU check of the vLLM paths (one H100 80GB)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 12. GPU check of the vLLM paths (H100)) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

