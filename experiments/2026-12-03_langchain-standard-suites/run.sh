#!/usr/bin/env bash
# LangChain's standard chat-model tests (issue 82)
# The commands of this experiment, as README.md (from BENCHMARKS.md: 13. LangChain's standard chat-model tests) gives them, in order.
# Several steps take minutes to hours on 2 CPU cores; run one step at a time by copying it.
# Paths under benchmarks/results/ that moved with this experiment are rewritten to their new place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- commands named in the running text ---
.venv/bin/python -m pytest tests/test_standard_suites.py -ra
