"""Peak memory of one training loss pass, with and without ``--max_tokens_per_forward``.

The ``cpu-smoke`` preset (SmolLM2-135M + LoRA) makes one real rollout batch (8 rollouts of
one question, every LLM call a row), then one micro-batch of its rows goes through TRL's
loss and the backward pass, as in a training step. Each setting (token budget, activation
checkpointing) runs in a fresh process on the same saved rows, and reports the peak
resident memory the pass added, its seconds, its forward passes and the largest one's
tokens. Results: ``benchmarks/results/bench_loss_memory.json``.

    .venv/bin/python experiments/2026-11-23_grpo-niah-training/bench_loss_memory.py --budgets none 2048 512
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph_memagent.benchmarks._common import OtherLoad, current_rss, peak_rss, reset_peak_rss, write_result

NAME = "bench_loss_memory"


def _trainer(output_dir: str, budget: int | None, checkpointing: bool) -> Any:
    from langgraph_memagent.training.grpo_multiconv import load_policy, lora_config, parse_config, training_dataset
    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    options = ["--preset", "cpu-smoke", "--output_dir", output_dir, "--reward_curve", "false", "--report_to", "none"]
    options += ["--activation_checkpointing", str(checkpointing).lower()]
    if budget is not None:
        options += ["--max_tokens_per_forward", str(budget)]
    config = parse_config(options)
    model, tokenizer = load_policy(config)
    return MultiConvGRPOTrainer(
        model, args=config, train_dataset=training_dataset(config, tokenizer), processing_class=tokenizer, peft_config=lora_config(config)
    )


def make_rows(path: Path, output_dir: str) -> dict[str, Any]:
    """One real rollout batch of the preset, saved as the tensors TRL's loss takes."""
    import torch

    trainer = _trainer(output_dir, None, True)
    trainer.model.train()
    questions = [trainer.train_dataset[0]] * trainer.args.num_generations
    batch = trainer._generate_and_score_completions(questions)
    torch.save({key: value for key, value in batch.items() if isinstance(value, torch.Tensor)}, path)
    return {"rows": int(batch["prompt_ids"].size(0)), "padded_tokens": int(batch["prompt_ids"].numel() + batch["completion_ids"].numel())}


def measure(path: Path, output_dir: str, budget: int | None, checkpointing: bool) -> dict[str, Any]:
    """Peak memory and time of one loss and backward pass over the saved rows' first micro-batch."""
    import torch
    from trl.trainer.utils import split_tensor_dict

    trainer = _trainer(output_dir, budget, checkpointing)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    if checkpointing:  # as transformers' Trainer.train() turns it on
        trainer.model.activation_checkpointing_enable(activation_checkpointing_kwargs=trainer.args.activation_checkpointing_kwargs or None)
    assert trainer.model.is_activation_checkpointing == checkpointing
    batch = split_tensor_dict(torch.load(path), trainer.args.steps_per_generation)[0]
    passes: list[int] = []
    trainer.model.get_base_model().register_forward_pre_hook(lambda module, args, kwargs: passes.append(kwargs["input_ids"].numel()), with_kwargs=True)
    before = current_rss()
    reset_peak_rss()
    started = time.perf_counter()
    trainer.accelerator.backward(trainer.compute_loss(trainer.model, batch))
    seconds = time.perf_counter() - started
    return {
        "budget": budget, "activation_checkpointing": checkpointing, "rows": int(batch["prompt_ids"].size(0)),
        "added_peak_gb": (peak_rss() - before) / 2**30, "seconds": seconds, "forward_passes": len(passes), "largest_pass_tokens": max(passes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-23_grpo-niah-training/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", nargs="+", default=["none", "2048", "512"], help="token budgets ('none' = one pass, as TRL; default: %(default)s)")
    parser.add_argument("--child", nargs=4, metavar=("ROWS", "OUTPUT_DIR", "BUDGET", "CHECKPOINTING"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one setting in this fresh process
        rows, output_dir, budget, checkpointing = args.child
        print(json.dumps(measure(Path(rows), output_dir, None if budget == "none" else int(budget), checkpointing == "true")))
        return 0
    for budget in args.budgets:
        if budget != "none" and not (budget.isdigit() and int(budget) > 0):
            parser.error(f"--budgets takes positive token counts or 'none', got {budget!r}")
    load = OtherLoad()
    with tempfile.TemporaryDirectory() as scratch:
        rows = Path(scratch) / "rows.pt"
        print("one rollout batch of the cpu-smoke preset ...", flush=True)
        batch = make_rows(rows, scratch)
        runs = []
        for checkpointing in ("false", "true"):
            for budget in args.budgets:
                command = [sys.executable, __file__, "--child", str(rows), scratch, budget, checkpointing]
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode:
                    raise SystemExit(f"{NAME}: the setting budget={budget} checkpointing={checkpointing} failed:\n{done.stderr[-3000:]}")
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                run = runs[-1]
                print(
                    f"checkpointing {checkpointing:5}  budget {budget:>5}: +{run['added_peak_gb']:.2f} GB peak, {run['seconds']:.1f} s, "
                    f"{run['forward_passes']} forward passes (largest {run['largest_pass_tokens']} tokens)",
                    flush=True,
                )
    write_result(NAME, {"batch": batch, "runs": runs, "other_cpu_cores": load.cores()})
    print(f"other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
