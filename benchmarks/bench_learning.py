"""Does multi-conversation GRPO learn? SmolLM2-135M + LoRA, ``--preset cpu-smoke``, before vs after.

1. Held-out questions: the preset's task generated with another seed (``data_seed + 10000``).
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
final reply, no distractor number). The issue's bar: sampled accuracy +20 points
absolute, greedy not lower. Each change is reported with its standard error, paired by
held-out question (``paired_gain``). Results: ``benchmarks/results/bench_learning.json``, the reward
curve with the temperature curriculum marked in ``benchmarks/figures/learning_reward_curve.png``, the
trainer's log and ``reward_curve.png`` under ``--output-dir``. Interrupted runs resume:
the "before" evaluation is kept in ``<output-dir>/before.json`` and training continues
from its last checkpoint.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
from pathlib import Path
from typing import Any

from ._common import OtherLoad, write_result

NAME = "bench_learning"
HELD_OUT_SEED_OFFSET = 10_000
FIGURE = Path(__file__).resolve().parent / "figures" / "learning_reward_curve.png"
# Config fields the held-out evaluation depends on, and those that only shape training.
CONFIG_KEYS = ("task", "target_tokens", "num_keys", "chunk_tokens", "memory_tokens", "answer_tokens", "reward_metric", "temperature")
TRAINING_KEYS = (
    "num_generations", "per_device_train_batch_size", "steps_per_generation", "learning_rate", "beta", "lora_r", "lora_alpha", "max_steps",
    "dynamic_sampling_rounds",
)
DYNAMIC_SAMPLING_KEYS = ("dynamic_sampling/first_draw_reward", "dynamic_sampling/replaced_groups")


def with_phase_temperatures(log: list[dict], phases: list[dict]) -> list[dict]:
    """Each logged entry with the rollout temperature of its phase, unless it logged its own.

    Checkpoints written before the trainer logged ``temperature`` still get a curve with the
    curriculum marked: phase ``i`` covers the steps up to its ``max_steps``.
    """
    def phase_temperature(step: int) -> float:
        return next((phase["temperature"] for phase in phases if step <= phase["max_steps"]), phases[-1]["temperature"])

    return [{"temperature": phase_temperature(entry["step"]), **entry} for entry in log]


def _evaluate(model: Any, tokenizer: Any, records: list[dict], config: Any, samples: int) -> dict[str, Any]:
    """Accuracy sampled at T=1 (the issue's bar), at the training temperature when that differs, and greedy."""
    from langgraph_memagent.training.evaluation import evaluate_policy

    runs = {"sampled": 1.0, "training_temperature": config.temperature, "greedy": 0.0}
    if config.temperature in (0.0, 1.0):
        del runs["training_temperature"]
    result = {}
    for name, temperature in runs.items():
        evaluation = evaluate_policy(
            model, tokenizer, records, config, temperature=temperature, rollouts_per_question=1 if temperature == 0 else samples, progress=True
        )
        result[name] = evaluation.to_dict()
        # Printed as each finishes: a run killed later (e.g. out of memory) still shows it.
        print(f"  {name} (T={temperature:g}): {result[name]['accuracy']:.1f}%; peak memory {_peak_rss_gb():.1f} GB", flush=True)
    return result


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


def _train_seconds(trainer: Any) -> float | None:
    return trainer.state.log_history[-1].get("train_runtime")


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(payload, indent=2) + "\n")
    os.replace(temp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--eval-questions", type=int, default=32, help="held-out questions (default: %(default)s)")
    parser.add_argument("--eval-samples", type=int, default=4, help="sampled rollouts per held-out question (default: %(default)s)")
    parser.add_argument("--output-dir", default="runs/learning", help="trainer output directory (default: %(default)s)")
    parser.add_argument("--preset", default="cpu-smoke", help="trainer preset (default: %(default)s)")
    parser.add_argument("--then-steps", type=int, default=0, help="optimizer steps of a second phase (default: none)")
    parser.add_argument(
        "--then-temperature", type=float, default=1.0, help="rollout temperature of the second phase (default: %(default)s)"
    )
    parser.add_argument("trainer_args", nargs="*", help="options for the trainer, after --")
    args = parser.parse_args(argv)
    if args.then_steps < 0 or args.then_temperature <= 0:
        parser.error(f"--then-steps must be >= 0 and --then-temperature > 0, got {args.then_steps} and {args.then_temperature}")
    # The trainer logs each rollout batch's reward mean and spread at INFO: keep it visible.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    from transformers.trainer_utils import get_last_checkpoint

    from langgraph_memagent.agents.tokenizers import resolve_tokenizer
    from langgraph_memagent.training.data import generate_samples
    from langgraph_memagent.training.grpo_multiconv import load_policy, lora_config, parse_config, training_dataset
    from langgraph_memagent.training.reward_curve import plot_reward_curve
    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    config = parse_config(["--preset", args.preset, "--output_dir", str(output_dir), *args.trainer_args])
    load = OtherLoad()
    model, tokenizer = load_policy(config)
    held_out = generate_samples(
        config.task,
        resolve_tokenizer(tokenizer),
        num_samples=args.eval_questions,
        target_tokens=config.target_tokens,
        seed=config.data_seed + HELD_OUT_SEED_OFFSET,
        num_keys=config.num_keys,
    )
    # What the "before" numbers depend on: a kept before.json must match this run.
    settings = {
        "held_out_seed": config.data_seed + HELD_OUT_SEED_OFFSET,
        "eval_questions": args.eval_questions,
        "eval_samples": args.eval_samples,
        **{key: getattr(config, key) for key in CONFIG_KEYS},
    }
    before_path = output_dir / "before.json"
    if before_path.is_file():
        before = json.loads(before_path.read_text())
        if before.get("settings") != settings:
            raise SystemExit(
                f"{before_path} was measured with other settings ({before.get('settings')}), not {settings}: "
                "use another --output-dir or delete it"
            )
        print(f"before training (kept from {before_path}): sampled {before['sampled']['accuracy']:.1f}%, greedy {before['greedy']['accuracy']:.1f}%")
    else:
        print("before training:", flush=True)
        before = {"settings": settings, **_evaluate(model, tokenizer, held_out, config, args.eval_samples)}
        _write_json(before_path, before)

    def train(config: Any, model: Any | None) -> Any:
        """A trainer that ran this phase to its end, or None when a checkpoint already had."""
        last = get_last_checkpoint(str(output_dir))
        if last is not None and int(last.rsplit("-", 1)[1]) >= config.max_steps:
            return None  # resumed past max_steps, transformers' Trainer would still train one step
        trainer = MultiConvGRPOTrainer(
            model or load_policy(config)[0], args=config, train_dataset=training_dataset(config, tokenizer), processing_class=tokenizer, peft_config=lora_config(config)
        )
        trainer.train(resume_from_checkpoint=last)
        return trainer

    evaluation_config = config
    phase_configs = [config]
    if args.then_steps:
        phase_configs.append(parse_config(
            ["--preset", args.preset, "--output_dir", str(output_dir), *args.trainer_args,
             "--temperature", str(args.then_temperature), "--max_steps", str(config.max_steps + args.then_steps)]
        ))
    phases, trainer = [], None
    for number, config in enumerate(phase_configs):
        ran = train(config, model if number == 0 else None)
        phases.append({"temperature": config.temperature, "max_steps": config.max_steps, "train_seconds": _train_seconds(ran) if ran else None})
        trainer = ran or trainer
    if trainer is not None:
        trainer.save_model(str(output_dir))
        policy, log_history = trainer.model, trainer.state.log_history
    else:  # every phase had finished before: evaluate the last checkpoint's adapter
        from peft import PeftModel

        last = get_last_checkpoint(str(output_dir))
        policy = PeftModel.from_pretrained(load_policy(config)[0], last)
        log_history = json.loads((Path(last) / "trainer_state.json").read_text())["log_history"]
    print("after training:", flush=True)
    after = _evaluate(policy, tokenizer, held_out, evaluation_config, args.eval_samples)

    log = with_phase_temperatures([entry for entry in log_history if "reward" in entry], phases)
    plot_reward_curve(log, FIGURE)
    from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_gain

    # Each decoding's change, paired by question, with its standard error in points.
    changes = {name: paired_gain(PolicyEvaluation.from_dict(before[name]), PolicyEvaluation.from_dict(after[name])) for name in after}
    gain, greedy_change = changes["sampled"][0], changes["greedy"][0]
    result = {
        "settings": {**vars(args), **settings},
        "training": {key: getattr(config, key) for key in TRAINING_KEYS},
        "phases": phases,
        "before": before,
        "after": after,
        "sampled_gain_points": gain,
        "greedy_change_points": greedy_change,
        **({"training_temperature_gain_points": changes["training_temperature"][0]} if "training_temperature" in changes else {}),
        "change_standard_errors_points": {name: error for name, (_, error) in changes.items()},
        "goal_met": gain >= 20 and greedy_change >= 0,
        "reward_log": [{key: entry.get(key) for key in ("step", "temperature", "reward", "reward_std", "kl", "frac_reward_zero_std", *DYNAMIC_SAMPLING_KEYS)} for entry in log],
        "train_seconds": sum(phase["train_seconds"] or 0 for phase in phases),
        "other_cpu_cores": load.cores(),
        "peak_rss_gb": _peak_rss_gb(),
    }
    write_result(NAME, result)
    shown = ", ".join(
        f"{name} {before[name]['accuracy']:.1f}% -> {after[name]['accuracy']:.1f}% ({change:+.1f} ± {error:.1f})" for name, (change, error) in changes.items()
    )
    print(f"{NAME}: {shown}; goal {'met' if result['goal_met'] else 'not met'}; other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
