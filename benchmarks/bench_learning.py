"""Does multi-conversation GRPO learn? SmolLM2-135M + LoRA, ``--preset cpu-smoke``, before vs after.

1. Held-out questions, from the preset's task: ``--split dev`` (seed 10000, the training
   key vocabulary; for tuning) or ``--split test`` (seed 20000 and its own needle keys,
   ``key_pool="test"``, which no training question uses; evaluate a reported recipe once).
   ``--split test2`` (seed 30000, like test) is a second untouched test set, drawn after
   32 test questions proved too noisy to compare runs: for evaluating kept adapters once on
   more questions (``--eval-questions 128``). For generated conversations, ``--split
   dev-varied`` asks dev's questions about dev's facts in other words (several phrasings,
   often inside longer turns, as LoCoMo's are), and ``--split test-varied`` (seed 40000) is an
   untouched test set in that wording.
   With the preset's ``gold_position="balanced"`` the gold needle is first in exactly half.
2. The untrained policy answers them: sampled (temperature 1.0, ``--eval-samples``
   rollouts per question), sampled at the training temperature when that is not 1.0
   (the rollouts GRPO learns from), and greedy.
3. ``MultiConvGRPOTrainer`` trains with the preset (options after ``--`` go to the
   trainer, e.g. ``-- --max_steps 10 --learning_rate 5e-5``). With ``--then-steps N``
   a second trainer resumes from the last checkpoint and trains N more optimizer steps
   with rollouts at ``--then-temperature`` (a temperature curriculum: TRL bakes the
   temperature into the loss's fused LM head, so it cannot change within one trainer).
4. The trained policy answers the same questions the same ways.

Accuracy is the training reward (the preset's lenient verifier: the gold number in the
final reply, no distractor number), reported overall and split by where the gold needle
sits (``gold_rank`` 0 = first), since copying the first needle is the shortcut to watch.
Each change is reported with its standard error, paired by held-out question
(``paired_gain``). ``--seeds 1 2 3`` trains one run per seed (``seed`` and ``data_seed``;
the held-out set stays the same) under ``<output-dir>/seed-<n>`` and reports each change as
mean ± sd across runs beside each run's paired error. Results:
``benchmarks/results/bench_learning_<split>.json`` (every run, and the summary across runs),
each run's ``result.json`` and reward curve under its output directory, the first run's curve
with the temperature curriculum marked in ``benchmarks/figures/learning_reward_curve.png``.
Interrupted runs resume: a finished run's ``result.json`` is kept when its settings match,
each run's "before" evaluation is kept in its ``before.json``, and training continues from
its last checkpoint.

Tool use (``--preset cpu-sumer``: SUMER on generated LoCoMo-shaped conversations). The
held-out questions are generated conversations with the held-out entity names (people,
places, pets no training conversation names) and the split's seed. Accuracy is SUMER's
paper reward (judge-free F1 stand-in, -1 without a submitted answer; any opt-in evidence
shaping is left out), and per question the benchmark reports the valid-call rate, searches,
evidence recall of the searches, the submit rate and the answer's F1, each before and after
with its paired standard error (``tool_use``). ``--locomo-questions N`` also answers N
seeded questions of LoCoMo conv-30 greedily before and after (the real file, no tuning on
it). After a reading or search curriculum (``-- --reading_memory ...``, ``--search_curriculum true``)
the held-out episodes are still whole. Each run also keeps the greedy and sampled F1 and evidence-recall changes by question
group (the generator's categories, the questions that are not yes/no, each half;
``by_question_group``) and the F1 of constant "yes" and "no" answers (``constant_answer_f1``);
``python -m benchmarks.learning_report`` gives them across seeds. Results:
``bench_learning_sumer_<split>.json``, figures
``benchmarks/figures/learning_sumer_reward_curve.png`` and ``learning_sumer_tool_use.png``;
``--tag run19`` names them ``bench_learning_sumer_<split>_run19.json`` and
``learning_sumer_run19_*.png`` instead, so one run does not overwrite another's.

Memory tools (``--preset cpu-agemem``): AgeMem on the same conversations; accuracy is its
composite reward (answer, context and memory parts, judge-free), and the tool use adds the
long-term items stored per conversation and their recall of the evidence turns
(``memory_items``, ``memory_recall``). Results: ``bench_learning_agemem_<split>.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import re
import resource
import shutil
from pathlib import Path
from typing import Any

from langgraph_memagent.evals.stats import across_runs
from langgraph_memagent.training.held_out import GROUP_MEASURES, SPLITS, by_question_group, constant_answer_f1, held_out_records, locomo_records, tool_use

from ._common import OtherLoad, write_result


NAME = "bench_learning"
FIGURES = Path(__file__).resolve().parent / "figures"
# Config fields the held-out evaluation depends on, and those that only shape training.
CONFIG_KEYS = (
    "task", "target_tokens", "num_keys", "gold_position", "chunk_tokens", "memory_tokens", "answer_tokens", "reward_metric", "temperature",
    "graph", "tool_choice", "max_turns", "turn_tokens", "max_context_tokens", "forced_answer_call", "sumer_require_submit", "search_context",
    "search_reply",
)
# AgeMem's graph options, in the settings of AgeMem runs only (earlier runs' kept files stay valid).
AGEMEM_KEYS = ("agemem_turns_per_message", "max_turns", "agemem_distractor_messages", "agemem_write_mode")
# Options added later, in the settings only when not at their default (earlier runs' kept files stay valid).
LATER_KEYS = {"query_style": "free", "answer_rule": "none", "agemem_answer_mode": "free", "agemem_retrieve_reply": "scored"}
TRAINING_KEYS = (
    "num_generations", "per_device_train_batch_size", "steps_per_generation", "learning_rate", "beta", "lora_r", "lora_alpha", "max_steps",
    "stop_after_steps", "dynamic_sampling_rounds", "seed", "data_seed", "key_pool", "evidence_reward_weight", "loss_aggregation", "reading_memory", "search_curriculum", "agemem_sessions",
    "write_curriculum", "init_adapter",
)
DYNAMIC_SAMPLING_KEYS = ("dynamic_sampling/first_draw_reward", "dynamic_sampling/replaced_groups")
LOGGED = ("step", "temperature", "reward", "reward_std", "kl", "frac_reward_zero_std", *DYNAMIC_SAMPLING_KEYS)


def with_phase_temperatures(log: list[dict], phases: list[dict]) -> list[dict]:
    """Each logged entry with the rollout temperature of its phase, unless it logged its own.

    Checkpoints written before the trainer logged ``temperature`` still get a curve with the
    curriculum marked: phase ``i`` covers the steps up to its ``max_steps``.
    """
    def phase_temperature(step: int) -> float:
        return next((phase["temperature"] for phase in phases if step <= phase["max_steps"]), phases[-1]["temperature"])

    return [{"temperature": phase_temperature(entry["step"]), **entry} for entry in log]


def _evaluate(model: Any, tokenizer: Any, records: list[dict], config: Any, samples: int, locomo: list[dict]) -> dict[str, Any]:
    """Accuracy sampled at T=1 (the issue's bar), at the training temperature when that differs, and greedy;
    greedy on ``locomo`` questions when given. Accuracy is the paper reward, without any opt-in shaping."""
    from langgraph_memagent.training.evaluation import evaluate_policy
    from langgraph_memagent.training.rollout_graphs import default_reward

    runs = {"sampled": (1.0, records), "training_temperature": (config.temperature, records), "greedy": (0.0, records)}
    if config.temperature in (0.0, 1.0):
        del runs["training_temperature"]
    if locomo:
        runs["locomo_greedy"] = (0.0, locomo)
    reward = default_reward(config, shaped=False)
    result = {}
    for name, (temperature, questions) in runs.items():
        evaluation = evaluate_policy(
            model, tokenizer, questions, config, temperature=temperature, rollouts_per_question=1 if temperature == 0 else samples,
            reward_fn=reward, progress=True,
        )
        result[name] = evaluation.to_dict()
        # Printed as each finishes: a run killed later (e.g. out of memory) still shows it.
        print(f"  {name} (T={temperature:g}): {result[name]['accuracy']:.1f}%; peak memory {_peak_rss_gb():.1f} GB", flush=True)
    return result


def whole_episodes(config: Any) -> Any:
    """``config`` for the held-out evaluation: always whole episodes, also after a reading
    curriculum (``reading_memory``; its reading step alone is ``bench_sumer_reading``'s), a search one
    (``search_curriculum``) or a writing one (``agemem_sessions``, ``write_curriculum``)."""
    episodes = copy.copy(config)
    episodes.reading_memory = None
    episodes.search_curriculum = False
    episodes.write_curriculum = False
    episodes.agemem_sessions = "all"
    return episodes


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


def _train_seconds(trainer: Any) -> float | None:
    return trainer.state.log_history[-1].get("train_runtime")


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    from langgraph_memagent.agents.atomic_files import write_atomic

    write_atomic(path, json.dumps(payload, indent=2) + "\n")


def by_gold_rank(evaluation: dict[str, Any], ranks: list[int | None]) -> dict[str, float]:
    """Accuracy (percent) of ``evaluation`` over the questions whose gold needle has each rank."""
    per_question = evaluation["rollouts_per_question"]
    rewards = evaluation["rewards"]
    split: dict[str, list[float]] = {}
    for index, rank in enumerate(ranks):
        split.setdefault(str(rank), []).extend(rewards[index * per_question : (index + 1) * per_question])
    return {rank: 100.0 * sum(values) / len(values) for rank, values in sorted(split.items())}


def _kept_or_new_before(path: Path, settings: dict, measure: Any) -> dict:
    if path.is_file():
        before = json.loads(path.read_text())
        if before.get("settings") != settings:
            raise SystemExit(f"{path} was measured with other settings ({before.get('settings')}), not {settings}: use another --output-dir or delete it")
        print(f"before training (kept from {path}): sampled {before['sampled']['accuracy']:.1f}%, greedy {before['greedy']['accuracy']:.1f}%")
        return before
    print("before training:", flush=True)
    before = {"settings": settings, **measure()}
    _write_json(path, before)
    return before


def kept_result(path: Path, settings: dict, training: dict, phases: list[tuple[float, int]]) -> dict | None:
    """The finished run at ``path`` when it was measured with these settings, training and phases; else None.

    >>> kept_result(Path("/nonexistent/result.json"), {}, {}, []) is None
    True
    """
    if not path.is_file():
        return None
    result = json.loads(path.read_text())
    same = (
        {key: result["settings"].get(key) for key in settings} == settings
        and result["training"] == training
        and [(phase["temperature"], phase["max_steps"]) for phase in result["phases"]] == phases
    )
    return result if same else None


def _train_phases(args: argparse.Namespace, trainer_args: list[str], output_dir: Path, model: Any, tokenizer: Any) -> tuple[Any, list, list]:
    """Train every phase (resuming from checkpoints); the trained policy, its log and the phases."""
    from transformers.trainer_utils import get_last_checkpoint

    from langgraph_memagent.training.grpo_multiconv import load_policy, parse_config, policy_to_train, training_dataset
    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    base = ["--preset", args.preset, "--output_dir", str(output_dir), *trainer_args]
    configs = [parse_config(base)]
    if args.then_steps:
        configs.append(parse_config([*base, "--temperature", str(args.then_temperature), "--max_steps", str(configs[0].max_steps + args.then_steps)]))
    phases, trainer = [], None
    for number, config in enumerate(configs):
        last = get_last_checkpoint(str(output_dir))
        ran = None
        # A checkpoint at max_steps (or stop_after_steps) means the phase is done: transformers' Trainer would still train one step.
        if last is None or int(last.rsplit("-", 1)[1]) < config.final_step:
            policy, peft_config = policy_to_train(model if number == 0 else load_policy(config)[0], config)
            ran = MultiConvGRPOTrainer(
                policy, args=config, train_dataset=training_dataset(config, tokenizer), processing_class=tokenizer, peft_config=peft_config,
            )
            ran.train(resume_from_checkpoint=last)
        phases.append({"temperature": config.temperature, "max_steps": config.max_steps, "train_seconds": _train_seconds(ran) if ran else None})
        trainer = ran or trainer
    if trainer is not None:
        trainer.save_model(str(output_dir))
        return trainer.model, trainer.state.log_history, phases
    from peft import PeftModel  # every phase had finished before: the last checkpoint's adapter

    last = get_last_checkpoint(str(output_dir))
    policy = PeftModel.from_pretrained(load_policy(configs[-1])[0], last)
    return policy, json.loads((Path(last) / "trainer_state.json").read_text())["log_history"], phases


def run_one(args: argparse.Namespace, trainer_args: list[str], output_dir: Path) -> dict[str, Any]:
    """Before, training and after for one run; its result (also written to ``<output_dir>/result.json``)."""
    from langgraph_memagent.evals.conversations import CONVERSATIONS_TASK
    from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_gain
    from langgraph_memagent.training.grpo_multiconv import load_policy, parse_config
    from langgraph_memagent.training.reward_curve import plot_reward_curve, plot_tool_use_curve

    output_dir.mkdir(parents=True, exist_ok=True)
    config = parse_config(["--preset", args.preset, "--output_dir", str(output_dir), *trainer_args])
    if config.task != CONVERSATIONS_TASK and config.key_pool != "train":
        raise SystemExit(f"training draws needle keys from key_pool {config.key_pool!r}: held-out keys are only unseen with --key_pool train")
    if args.then_steps and config.stop_after_steps:
        raise SystemExit(f"--then-steps {args.then_steps} needs the first phase to end at max_steps; drop --stop_after_steps {config.stop_after_steps}")
    model, tokenizer = load_policy(config)
    episodes = whole_episodes(config)
    held_out = held_out_records(config, tokenizer, args.split, args.eval_questions)
    locomo = locomo_records(args.locomo_questions)
    ranks = [record.get("gold_rank") for record in held_out]
    # What the "before" numbers depend on: a kept before.json must match this run.
    settings = {"split": args.split, **SPLITS[args.split], "eval_questions": args.eval_questions, "eval_samples": args.eval_samples,
                "locomo_questions": args.locomo_questions,
                **{key: getattr(config, key) for key in CONFIG_KEYS + (AGEMEM_KEYS if config.graph == "agemem" else ())},
                **{key: getattr(config, key) for key, default in LATER_KEYS.items() if getattr(config, key) != default}}
    training = {key: getattr(config, key) for key in TRAINING_KEYS}
    planned = [(config.temperature, config.max_steps)] + ([(args.then_temperature, config.max_steps + args.then_steps)] if args.then_steps else [])
    kept = kept_result(output_dir / "result.json", settings, training, planned)
    if kept is not None:
        print(f"finished run kept from {output_dir / 'result.json'}: changes {kept['changes_points']}", flush=True)
        return kept
    before = _kept_or_new_before(output_dir / "before.json", settings, lambda: _evaluate(model, tokenizer, held_out, episodes, args.eval_samples, locomo))
    policy, log_history, phases = _train_phases(args, trainer_args, output_dir, model, tokenizer)
    print("after training:", flush=True)
    after = _evaluate(policy, tokenizer, held_out, episodes, args.eval_samples, locomo)
    log = with_phase_temperatures([entry for entry in log_history if "reward" in entry], phases)
    plot_reward_curve(log, output_dir / "learning_reward_curve.png")
    plot_tool_use_curve(log, output_dir / "learning_tool_use.png")
    # Each decoding's change, paired by question, with its standard error in points.
    changes = {name: paired_gain(PolicyEvaluation.from_dict(before[name]), PolicyEvaluation.from_dict(after[name])) for name in after}
    result = {
        "settings": {**vars(args), **settings},
        "training": training,
        "phases": phases,
        "before": before,
        "after": after,
        "changes_points": {name: change for name, (change, _) in changes.items()},
        "change_standard_errors_points": {name: error for name, (_, error) in changes.items()},
        "by_gold_rank": {
            name: {"before": by_gold_rank(before[name], ranks), "after": by_gold_rank(after[name], ranks)}
            for name in after if name != "locomo_greedy" and any(rank is not None for rank in ranks)
        },
        "tool_use": tool_use(before, after),
        # Conversations only: by category and position, beside what a constant answer scores.
        **({
            "by_question_group": {
                name: by_question_group(PolicyEvaluation.from_dict(before[name]), PolicyEvaluation.from_dict(after[name]), held_out, GROUP_MEASURES)
                for name in after if name != "locomo_greedy"
            },
            "constant_answer_f1": constant_answer_f1(held_out),
        } if config.task == CONVERSATIONS_TASK else {}),
        "reward_log": [
            {key: value for key, value in entry.items() if key in LOGGED or key.startswith(("tools/", "reward/"))} for entry in log
        ],
        "train_seconds": sum(phase["train_seconds"] or 0 for phase in phases),
        "peak_rss_gb": _peak_rss_gb(),
    }
    _write_json(output_dir / "result.json", result)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=tuple(SPLITS), default="dev", help="held-out set: dev (or dev-varied, the same facts in other words) for tuning; test, test2, test3, test4 or test-varied once per reported recipe (default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="*", default=None, help="one training run per seed (seed and data_seed); default: one run with the preset's")
    parser.add_argument("--eval-questions", type=int, default=32, help="held-out questions (default: %(default)s)")
    parser.add_argument("--eval-samples", type=int, default=4, help="sampled rollouts per held-out question (default: %(default)s)")
    parser.add_argument("--output-dir", default="runs/learning", help="trainer output directory (default: %(default)s)")
    parser.add_argument("--preset", default="cpu-smoke", help="trainer preset (default: %(default)s)")
    parser.add_argument("--then-steps", type=int, default=0, help="optimizer steps of a second phase (default: none)")
    parser.add_argument(
        "--then-temperature", type=float, default=1.0, help="rollout temperature of the second phase (default: %(default)s)"
    )
    parser.add_argument(
        "--locomo-questions", type=int, default=0,
        help="also answer this many seeded LoCoMo conv-30 questions greedily before and after (a tool graph's transfer check; default: none)",
    )
    parser.add_argument(
        "--tag", default="",
        help="suffix of the results file and the figures, so a run keeps its own (e.g. run19 -> bench_learning_sumer_test2_run19.json; default: none)",
    )
    parser.add_argument("trainer_args", nargs="*", help="options for the trainer, after --")
    args = parser.parse_args(argv)
    if args.tag and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.tag):
        parser.error(f"--tag must be letters, digits, '_', '.' or '-' (it is part of file names), got {args.tag!r}")
    if args.then_steps < 0 or args.then_temperature <= 0 or args.locomo_questions < 0:
        parser.error(
            f"--then-steps and --locomo-questions must be >= 0 and --then-temperature > 0, got {args.then_steps}, "
            f"{args.locomo_questions} and {args.then_temperature}"
        )
    # The trainer logs each rollout batch's reward mean and spread at INFO: keep it visible.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    load = OtherLoad()
    output_dir = Path(args.output_dir)
    if args.seeds:
        runs = [run_one(args, [*args.trainer_args, "--seed", str(seed), "--data_seed", str(seed)], output_dir / f"seed-{seed}") for seed in args.seeds]
    else:
        runs = [run_one(args, args.trainer_args, output_dir)]
    graph = runs[0]["settings"]["graph"]
    variant = "" if graph == "memagent" else f"_{graph}"  # MemAgent's files keep their names
    tag = f"_{args.tag}" if args.tag else ""
    FIGURES.mkdir(parents=True, exist_ok=True)
    first = output_dir / f"seed-{args.seeds[0]}" if args.seeds else output_dir
    shutil.copyfile(first / "learning_reward_curve.png", FIGURES / f"learning{variant}{tag}_reward_curve.png")
    if (first / "learning_tool_use.png").is_file():
        shutil.copyfile(first / "learning_tool_use.png", FIGURES / f"learning{variant}{tag}_tool_use.png")
    result = {"split": args.split, "runs": runs, "across_runs": across_runs(runs), "other_cpu_cores": load.cores()}
    write_result(f"{NAME}{variant}_{args.split}{tag}", result)
    for name, change in result["across_runs"].items():
        errors = ", ".join(f"{error:.1f}" for error in change["within_run_standard_errors_points"])
        spread = f" ± {change['sd']:.1f} sd over {len(runs)} runs" if change["sd"] is not None else ""
        print(f"{NAME} ({args.split}): {name} {change['mean']:+.1f} points{spread} (within-run paired errors {errors})")
    for name, parts in runs[-1]["by_gold_rank"].items():
        print(f"  {name} by gold rank: before {parts['before']}, after {parts['after']}")
    for name, groups in runs[-1].get("by_question_group", {}).items():
        shown = "; ".join(f"{group} {parts['f1']['change']:+.1f} ± {parts['f1']['standard_error']:.1f}" for group, parts in groups.items() if "f1" in parts)
        print(f"  {name} F1 change by question group: {shown}")
    if "constant_answer_f1" in runs[-1]:
        print(f"  F1 of a constant answer (never reading): {runs[-1]['constant_answer_f1']}")
    for name, measures in runs[-1]["tool_use"].items():
        shown = "; ".join(
            f"{measure} {value['before']:.3g} -> {value['after']:.3g} ({value['change']:+.3g} ± {value['standard_error']:.2g})"
            for measure, value in measures.items()
        )
        print(f"  {name} tool use: {shown}")
    print(f"other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
