"""Two CPU processes (gloo DDP) train the cpu-smoke preset; run by ``accelerate launch`` from
``test_training_distributed.py``: ``distributed_training.py OUT_DIR TRAINER_ARGS...``.

Each process writes ``OUT_DIR/rank-<n>.json``: its rows per rollout batch (real and padded),
its forward passes under ``--max_tokens_per_forward``, a digest of its LoRA weights after every optimizer step,
and whether its DDP wrapper was still alive when the process group was destroyed.
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import sys
import weakref
from pathlib import Path

import torch

from transformers import TrainerCallback

from langgraph_memagent.training.grpo_multiconv import end_processes, load_policy, lora_config, parse_config, training_dataset
from langgraph_memagent.training.micro_batches import rows_per_part, trim_part
from langgraph_memagent.training.trainer import MultiConvGRPOTrainer


class RecordingTrainer(MultiConvGRPOTrainer):
    """Keeps this process's row counts (before and after padding) of every rollout batch, and
    under a token budget each batch's forward passes: the rows per part this process could
    take alone and took, the number of parts and the most tokens in one."""

    rows: list[dict[str, int]] = []
    passes: list[dict[str, int]] = []

    def _forward_parts(self, batch, mode):
        parts = super()._forward_parts(batch, mode)
        if parts is not None:
            alone = rows_per_part(batch["prompt_mask"], batch["completion_mask"], self.args.max_tokens_per_forward)
            sizes = [part["prompt_ids"].numel() + part["completion_ids"].numel() for part in (trim_part(batch, rows) for rows in parts)]
            self.passes.append({"rows_alone": alone, "rows": len(parts[0]), "parts": len(parts), "largest": max(sizes)})
        return parts

    def _log_rollouts(self, mode, rollouts, rewards, groups, advantages, rows, padding, seconds):
        self.rows.append({"real": len(rows) - padding, "padded": len(rows)})
        super()._log_rollouts(mode, rollouts, rewards, groups, advantages, rows, padding, seconds)


class LoraDigest(TrainerCallback):
    """A digest of the LoRA weights before training and after each optimizer step."""

    def __init__(self, model):
        self.model, self.digests = model, []

    def _record(self):
        digest = hashlib.sha256()
        for name, parameter in sorted(self.model.named_parameters()):
            if "lora_" in name:
                digest.update(name.encode() + parameter.detach().cpu().float().numpy().tobytes())
        self.digests.append(digest.hexdigest())

    def on_train_begin(self, args, state, control, **kwargs):
        self._record()

    def on_step_end(self, args, state, control, **kwargs):
        self._record()


def varied_reward(output, sample) -> float:
    """A reward that differs between rollouts (by reply length), so every step has gradients to all-reduce."""
    return (len(output.get("response") or "") % 7) / 6


def main() -> None:
    # A process still alive after this long prints every thread's stack and exits: a hang shows where it hung.
    faulthandler.dump_traceback_later(360, exit=True)
    out = Path(sys.argv[1])
    config = parse_config(["--preset", "cpu-smoke", "--output_dir", str(out / "run"), *sys.argv[2:]])
    model, tokenizer = load_policy(config)
    trainer = RecordingTrainer(
        model, args=config, train_dataset=training_dataset(config, tokenizer), processing_class=tokenizer,
        peft_config=lora_config(config), reward_fn=varied_reward,
    )
    digests = LoraDigest(trainer.model)
    trainer.add_callback(digests)
    trainer.train()
    rank = trainer.accelerator.process_index
    record = {"processes": trainer.accelerator.num_processes, "backend": str(trainer.accelerator.state.backend), "rows": trainer.rows, "passes": trainer.passes, "lora": digests.digests}
    # A wrapper alive at the group's destruction frees it later, holding the GIL: the teardown deadlock end_processes avoids.
    wrapper, destroy = weakref.ref(trainer.model_wrapped), torch.distributed.destroy_process_group

    def destroy_and_record(*args, **kwargs):
        record["wrapper_alive_at_destroy"] = wrapper() is not None
        destroy(*args, **kwargs)

    torch.distributed.destroy_process_group = destroy_and_record
    end_processes(trainer)  # as grpo_multiconv.main ends
    (out / f"rank-{rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main()
