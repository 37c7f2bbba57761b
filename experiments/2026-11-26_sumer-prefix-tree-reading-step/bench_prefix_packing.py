"""Loss-pass time of multi-conversation GRPO: TRL's padded rows against the rows' prefix tree.

A SUMER rollout's calls repeat their history, and a group's rollouts share their first prompt,
so the rows of a rollout batch hold the same tokens many times. This runs one ``cpu-sumer``
rollout batch with the trainer (one generated training question, G = 8 rollouts, T = 1.0),
then does the loss work of that batch both ways (``pack_prefixes`` off and on), alternating
``--rounds`` times: the old policy's log-probs over every row, then each optimizer step's loss
and backward, on TRL's shuffled slices, as a training step does. Both ways use ``--budget``
tokens per forward part (padded row tokens; the packed way counts tree tokens, and
``--packed-budget`` gives it its own). Reported per way: tokens through
the model, forward passes, seconds; and the largest difference between the two ways'
log-probs and losses.

``.venv/bin/python experiments/2026-11-26_sumer-prefix-tree-reading-step/bench_prefix_packing.py`` (about 15 minutes on 2 cores, 3 more when no
saved rollout batch exists; ``--rollouts FILE`` names the batch to reuse or write).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from langgraph_memagent.benchmarks._common import RESULTS_DIR, OtherLoad, peak_rss, reset_peak_rss, write_result

NAME = "bench_prefix_packing"


def _trainer(budget: int):
    from langgraph_memagent.training.grpo_multiconv import load_policy, lora_config, parse_config, training_dataset
    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    config = parse_config(
        ["--preset", "cpu-sumer", "--output_dir", f"/tmp/{NAME}", "--max_tokens_per_forward", str(budget), "--num_train_samples", "8"]
    )
    model, tokenizer = load_policy(config)
    dataset = training_dataset(config, tokenizer)
    trainer = MultiConvGRPOTrainer(model, args=config, train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(config))
    return trainer, dataset


def _rollouts(trainer, dataset, path: Path | None) -> list:
    from langgraph_memagent.training.rollouts import LLMCall, Rollout

    if path is not None and path.exists():
        saved = json.loads(path.read_text())
        return [Rollout(r["rollout_id"], r["group_id"], [LLMCall(**c) for c in r["calls"]], {}, r["reward"]) for r in saved]
    inputs = [dataset[0]] * trainer.num_generations  # one question's group, as TRL's sampler gives it
    trainer.model.train()
    batch = {}
    trainer._batch_from_rollouts = lambda rollouts, mode, **kwargs: batch.setdefault("rollouts", rollouts)
    trainer._generate_and_score_completions(inputs)
    del trainer._batch_from_rollouts
    rollouts = batch["rollouts"]
    if path is not None:
        saved = [{"rollout_id": r.rollout_id, "group_id": r.group_id, "reward": r.reward, "calls": [dataclasses.asdict(c) for c in r.calls]}
                 for r in rollouts]
        path.write_text(json.dumps(saved))
    return rollouts


def optimizer_step_losses(trainer, batch: dict, seed: int) -> list[float]:
    """Each optimizer step's loss and backward over ``batch`` (a rollout batch's rows), on TRL's
    slices shuffled with ``seed``, as a training step does; gradients accumulate."""
    import torch

    trainer.current_gradient_accumulation_steps = 1
    trainer._generate_and_score_completions = lambda inputs: dict(batch)
    torch.manual_seed(seed)
    losses = []
    for trainer._step in range(trainer.args.steps_per_generation):
        loss = trainer.compute_loss(trainer.model, trainer._prepare_inputs(None))
        trainer.accelerator.backward(loss)
        losses.append(loss.item())
    del trainer._generate_and_score_completions
    return losses


def measure(trainer, rollouts: list, pack: bool, budget: int, seed: int) -> dict:
    """The loss work of one rollout batch: old log-probs, then each step's loss and backward."""
    trainer.args.pack_prefixes = pack
    trainer.args.max_tokens_per_forward = budget
    reset_peak_rss()
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    tokens: list[int] = []
    hook = trainer.model.get_base_model().register_forward_pre_hook(
        lambda module, args, kwargs: tokens.append(kwargs["input_ids"].numel()), with_kwargs=True
    )
    started = time.perf_counter()
    batch = trainer._batch_from_rollouts(rollouts, "train")
    old_seconds = time.perf_counter() - started
    losses = optimizer_step_losses(trainer, batch, seed)
    seconds = time.perf_counter() - started
    trainer.model.zero_grad()
    hook.remove()
    return {
        "pack_prefixes": pack,
        "budget": budget,
        "seconds": round(seconds, 2),
        "peak_rss_gb": round(peak_rss() / 2**30, 2),
        "old_logps_seconds": round(old_seconds, 2),
        "forward_passes": len(tokens),
        "tokens": sum(tokens),
        "losses": losses,
        "old_logps": batch["old_per_token_logps"][batch["completion_mask"].bool()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-26_sumer-prefix-tree-reading-step/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=4096, help="max_tokens_per_forward of the rows, and of the packed way unless --packed-budget (default: the preset's %(default)s)")
    parser.add_argument("--packed-budget", type=int, help="max_tokens_per_forward of the packed way, in tree tokens (default: --budget)")
    parser.add_argument("--rounds", type=int, default=2, help="measurements per way, alternating (default: %(default)s)")
    parser.add_argument("--rollouts", type=Path, default=RESULTS_DIR / f"{NAME}_rollouts.json",
                        help="rollout batch to reuse, written when missing (default: %(default)s)")
    args = parser.parse_args(argv)
    load = OtherLoad()
    trainer, dataset = _trainer(args.budget)
    started = time.perf_counter()
    rollouts = _rollouts(trainer, dataset, args.rollouts)
    rollout_seconds = time.perf_counter() - started
    rows = sum(len(r.calls) for r in rollouts)
    print(f"{len(rollouts)} rollouts, {rows} rows ({rollout_seconds:.0f} s)", flush=True)
    runs, logps = [], {}
    for round_index in range(args.rounds):
        for pack in (False, True):
            budget = (args.packed_budget or args.budget) if pack else args.budget
            result = measure(trainer, rollouts, pack, budget, seed=round_index)
            logps[pack] = result.pop("old_logps")
            runs.append({"round": round_index, **result})
            print(f"round {round_index} pack_prefixes={pack}: {result['seconds']} s, {result['tokens']} tokens in "
                  f"{result['forward_passes']} passes, peak {result['peak_rss_gb']} GB", flush=True)
    mean = {
        way: {key: round(sum(r[key] for r in runs if r["pack_prefixes"] == pack) / args.rounds, 2) for key in ("seconds", "tokens")}
        for way, pack in (("rows", False), ("packed", True))
    }
    logp_difference = float((logps[True] - logps[False]).abs().max())
    loss_difference = max(abs(a - b) for r in range(args.rounds) for a, b in zip(*(x["losses"] for x in runs if x["round"] == r)))
    write_result(NAME, {
        "budget": args.budget, "packed_budget": args.packed_budget or args.budget, "rollouts": len(rollouts), "rows": rows, "runs": runs, "mean": mean,
        "max_old_logp_difference": logp_difference, "max_loss_difference": loss_difference, "other_cpu_cores": load.cores(),
    })
    print(f"{NAME}: {mean['packed']['seconds']} s packed vs {mean['rows']['seconds']} s as rows "
          f"({mean['rows']['seconds'] / mean['packed']['seconds']:.2f}x; tokens {mean['rows']['tokens'] / mean['packed']['tokens']:.2f}x fewer); "
          f"log-probs differ by at most {logp_difference:.2e}, losses by {loss_difference:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
