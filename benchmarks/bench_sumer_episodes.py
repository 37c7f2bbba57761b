"""Whole held-out SUMER episodes, greedy, for the untrained policy and trained adapters side by side.

Each policy answers the same held-out generated conversations (``bench_learning``'s split,
names no training conversation uses) through the whole graph: searches, then ``submit_answer``.
For each adapter it reports the change from the untrained policy, paired by question with its
standard error, of the answer F1 (SUMER's judge-free stand-in for J x F1), evidence recall of
the searches, searches, submit rate and valid-call rate, and the shortcut checks: F1 without
the yes/no questions (a constant "No" scores on those), answers given without any search,
and ``learning_report``'s yes/no constants, year-only dates and F1 change without either
(``f1_without_shortcuts``). With several adapters each change is also given as mean ± sd
across them (``across_adapters``). Every answer and every search call (mode, query,
speaker, session, k, hits: ``search_calls`` in each rollout's measures) is kept in the results file. It is the
ablation of a curriculum: is the gain the last stage's, or the earlier adapter's under the
same graph settings? With ``--split locomo``
the questions are the real LoCoMo conv-30's instead (the seeded subset ``bench_locomo --limit``
answers): the transfer check of adapters trained on generated conversations only.

    python -m benchmarks.bench_sumer_episodes --split dev --questions 16 \\
        --adapters runs/sumer-read1 runs/sumer-stage2 -- --search_context 0 --max_context_tokens 6144 \\
        --forced_answer_call submit --sumer_require_submit false

Options after ``--`` are the trainer's (``cpu-sumer`` preset first), so the graph is the one a
training run evaluates. Results: ``benchmarks/results/<--name>.json``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from ._common import OtherLoad, write_result
from langgraph_memagent.evals.stats import across
from langgraph_memagent.training.held_out import GROUP_MEASURES, SPLITS, by_question_group, held_out_records, is_yes_no, locomo_records, tool_use
from .learning_report import answer_shortcuts, f1_without_shortcuts

NAME = "bench_sumer_episodes"
LOCOMO_SPLIT = "locomo"


def shortcut_checks(records: list[dict], evaluation: dict[str, Any]) -> dict[str, Any]:
    """F1 in points without the yes/no questions, and how many answers came without a search.

    >>> records = [{"answers": ["No"]}, {"answers": ["piano"]}]
    >>> evaluation = {"rewards": [1.0, 0.5], "measures": [{"searches": 0}, {"searches": 2}], "answers": ["no", "the piano"]}
    >>> shortcut_checks(records, evaluation)
    {'yes_no_questions': 1, 'f1_without_yes_no': 50.0, 'scoring_answers_without_search': 1}
    """
    kept = [reward for record, reward in zip(records, evaluation["rewards"]) if not is_yes_no(record)]
    unsearched = sum(reward > 0 and measures["searches"] == 0 for reward, measures in zip(evaluation["rewards"], evaluation["measures"]))
    return {
        "yes_no_questions": len(records) - len(kept),
        "f1_without_yes_no": 100.0 * sum(kept) / len(kept) if kept else None,
        "scoring_answers_without_search": unsearched,
    }


def episode_records(config: Any, tokenizer: Any, split: str, questions: int) -> list[dict]:
    """``questions`` held-out generated conversations of ``split``, or of LoCoMo conv-30 for ``"locomo"`` (all 81 at most)."""
    return locomo_records(questions) if split == LOCOMO_SPLIT else held_out_records(config, tokenizer, split, questions)


def episode_parser(name: str, description: str, preset: str) -> argparse.ArgumentParser:
    """The options every episode benchmark takes: the held-out split, questions, adapters, results name, trainer options."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=description)
    parser.add_argument(
        "--split", choices=(*SPLITS, LOCOMO_SPLIT), default="dev",
        help=f"held-out questions, as in bench_learning, or {LOCOMO_SPLIT!r}: LoCoMo conv-30's (default: %(default)s)",
    )
    parser.add_argument("--questions", type=int, default=16, help="held-out questions (default: %(default)s)")
    parser.add_argument("--adapters", nargs="*", type=Path, default=[],
                        help="trained LoRA adapter directories to compare (none: the untrained policy alone, kept for a later run)")
    parser.add_argument("--name", default=name, help="results file name under benchmarks/results (default: %(default)s)")
    parser.add_argument("trainer_args", nargs="*", help=f"trainer options after --, on top of the {preset} preset")
    return parser


def checked_episode_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser``'s options, each bad one refused in one line."""
    args = parser.parse_args(argv)
    if args.questions < 2:
        parser.error(f"--questions must be at least 2 (a standard error needs two), got {args.questions}")
    if not args.name.replace("_", "").replace("-", "").isalnum():
        parser.error(f"--name must be a plain file name (letters, digits, '_' and '-'), got {args.name!r}")
    missing = [str(path) for path in args.adapters if not (path / "adapter_config.json").is_file()]
    if missing:
        parser.error(f"--adapters must be saved LoRA adapter directories (with adapter_config.json), got {missing}")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = episode_parser(NAME, __doc__.splitlines()[0], "cpu-sumer")
    args = checked_episode_args(parser, argv)
    from langgraph_memagent.training.evaluation import PolicyEvaluation, evaluate_policy
    from langgraph_memagent.training.grpo_multiconv import load_policy, parse_config
    from langgraph_memagent.training.rollout_graphs import default_reward
    from langgraph_memagent.training.tool_use import mean_measures

    try:
        config = parse_config(["--preset", "cpu-sumer", "--output_dir", tempfile.mkdtemp(prefix="sumer-episodes-"), *args.trainer_args])
    except ValueError as error:
        parser.error(str(error))
    if config.reading_memory:
        parser.error(f"episodes are whole: drop --reading_memory {config.reading_memory!r}")
    if config.search_curriculum:
        parser.error("episodes are whole: drop --search_curriculum")
    load = OtherLoad()
    model, tokenizer = load_policy(config)
    records = episode_records(config, tokenizer, args.split, args.questions)
    reward = default_reward(config, shaped=False)

    def measure(policy: Any, name: str) -> dict[str, Any]:
        print(f"{name}:", flush=True)
        evaluation = evaluate_policy(policy, tokenizer, records, config, temperature=0.0, reward_fn=reward, progress=True).to_dict()
        return {"greedy": evaluation, "shortcuts": shortcut_checks(records, evaluation)}

    policies = {"untrained": measure(model, "untrained")}
    from peft import PeftModel

    for path in args.adapters:
        policies[str(path)] = measure(PeftModel.from_pretrained(load_policy(config)[0], str(path)), str(path))
    untrained = policies["untrained"]
    for name, result in policies.items():
        if name != "untrained":
            result["changes"] = tool_use({"greedy": untrained["greedy"]}, {"greedy": result["greedy"]})["greedy"]
            result["by_question_group"] = by_question_group(
                PolicyEvaluation.from_dict(untrained["greedy"]), PolicyEvaluation.from_dict(result["greedy"]), records, GROUP_MEASURES
            )
            result["answer_shortcuts"] = answer_shortcuts(records, result["greedy"])
            result["f1_without_shortcuts"] = f1_without_shortcuts(records, untrained["greedy"], result["greedy"])
    adapters = [result for name, result in policies.items() if name != "untrained"]
    across_adapters = {
        "f1": across([100 * result["changes"]["f1"]["change"] for result in adapters]),
        "f1_without_shortcuts": across([result["f1_without_shortcuts"]["change"] for result in adapters]),
        "evidence_recall": across([100 * result["changes"]["evidence_recall"]["change"] for result in adapters]),
    }
    settings = {"split": args.split, "questions": len(records), "trainer_args": args.trainer_args}
    write_result(args.name, {"settings": settings, "questions": [r["question"] for r in records], "gold": [r["answers"] for r in records],
                             "policies": policies, "across_adapters": across_adapters, "other_cpu_cores": load.cores()})
    for name, result in policies.items():
        shortcuts = result["shortcuts"]
        # The F1 the changes compare; the reward differs where an episode gave no answer (-1, SUMER's rule).
        answer_f1 = 100 * mean_measures(result["greedy"]["measures"])["f1"]
        line = f"{name}: greedy F1 {answer_f1:.1f}, SUMER reward {result['greedy']['accuracy']:.1f}"
        if "changes" in result:
            change = result["changes"]
            line += (f" ({100 * change['f1']['change']:+.1f} ± {100 * change['f1']['standard_error']:.1f}), evidence recall "
                     f"{100 * change['evidence_recall']['after']:.1f}% ({100 * change['evidence_recall']['change']:+.1f} ± "
                     f"{100 * change['evidence_recall']['standard_error']:.1f})")
        without = shortcuts["f1_without_yes_no"]
        print(f"{line}; without the {shortcuts['yes_no_questions']} yes/no questions {without:.1f}; "
              f"scoring answers without a search {shortcuts['scoring_answers_without_search']}")
        for group, parts in result.get("by_question_group", {}).items():
            print(f"  {group} ({parts['f1']['questions']}): F1 {parts['f1']['change']:+.1f} ± {parts['f1']['standard_error']:.1f}")
        if "f1_without_shortcuts" in result:
            free, yes_no, temporal = result["f1_without_shortcuts"], result["answer_shortcuts"]["yes_no"], result["answer_shortcuts"]["temporal"]
            print(f"  without yes/no and year-only answers ({free['questions']}): F1 {free['change']:+.1f} ± {free['standard_error']:.1f}; "
                  f"yes/no answered {yes_no['most_common_answer']!r} {yes_no['most_common_count']} of {yes_no['questions']}, "
                  f"{temporal['year_alone_scoring']} of {temporal['scoring']} scoring temporal answers a year alone")
    if len(adapters) > 1:
        print("across adapters (mean ± sd): " + ", ".join(
            f"{name} {summary['mean']:+.1f} ± {summary['sd']:.1f}" for name, summary in across_adapters.items()))
    print(f"other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
