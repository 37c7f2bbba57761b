"""Benchmarks of langgraph_memagent: orchestration overhead, batched throughput, chunking speed.

Run all with ``python -m benchmarks.run_all`` (``make bench``) or one with
``python -m benchmarks.bench_<name> --help``. Results go to ``benchmarks/results/``.
"""
