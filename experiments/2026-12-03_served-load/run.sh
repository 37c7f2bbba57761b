#!/usr/bin/env bash
# Served graphs under load and faults, four users (issue 83, item 5): the command of README.md.
# Needs PostgreSQL 15 binaries (the benchmark starts a throw-away cluster) and the serve extra; about 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python -m benchmarks.bench_served_load --out benchmarks/results/served_load
