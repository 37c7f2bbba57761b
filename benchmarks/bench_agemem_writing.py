"""Which line does the AgeMem policy keep? Its stage-1 writes under ``write_mode="line"``, measured alone.

An AgeMem episode earns its memory reward only when a stored item holds an evidence turn.
Under ``write_mode="line"`` the first build turn after each session is a forced
``add_memory`` whose content is one line of that session (the date header or one turn),
so what the policy writes reduces to a choice of line. For each held-out generated question
(``--split``, as in ``bench_learning``) the sessions that hold its evidence
(``--sessions evidence``, the writing curriculum) or all its sessions arrive in AgeMem's
build stage, and each stored line is classed by its position in its session and by whether
it is one of the question's evidence turns. Reported per decoding (greedy, and sampled at
``--temperature`` with ``--samples`` rollouts a question):

* ``evidence_rate``: the share of stored lines that are evidence turns, in percent, with
  its standard error over questions, beside ``chance_rate``, the share a uniform choice of
  line would give;
* ``questions_with_evidence``: questions with at least one rollout that stored an evidence
  line (the groups in which GRPO's memory reward varies at all);
* ``by_position``: the share of stored lines at each position (0 = the date header,
  1 = the first turn, ...), which shows a position shortcut when it piles up at the top.

With ``--adapter`` a trained checkpoint is measured, and ``--before`` (an earlier result on
the same questions) adds the paired change of the evidence rate. Results:
``benchmarks/results/bench_agemem_writing.json`` (``--name`` changes the file name).

    python -m benchmarks.bench_agemem_writing --questions 16
    python -m benchmarks.bench_agemem_writing --adapter runs/agemem-line --name bench_agemem_writing_line \\
        --before benchmarks/results/bench_agemem_writing.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ._common import OtherLoad, earlier_result, write_result
from langgraph_memagent.training.held_out import SPLITS, held_out_conversations

NAME = "bench_agemem_writing"
SESSIONS = ("evidence", "all")


def stored_lines(operations: list[dict[str, Any]], messages: list[str], evidence_lines: set[str]) -> list[dict[str, Any]]:
    """Each ``add_memory`` of a build stage: the position of its line in the session it followed, whether it is
    evidence, whether it is the session's longest line, and whether keeping the longest line would have kept evidence.

    ``operations`` are the stage's (``arrival`` counts the sessions delivered before the call).

    >>> stored_lines([{"tool": "add_memory", "arrival": 1, "content": "Bo: I ran in Oslo."}],
    ...              ["Session 1:\\nAnn: Hi!\\nBo: I ran in Oslo."], {"Bo: I ran in Oslo."})
    [{'position': 2, 'lines': 3, 'evidence': True, 'evidence_lines': 1, 'longest': True, 'longest_is_evidence': True}]
    """
    from langgraph_memagent.baselines.agemem.tools import message_lines

    picks = []
    for operation in operations:
        if operation.get("tool") != "add_memory" or "content" not in operation:
            continue
        lines = message_lines(messages[operation["arrival"] - 1])
        content = operation["content"]
        longest = max(lines, key=len)  # the first of the longest lines when several tie
        picks.append({
            "position": lines.index(content) if content in lines else None,
            "lines": len(lines),
            "evidence": content in evidence_lines,
            "evidence_lines": len(evidence_lines & set(lines)),
            "longest": content == longest,
            "longest_is_evidence": longest in evidence_lines,
        })
    return picks


def summarize(picks_per_rollout: list[list[dict[str, Any]]], samples: int) -> dict[str, Any]:
    """The evidence rate (percent, standard error over questions), its chance level and the positions of ``samples``-rollout groups.

    Two shortcut checks on line length: ``longest_share``, the share of stored lines that are their
    session's longest, and ``longest_line_rate``, the evidence rate of always keeping the longest line.

    >>> row = summarize([[{"position": 1, "lines": 4, "evidence": False, "evidence_lines": 1, "longest": False, "longest_is_evidence": True}],
    ...                  [{"position": 2, "lines": 4, "evidence": True, "evidence_lines": 1, "longest": True, "longest_is_evidence": True}]], samples=1)
    >>> row["evidence_rate"], row["chance_rate"], row["questions_with_evidence"], row["by_position"]
    (50.0, 25.0, 1, {'1': 50.0, '2': 50.0})
    >>> row["longest_share"], row["longest_line_rate"]
    (50.0, 100.0)
    """
    per_question = []
    for start in range(0, len(picks_per_rollout), samples):
        picks = [pick for rollout in picks_per_rollout[start : start + samples] for pick in rollout]
        per_question.append(100.0 * statistics.fmean(pick["evidence"] for pick in picks) if picks else 0.0)
    picks = [pick for rollout in picks_per_rollout for pick in rollout]
    # A stored line is always one of its session's (the grammar's enum); "off" would flag a mismatch of line splitting.
    positions = Counter(pick["position"] if pick["position"] is not None else "off" for pick in picks)
    ordered = sorted(positions, key=lambda position: (position == "off", position if position != "off" else 0))
    return {
        "evidence_rate": statistics.fmean(per_question),
        "evidence_rate_standard_error": statistics.stdev(per_question) / len(per_question) ** 0.5 if len(per_question) > 1 else 0.0,
        "per_question": per_question,
        "chance_rate": 100.0 * statistics.fmean(pick["evidence_lines"] / pick["lines"] for pick in picks) if picks else 0.0,
        "questions_with_evidence": sum(rate > 0 for rate in per_question),
        "lines_stored": len(picks),
        "by_position": {str(position): 100.0 * positions[position] / len(picks) for position in ordered},
        "longest_share": 100.0 * statistics.fmean(pick["longest"] for pick in picks) if picks else 0.0,
        "longest_line_rate": 100.0 * statistics.fmean(pick["longest_is_evidence"] for pick in picks) if picks else 0.0,
    }


async def _gather(runs: Any) -> list[Any]:
    return await asyncio.gather(*runs)


def _before(parser: argparse.ArgumentParser, path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The decodings of an earlier result on the same questions; a bad file is one parser error."""
    kept, decodings = earlier_result(parser, path, "settings", "decodings")
    same = ("split", "questions", "sessions", "samples", "temperature")
    if any(kept.get(key) != settings[key] for key in same):
        parser.error(f"--before {str(path)!r} ran with {[kept.get(key) for key in same]} for {list(same)}, this run with "
                     f"{[settings[key] for key in same]}")
    return decodings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=tuple(SPLITS), default="dev", help="held-out questions, as in bench_learning (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=16, help="held-out questions (default: %(default)s)")
    parser.add_argument("--sessions", choices=SESSIONS, default="evidence",
                        help="what arrives in stage 1: the evidence sessions (the writing curriculum) or all (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=8, help="sampled rollouts a question (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of those rollouts (default: %(default)s)")
    parser.add_argument("--adapter", help="a trained LoRA checkpoint directory (default: the untrained policy)")
    parser.add_argument("--name", default=NAME, help="results file name under benchmarks/results (default: %(default)s)")
    parser.add_argument("--before", type=Path, help="an earlier result of this benchmark on the same questions: adds the paired change")
    args = parser.parse_args(argv)
    if not args.name.replace("_", "").replace("-", "").isalnum():
        parser.error(f"--name must be a plain file name (letters, digits, '_' and '-'), got {args.name!r}")
    if args.questions < 2:
        parser.error(f"--questions must be at least 2 (a standard error needs two), got {args.questions}")
    if args.samples < 1 or not args.temperature > 0:
        parser.error(f"--samples must be >= 1 and --temperature > 0, got {args.samples} and {args.temperature}")
    settings = {"split": args.split, "questions": args.questions, "sessions": args.sessions, "samples": args.samples,
                "temperature": args.temperature, "adapter": args.adapter, "before": str(args.before) if args.before else None}
    before = _before(parser, args.before, settings) if args.before else None

    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.baselines import load_embeddings
    from langgraph_memagent.baselines.agemem import build_agemem_graph, default_agemem_store, locomo_session_messages, locomo_turn_line
    from langgraph_memagent.baselines.agemem.tools import message_lines
    from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_gain
    from langgraph_memagent.training.grpo_multiconv import load_policy, parse_config
    from langgraph_memagent.training.writing import evidence_sessions

    load = OtherLoad()
    config = parse_config(["--preset", "cpu-agemem", "--agemem_write_mode", "line", "--output_dir", tempfile.mkdtemp(prefix="agemem-writing-")])
    model, tokenizer = load_policy(config)
    if args.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.adapter)
    records = held_out_conversations(args.split, args.questions)
    embeddings = load_embeddings(config.embeddings_model)
    sessions = [locomo_session_messages((evidence_sessions(r) if args.sessions == "evidence" else r)["turns"]) for r in records]
    # Evidence lines cut as add_memory's choices are, so a long evidence turn still matches its stored line.
    evidence = [set(message_lines("\n".join(locomo_turn_line(t) for t in r["turns"] if t["dia_id"] in r["evidence"]))) for r in records]
    decodings: dict[str, Any] = {}
    for name, temperature, samples in (("greedy", 0.0, 1), ("sampled", args.temperature, args.samples)):
        chat = LocalChatModel.from_model(model, tokenizer, temperature=temperature)
        # The build stage as the trainer runs it (cpu-agemem: one turn per session), each rollout with its own memory.
        graph = build_agemem_graph(chat, store=default_agemem_store(embeddings), max_turns_per_message=config.agemem_turns_per_message,
                                   turn_tokens=config.turn_tokens, max_context_tokens=config.max_context_tokens, write_mode="line")
        jobs = [(index, sample) for index in range(len(records)) for sample in range(samples)]
        started = time.perf_counter()
        # All rollouts in flight together, so the engine decodes their calls as one batch.
        outputs = asyncio.run(_gather(graph.ainvoke({"stage": "build", "incoming": sessions[index]}, context={"user_id": f"{name}-{index}-{sample}"})
                                      for index, sample in jobs))
        picks = [stored_lines(out["operations"], sessions[index], evidence[index]) for out, (index, _) in zip(outputs, jobs)]
        decodings[name] = {"temperature": temperature, "samples": samples, "seconds": time.perf_counter() - started, **summarize(picks, samples)}
        if before and name in before:
            change, error = paired_gain(PolicyEvaluation(temperature, 1, [r / 100 for r in before[name]["per_question"]], 0.0),
                                        PolicyEvaluation(temperature, 1, [r / 100 for r in decodings[name]["per_question"]], 0.0))
            decodings[name].update(evidence_rate_before=before[name]["evidence_rate"], evidence_rate_change=change,
                                   evidence_rate_change_standard_error=error)
        row = decodings[name]
        print(f"{name} (T={temperature:g}, {samples} a question): evidence lines {row['evidence_rate']:.1f} +- "
              f"{row['evidence_rate_standard_error']:.1f}% of {row['lines_stored']} stored (chance {row['chance_rate']:.1f}%), "
              f"{row['questions_with_evidence']}/{len(records)} questions with one; by position "
              + ", ".join(f"{key}: {share:.0f}%" for key, share in row["by_position"].items())
              + f"; the session's longest line {row['longest_share']:.0f}% (keeping it always: evidence {row['longest_line_rate']:.1f}%)"
              + (f"; change {row['evidence_rate_change']:+.1f} +- {row['evidence_rate_change_standard_error']:.1f}" if "evidence_rate_change" in row else ""),
              flush=True)
    write_result(args.name, {"settings": settings, "decodings": decodings, "other_cpu_cores": load.cores()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
