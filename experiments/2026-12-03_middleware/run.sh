#!/usr/bin/env bash
# MemAgentMiddleware against SummarizationMiddleware and no middleware (issue 82, item 4).
# Results land in benchmarks/results/middleware/; re-running resumes where a run stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The dev probe (seed 1, one sample): only to check that the summarization settings run.
.venv/bin/python -m benchmarks.bench_middleware --seed 1 --samples 1 --lengths 16k --out /tmp/middleware-dev
# The run: niah_single_1 and niah_multikey_2, 16K, 32K and 64K, 4 samples each, seed 0.
.venv/bin/python -m benchmarks.bench_middleware
