#!/usr/bin/env bash
# Set-up from nothing, locked (issue 18)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 9. Set-up from nothing, locked) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- 9. Set-up from nothing, locked (issue 18) ---
.venv/bin/memagent compare --graphs memagent --lengths 4k --samples 16 --seed 18 --out experiments/2026-11-24_setup-from-nothing/results/decoding/greedy
.venv/bin/memagent compare --graphs memagent --lengths 4k --samples 16 --seed 18 --temperature 0.7 --out experiments/2026-11-24_setup-from-nothing/results/decoding/t07

# --- commands named in the running text ---
make test-latest
.venv/bin/memagent run --question Q --document doc.txt --quiet
