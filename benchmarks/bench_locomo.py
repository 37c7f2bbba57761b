"""LoCoMo on the embedded SmolLM2-135M: SUMER, AgeMem, LangMem, RAG, full context and MemAgent on one real conversation.

The conversation is ``shared/data/locomo_conv30.json`` (LoCoMo conv-30: 19 sessions, 369
turns, 81 questions without the adversarial category). A seeded subset of questions is
run (``--limit``; every graph answers the same ones), greedy, with the per-category
token F1 and BLEU-1 of Mem0's evaluation code (as the SUMER paper reports) and, with
``--judge``, the LLM judge's J. This is ``memagent compare`` with fixed settings; it resumes
like it. Runs alone (not in ``make bench``): 16 questions of all six graphs take about 1.5
hours on 2 cores.

After the comparison, :func:`tool_use` tabulates what the tool-using graphs did, per
question: tool calls, refused and invalid ones, searches and those that returned an evidence turn
(LoCoMo's evidence ids), submitted answers and stop reasons (SUMER), tool calls by name
(AgeMem), extraction calls and stored memories (LangMem), and every graph's LLM calls and
prompt tokens. Written to ``benchmarks/results/bench_locomo_tools.json`` and printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from collections import Counter
from statistics import fmean
from typing import Any

from ._common import RESULTS_DIR, run_compare_benchmark, write_result

NAME = "bench_locomo"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_conv30.json"


def tool_use(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per graph: means per question of what its tools did, summed counts of what must be zero, and stop reasons."""
    by_graph: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_graph.setdefault(record["graph"], []).append(record)
    table = {}
    for graph, rows in by_graph.items():
        details = [row.get("details") or {} for row in rows]
        searches = [(row.get("locomo") or {}).get("evidence_searches") for row in rows]
        searched = [found for found in searches if found is not None]
        summary: dict[str, Any] = {
            "questions": len(rows),
            "errors": sum(row["error"] is not None for row in rows),
            "llm_calls": fmean(row["llm_calls"] for row in rows),
            "prompt_tokens": fmean(row["prompt_tokens"] for row in rows),
        }
        if any("tool_calls" in detail for detail in details):  # SUMER: a count; AgeMem: by tool name
            counts = [detail.get("tool_calls", 0) for detail in details]
            by_name = Counter()
            for count in counts:
                by_name.update(count if isinstance(count, dict) else {"executed": count})
            summary["tool_calls_by_name"] = {name: total / len(rows) for name, total in sorted(by_name.items())}
            summary["invalid_tool_calls"] = sum(detail.get("invalid_tool_calls", 0) for detail in details) + by_name.get("invalid", 0)
            if any("rejected_tool_calls" in detail for detail in details):  # SUMER: parsed, refused for their arguments
                summary["rejected_tool_calls"] = sum(detail.get("rejected_tool_calls", 0) for detail in details)
        if searched:
            total = sum(found["searches"] for found in searched)
            summary["searches"] = total / len(rows)
            summary["questions_with_a_search"] = sum(found["searches"] > 0 for found in searched)
            summary["searches_with_evidence"] = sum(found["with_evidence"] for found in searched) / max(total, 1)
            summary["questions_with_an_evidence_search"] = sum(found["with_evidence"] > 0 for found in searched)
        reasons = Counter(detail["stop_reason"] for detail in details if "stop_reason" in detail)
        if reasons:
            summary["stop_reasons"] = dict(reasons)
        if any("extraction_calls" in detail for detail in details):
            summary.update({key: sum(detail.get(key, 0) for detail in details) for key in (
                "extraction_calls", "extraction_tool_calls", "invalid_extraction_calls")})
            summary["memories"] = max(detail.get("memories", 0) for detail in details)
        table[graph] = summary
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(LOCOMO), help="LoCoMo file, either layout (default: %(default)s)")
    parser.add_argument("--graphs", default="sumer,agemem,langmem,rag,full_context,memagent", help="graphs (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=16, help="questions, a seeded subset (default: %(default)s)")
    parser.add_argument("--judge", default=None, help="judge model spec, e.g. smollm2-135m (default: none: F1 and BLEU-1 only)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "locomo"), help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent.evals.harness import ComparisonConfig

    config = ComparisonConfig(
        graphs=tuple(args.graphs.split(",")), task=None, lengths=(), data=(args.data,), limit=args.limit, judge=args.judge, out=args.out
    )
    code = run_compare_benchmark(NAME, vars(args), config)
    from langgraph_memagent.evals.results import read_results

    tools = tool_use(read_results(Path(args.out) / "results.jsonl"))
    write_result(f"{NAME}_tools", {"settings": vars(args), "tool_use": tools})
    for graph, summary in tools.items():
        print(f"{graph}: {summary}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
