"""Whole held-out AgeMem episodes for the untrained policy and trained adapters side by side.

Each policy runs AgeMem's three stages on the same held-out generated conversations
(``bench_learning``'s split, names no training conversation uses), or on LoCoMo conv-30's
questions with ``--split locomo``: every session arrives and the policy stores, a distractor
follows, then the question is asked and answered from memory. Both decodings the issue asks
for are run: greedy, and sampled at T = 1 with ``--samples`` rollouts a question. Reported per
policy and decoding, from ``agemem_measures``: the stored memory items per conversation and
their recall of the question's evidence turns (the share some item holds), the valid-call
rate, retrievals, answer F1 (the judge-free stand-in for AgeMem's task part) and the composite
reward; for each adapter, each measure's change from the untrained policy paired by question
with its standard error. Shortcut checks: F1 without the yes/no questions, answers that score
with no retrieval, and answers that score while memory holds no evidence turn.

Each policy's result is written as soon as it is measured, and a rerun with the same
settings keeps the policies already measured, so an interrupted run resumes. A later seed's run can
take the untrained policy from an earlier file of the same settings with ``--untrained-from``.

    python -m benchmarks.bench_agemem_episodes --split dev --questions 16 \\
        --adapters runs/agemem-write45/checkpoint-4 -- --agemem_write_mode line

Options after ``--`` are the trainer's (``cpu-agemem`` preset first), so the graph is the one a
training run evaluates. With ``-- --agemem_sessions given-memory`` stage 1 is skipped and every
episode starts from a memory that holds the question's evidence turns among other turns
(the answering curriculum's rollout): what the answer stage makes of a known memory. Results: ``benchmarks/results/<--name>.json``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import _common
from ._common import OtherLoad, earlier_result, write_result
from langgraph_memagent.training.held_out import tool_use
from .bench_sumer_episodes import checked_episode_args, episode_parser, episode_records, shortcut_checks
from .learning_report import scored_by_f1

NAME = "bench_agemem_episodes"
DECODINGS = {"greedy": 0.0, "sampled": 1.0}
REPORTED = ("memory_items", "memory_recall", "valid_call_rate", "searches", "retrieval_recall", "f1")


def answer_shortcuts(records: list[dict[str, Any]], evaluation: dict[str, Any]) -> dict[str, Any]:
    """``shortcut_checks`` on the answers' F1 (AgeMem's reward pays for context edits without any answer); the
    rollouts whose answer scores although no stored item holds an evidence turn (the answer came from elsewhere);
    and the scoring answers beside the exact ones, since F1 pays an echo around the gold in part.

    >>> records = [{"answers": ["No"]}, {"answers": ["Oslo"]}, {"answers": ["May"]}]
    >>> answer_shortcuts(records, {"rewards": [0.9, 0.5, 0.1], "answers": ["no", "in Oslo", "June"],
    ...     "measures": [{"f1": 1.0, "memory_recall": 0.0, "searches": 0},
    ...     {"f1": 0.5, "memory_recall": 1.0, "searches": 1}, {"f1": 0.0, "memory_recall": 0.0, "searches": 0}]})
    {'yes_no_questions': 1, 'f1_without_yes_no': 25.0, 'scoring_answers_without_search': 1, 'scoring_answers_without_evidence_in_memory': 1, 'scoring_answers': 2, 'exact_answers': 1}
    """
    from langgraph_memagent.evals.scoring import exact_match

    measures = evaluation["measures"]
    rollouts = len(measures) // len(records)
    golds = [record["answers"] for record in records for _ in range(rollouts)]
    return {
        **shortcut_checks(records, scored_by_f1(evaluation)),
        "scoring_answers_without_evidence_in_memory": sum(m["f1"] > 0 and not m["memory_recall"] for m in measures),
        "scoring_answers": sum(m["f1"] > 0 for m in measures),
        "exact_answers": sum(any(exact_match(answer or "", gold) for gold in gold_answers)
                             for answer, gold_answers in zip(evaluation["answers"], golds)),
    }


def _kept_policies(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The policies an earlier run with these settings measured, so a rerun resumes; none otherwise."""
    if not path.is_file():
        return {}
    earlier = json.loads(path.read_text())
    return earlier["policies"] if earlier.get("settings") == settings else {}


def untrained_from(parser: argparse.ArgumentParser, path: Path, header: dict[str, Any]) -> dict[str, Any]:
    """The untrained policy's evaluations from another results file of the same settings and questions, so a later
    seed's file pairs its adapters with the baseline already measured instead of decoding it again; a bad or other
    file is one parser error."""
    settings, questions, policies = earlier_result(parser, path, "settings", "questions", "policies", option="--untrained-from")
    if settings != header["settings"]:
        parser.error(f"--untrained-from: {path} was measured with settings {settings}, expected {header['settings']}")
    if questions != header["questions"]:
        parser.error(f"--untrained-from: {path} asked other questions than this run's {len(header['questions'])}")
    if "untrained" not in policies:
        parser.error(f"--untrained-from: {path} has no untrained policy")
    return policies["untrained"]


def main(argv: list[str] | None = None) -> int:
    parser = episode_parser(NAME, __doc__.splitlines()[0], "cpu-agemem")
    parser.add_argument("--samples", type=int, default=1, help="sampled rollouts a question at T = 1; 0 = greedy only (default: %(default)s)")
    parser.add_argument("--untrained-from", type=Path, metavar="FILE",
                        help="keep the untrained policy from this earlier results file of the same settings instead of measuring it again")
    args = checked_episode_args(parser, argv)
    if args.samples < 0:
        parser.error(f"--samples must be >= 0 (0 = greedy only), got {args.samples}")
    from langgraph_memagent.training.evaluation import PolicyEvaluation, evaluate_policy, paired_gain
    from langgraph_memagent.training.grpo_multiconv import load_policy, parse_config
    from langgraph_memagent.training.rollout_graphs import default_reward
    from langgraph_memagent.training.tool_use import mean_measures

    output_dir = tempfile.mkdtemp(prefix="agemem-episodes-")  # the config needs one; nothing is written there
    atexit.register(shutil.rmtree, output_dir, True)
    try:
        config = parse_config(["--preset", "cpu-agemem", "--output_dir", output_dir, *args.trainer_args])
    except ValueError as error:
        parser.error(str(error))
    if config.graph != "agemem":
        parser.error(f"this benchmark runs AgeMem episodes: drop --graph {config.graph!r}")
    if config.agemem_sessions not in ("all", "given-memory") or config.write_curriculum:
        parser.error(f"episodes are whole or start from a given memory: drop --agemem_sessions {config.agemem_sessions!r} and --write_curriculum")
    load = OtherLoad()
    model, tokenizer = load_policy(config)
    records = episode_records(config, tokenizer, args.split, args.questions)
    reward = default_reward(config, shaped=False)
    decodings = {name: temperature for name, temperature in DECODINGS.items() if temperature == 0 or args.samples}
    settings = {"split": args.split, "questions": len(records), "samples": args.samples, "trainer_args": args.trainer_args}
    header = {"settings": settings, "questions": [r["question"] for r in records], "gold": [r["answers"] for r in records]}
    policies = _kept_policies(_common.RESULTS_DIR / f"{args.name}.json", settings)
    if args.untrained_from and "untrained" not in policies:
        policies = {"untrained": untrained_from(parser, args.untrained_from, header), **policies}

    def measure(policy: Any, name: str) -> dict[str, Any]:
        result = {}
        for decoding, temperature in decodings.items():
            print(f"{name}, {decoding}:", flush=True)
            result[decoding] = evaluate_policy(
                policy, tokenizer, records, config, temperature=temperature, rollouts_per_question=args.samples if temperature else 1,
                reward_fn=reward, progress=True,
            ).to_dict()
        return result

    from peft import PeftModel

    for name in ["untrained", *map(str, args.adapters)]:
        if name in policies:
            print(f"{name}: kept from an earlier run with these settings", flush=True)
            continue
        policies[name] = measure(model if name == "untrained" else PeftModel.from_pretrained(load_policy(config)[0], name), name)
        write_result(args.name, {**header, "policies": policies, "other_cpu_cores": load.cores()})
    # Derived from the kept evaluations on every run, so a resumed run reports them as a fresh one does.
    for result in policies.values():
        result["shortcuts"] = {decoding: answer_shortcuts(records, result[decoding]) for decoding in decodings}
    untrained = policies["untrained"]
    for name in [str(path) for path in args.adapters]:
        policies[name]["changes"] = tool_use(untrained, {decoding: policies[name][decoding] for decoding in decodings})
        for decoding in decodings:
            change, error = paired_gain(PolicyEvaluation.from_dict(untrained[decoding]), PolicyEvaluation.from_dict(policies[name][decoding]))
            policies[name]["changes"].setdefault(decoding, {})["reward_points"] = {"change": change, "standard_error": error}
    write_result(args.name, {**header, "policies": policies, "other_cpu_cores": load.cores()})
    for name, result in policies.items():
        for decoding in decodings:
            evaluation, changes = result[decoding], result.get("changes", {}).get(decoding, {})
            means = mean_measures(evaluation["measures"])
            parts = []
            for measure in REPORTED:
                value = means.get(measure)
                text = "n/a" if value is None else f"{value:.2f}"
                if measure in changes:
                    text += f" ({changes[measure]['change']:+.2f} ± {changes[measure]['standard_error']:.2f})"
                parts.append(f"{measure} {text}")
            shortcuts = result["shortcuts"][decoding]
            reward_text = f"reward {evaluation['accuracy']:.1f}"
            if "reward_points" in changes:
                reward_text += f" ({changes['reward_points']['change']:+.1f} ± {changes['reward_points']['standard_error']:.1f})"
            print(f"{name}, {decoding}: {reward_text}; " + ", ".join(parts)
                  + f"; scoring answers {shortcuts['scoring_answers']} ({shortcuts['exact_answers']} exact), without evidence in "
                  f"memory {shortcuts['scoring_answers_without_evidence_in_memory']}, without a retrieval {shortcuts['scoring_answers_without_search']}")
    print(f"other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
