"""Run every benchmark with its defaults, one after another, and print their summary lines.

``python -m benchmarks.run_all`` (``make bench``). Each benchmark runs in its own
interpreter so one's memory and threads cannot disturb the next; results land in
``benchmarks/results/<name>.json``. Took about 14 minutes on 2 idle cores of the earlier benchmark host, before bench_decode compiled its
``compiled`` variant (about 4 minutes more the first time), bench_step_floor (about a minute) and bench_sampling (about 6 minutes) joined.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCHMARKS = (
    "bench_chunking", "bench_orchestration", "bench_linear_kernels", "bench_decode", "bench_prompt_lookup", "bench_step_floor", "bench_sampling",
    "bench_batching",
)
REPO_ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run_all", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated subset to run (default: %(default)s)")
    args = parser.parse_args(argv)
    failed = []
    for name in (n for n in BENCHMARKS if n in args.only.split(",")):
        # Output passes through; the last stdout line of each is its summary.
        done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}"], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, check=False)
        print(done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else f"{name}: FAILED (exit {done.returncode})", flush=True)
        if done.returncode != 0:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
