"""Tokenize + chunk a 3.5M-token document with the embedded model's tokenizer.

``chunk_text`` cuts the text into ~32K-character segments at tokenization-neutral
boundaries, encodes them as one batch (the fast tokenizer spreads a batch over all
cores), slices the ids into chunks and batch-decodes them. For comparison, the same run
times ``encode_long`` alone (segment + batch encode, no decode) and the naive
``codec.encode_batch([text])`` on the whole string, and checks both give the same ids.
Each method runs in a fresh subprocess: memory one method freed stays in the process
and would hide the next one's peak RSS. Goal: ``chunk_text`` on 3.5M tokens in < 15 s.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._common import OtherLoad, current_rss, embedded_codec, median, noise_document, parse_tokens, peak_rss, reset_peak_rss, write_result

NAME = "bench_chunking"
METHODS = ("chunk_text", "encode_long", "naive_encode")
REPO_ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 15.0


def run_worker(method: str, target_tokens: int, chunk_tokens: int, repeats: int) -> dict[str, Any]:
    """Time ``repeats`` calls of one method; the first (fresh process) also gives peak RSS."""
    from langgraph_memagent.agents.tokenizers import chunk_text, encode_long

    codec = embedded_codec()
    document, tokens = noise_document(codec, target_tokens)
    step = {
        "chunk_text": lambda: chunk_text(document, codec, chunk_tokens),
        "encode_long": lambda: encode_long(document, codec),
        "naive_encode": lambda: codec.encode_batch([document])[0],
    }[method]
    seconds, peak, load = [], 0, OtherLoad()
    for repeat in range(repeats):
        output = None  # free the previous output before the next call
        gc.collect()
        start_rss = current_rss()
        reset_peak_rss()
        start = time.perf_counter()
        output = step()
        seconds.append(time.perf_counter() - start)
        if repeat == 0:
            peak = peak_rss() - start_rss
    other_cores = load.cores()
    result = {
        "method": method,
        "tokens": tokens,
        "characters": len(document),
        "seconds": median(seconds),
        "runs_s": seconds,
        "us_per_token": 1e6 * median(seconds) / tokens,
        "peak_rss_above_start_mb": peak / 1e6,
        "other_cpu_cores": other_cores,
    }
    if method == "chunk_text":
        result["chunks"] = len(output)
    else:
        assert len(output) == tokens, (len(output), tokens)
    if method == "naive_encode":  # untimed: does segmenting change tokenization?
        result["same_ids_as_encode_long"] = output == encode_long(document, codec)
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{NAME}",
        description="Time chunk_text (segmented batch encode + decode) vs a naive single-string encode on a long document.",
    )
    parser.add_argument("--tokens", default="3.5M", help="document size in tokens; 1K = 1024 (default: %(default)s)")
    parser.add_argument("--chunk-tokens", type=int, default=5000, help="tokens per chunk (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of chunk_text and encode_long; medians reported (default: %(default)s)")
    parser.add_argument("--naive-repeats", type=int, default=1, help="timed runs of the naive single-string encode (default: %(default)s)")
    parser.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)  # internal: one subprocess measurement
    args = parser.parse_args(argv)
    target = parse_tokens(args.tokens)

    if args.worker:
        repeats = args.naive_repeats if args.worker == "naive_encode" else args.repeats
        print(json.dumps(run_worker(args.worker, target, args.chunk_tokens, repeats)))
        return {}

    measured = {}
    for method in METHODS:
        command = [sys.executable, "-m", f"benchmarks.{NAME}", "--worker", method, "--tokens", str(target)]
        command += ["--chunk-tokens", str(args.chunk_tokens), "--repeats", str(args.repeats), "--naive-repeats", str(args.naive_repeats)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"worker {method} failed:\n{done.stderr}")
        measured[method] = json.loads(done.stdout.strip().splitlines()[-1])

    chunked, encoded, naive = (measured[m] for m in METHODS)
    result = {
        "settings": vars(args),
        "tokens": chunked["tokens"],
        "chunks": chunked["chunks"],
        **measured,
        "same_ids_as_naive": naive["same_ids_as_encode_long"],
        "speedup_encode_long_vs_naive": naive["seconds"] / encoded["seconds"],
        "goal_met": chunked["seconds"] < GOAL_S,
        "other_cpu_cores": max(m["other_cpu_cores"] for m in measured.values()),
    }
    write_result(NAME, result)
    print(
        f"{NAME}: chunk_text {result['tokens']:,} tokens in {chunked['seconds']:.2f} s "
        f"({chunked['us_per_token']:.2f} us/token; goal < {GOAL_S:g} s: {'met' if result['goal_met'] else 'MISSED'}); "
        f"encode_long {encoded['us_per_token']:.2f} us/token vs naive encode {naive['us_per_token']:.2f} us/token, "
        f"same ids: {result['same_ids_as_naive']}; other load {result['other_cpu_cores']:.2f} cores max"
    )
    return result


if __name__ == "__main__":
    main()
