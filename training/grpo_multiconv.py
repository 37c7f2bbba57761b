r"""Multi-conversation GRPO ("Multi-Conv DAPO", MemAgent arXiv 2507.02259) on TRL's GRPOTrainer.

A MemAgent rollout is several independent conversations: one call per memory update
and one final answer. TRL's GRPO expects one completion per sample, so this module
subclasses :class:`trl.GRPOTrainer` and overrides only
``_generate_and_score_completions``:

1. each sample of the generation batch (TRL already repeats it ``num_generations``
   times) is one rollout: the graph (MemAgent by default) runs on the *current*
   policy, all rollouts concurrently, through ``LocalChatModel.from_model(policy)``,
   which decodes the calls of every rollout together;
2. every LLM call of every rollout becomes one training row (its own prompt ids,
   completion ids and mask, recorded by :mod:`training.rollouts`);
3. the reward comes from the final reply only (strict ``\boxed{}`` verifier by
   default, :mod:`training.rewards`); the Dr. GRPO advantage ``A_i = R_i - mean(group)``
   is computed per rollout group (std scaling optional) and copied to every row of the
   rollout, each row keeping its own mask;
4. rows are padded with zero-mask, zero-advantage rows to a multiple of
   ``steps_per_generation`` (TRL's split would silently drop the remainder); old and
   reference log-probs come from the trainer's own helper.

TRL's ``_compute_loss`` is used unchanged: with ``loss_type="dapo"`` it divides by all
completion tokens of the generation batch, which is MemAgent's token-level mean over
group x conversation x token. ``loss_aggregation="rollout"`` instead weights tokens so
each rollout counts once (mean over rollouts of each rollout's token mean), and
``"rollout_sum"`` (SUMER's default, its paper's) so the loss is the mean over rollouts of
each rollout's token sum. Clipping
uses ``epsilon`` (low) and ``epsilon_high``; the KL is plain (``beta * KL``,
``use_bias_correction_kl=False``, as the reference). Several optimizer steps per
rollout batch: ``steps_per_generation = k * gradient_accumulation_steps`` gives ``k``.
Note ``per_device_train_batch_size`` counts *rollouts*; a micro-batch holds the rows of
about that many rollouts.
DAPO's dynamic sampling (``--dynamic_sampling_rounds N``, off by default) replaces each
group whose rollouts all earned the same reward, which has zero advantage and teaches
nothing, with a fresh question's group before the optimizer sees the batch.

Graphs (``--graph``): ``memagent`` (default), ``sumer`` and ``agemem`` (the
baselines' tool loops, :mod:`baselines.sumer` and :mod:`baselines.agemem`). A
tool-calling turn is one row like any other call: its prompt is the rendered
transcript so far (earlier tool results included, so they are prompt tokens and carry
no loss) and its completion is what the policy wrote, a malformed tool call included;
the forced-answer call at a turn cap is a row too. Default rewards: MemAgent's
answer verifier; SUMER's ``J x F1`` (-1 without an answer), which needs an LLM judge
(``--judge_model``; SUMER and LoCoMo score with an LLM judge), or, only when asked
for with ``--reward_metric f1``, the judge-free ``F1`` (-1 without an answer); AgeMem's
composite reward (task + context + memory, minus turn and overflow penalties) with
the context limit and turn limit of the config.

Command line (from the repository root)::

    python training/grpo_multiconv.py --help
    python training/grpo_multiconv.py --preset cpu-smoke --output_dir runs/smoke --max_steps 3
    python training/grpo_multiconv.py --preset cpu-smoke --resume_from_checkpoint runs/smoke/checkpoint-2
    python training/grpo_multiconv.py --preset cpu-smoke --graph sumer --judge_model smollm2-135m --output_dir runs/sumer
    python training/grpo_multiconv.py --preset cpu-smoke --graph agemem --output_dir runs/agemem
    python training/grpo_multiconv.py --preset cpu-sumer --output_dir runs/sumer   # generated conversations, judge-free
    python training/grpo_multiconv.py --preset cpu-agemem --output_dir runs/agemem   # AgeMem's memory tools, the same data

GPUs (``--preset paper-7b``: Qwen2.5-7B-Instruct, full fine-tuning, paper settings,
sized for 32 processes; scale ``per_device_train_batch_size`` x processes x
``steps_per_generation`` = 128 questions x 16 rollouts for another world size)::

    accelerate launch --num_processes 8 training/grpo_multiconv.py --preset paper-7b --output_dir runs/7b
    # several nodes (run on every node, --machine_rank 0..3):
    accelerate launch --num_machines 4 --num_processes 32 --machine_rank $RANK \
        --main_process_ip $MASTER --main_process_port 29500 --use_deepspeed --zero_stage 3 \
        training/grpo_multiconv.py --preset paper-7b --output_dir runs/7b

Generation runs on the policy module itself (``LocalChatModel.from_model``), batched
across all rollouts of the step. On GPUs TRL's vLLM generates instead (``--use_vllm``):
every call of every rollout goes to vLLM, the weights are pushed to it once per
optimizer step, and its sampling log-probs feed TRL's importance-sampling correction
(``vllm_importance_sampling_*``)::

    # server mode, one node: 2 GPUs serve (tensor parallel), 6 train
    CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model Qwen/Qwen2.5-7B-Instruct --tensor_parallel_size 2
    CUDA_VISIBLE_DEVICES=2,3,4,5,6,7 accelerate launch --num_processes 6 training/grpo_multiconv.py \
        --preset paper-7b --use_vllm --vllm_mode server --output_dir runs/7b
    # server mode, several nodes: a node of its own serves, 4 nodes train
    trl vllm-serve --model Qwen/Qwen2.5-7B-Instruct --tensor_parallel_size 8 --host 0.0.0.0   # on $VLLM_NODE
    accelerate launch --num_machines 4 --num_processes 32 --machine_rank $RANK \
        --main_process_ip $MASTER --main_process_port 29500 --use_deepspeed --zero_stage 3 \
        training/grpo_multiconv.py --preset paper-7b --use_vllm --vllm_mode server \
        --vllm_server_host $VLLM_NODE --output_dir runs/7b
    # colocate mode: an engine inside every training process (tensor parallel 1, no sleep mode)
    accelerate launch --num_processes 8 training/grpo_multiconv.py --preset paper-7b \
        --use_vllm --vllm_mode colocate --vllm_gpu_memory_utilization 0.3 --output_dir runs/7b

Each process sends its own rollouts' calls to the server, so processes never wait on
each other's number of calls. Colocated tensor parallelism is refused: TRL gathers
prompts over the tensor-parallel group inside each generate call, which ranks making
different numbers of calls would deadlock.

Library use::

    >>> from langgraph_memagent.training import MultiConvGRPOConfig, MultiConvGRPOTrainer
    >>> config = MultiConvGRPOConfig(output_dir="/tmp/run", bf16=False, chunk_tokens=1000)
    >>> config.beta, config.scale_rewards, config.loss_type, config.use_bias_correction_kl
    (0.001, 'none', 'dapo', False)
    >>> trainer = MultiConvGRPOTrainer(model, args=config, train_dataset=dataset)  # doctest: +SKIP
    >>> trainer.train()                                                           # doctest: +SKIP
"""

from __future__ import annotations


if __name__ == "__main__" and not __package__:
    # `python training/grpo_multiconv.py`: run the installed package's copy of this module,
    # whose relative imports resolve (the repository root is the package root).
    import os

    # Before huggingface_hub is imported (it reads these once): a training run loads local
    # weights only and must not start the hub's telemetry thread.
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from langgraph_memagent.training.grpo_multiconv import main as _installed_main

    raise SystemExit(_installed_main())

import argparse
import dataclasses
import logging
import sys
import typing
from collections.abc import Sequence
from typing import Any

import torch

from ..agents.extras import needs_extra
from ..agents.loading import context_window, model_directory, shipped_adapter
from ..evals.conversations import CONVERSATIONS_TASK
from ..graphs.registry import GRAPHS
from .config import HELP_SECTIONS, TRL_SECTION, MultiConvGRPOConfig, other_graph_options
from .data import conversation_records, generate_samples, load_training_file, parse_category_shares
from .presets import PRESETS
from .rollout_graphs import context_budget
from .trainer import MultiConvGRPOTrainer

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------
_DESCRIPTION = (
    "Multi-conversation GRPO (MemAgent's Multi-Conv DAPO) on TRL. Presets: "
    + "; ".join(f"--preset {name}" for name in PRESETS)
    + ". Options given after a preset override it. With another --graph than the preset's, its reward_metric, "
    "chunk_tokens and the options that graph does not read are not applied (each graph has its own defaults); with "
    "another --task, its num_keys is not applied. Every option is also spelled with dashes (--chunk-tokens), as in "
    "memagent compare."
)
_PROG = "grpo_multiconv"
# Preset values that only mean something for the preset's graph, beside the options other graphs do not read: its reward and piece size.
_GRAPH_ONLY = ("reward_metric", "chunk_tokens")
# Preset values that only mean something for the preset's own task (dropped with --task).
_TASK_ONLY = ("num_keys", "key_pool", "gold_position")


def _sectioned_parser(**keywords: Any) -> Any:
    """transformers' ``HfArgumentParser`` for :class:`MultiConvGRPOConfig`, its ``--help`` in the
    sections of ``HELP_SECTIONS`` (ours first, the curricula marked, TRL's last)."""
    from transformers import HfArgumentParser

    class SectionedParser(HfArgumentParser):
        def _add_dataclass_arguments(self, dtype: Any) -> None:
            hints = typing.get_type_hints(dtype)
            groups = {title: self.add_argument_group(title) for title in (*HELP_SECTIONS, TRL_SECTION)}
            section = {name: title for title, names in HELP_SECTIONS.items() for name in names}
            for spec in dataclasses.fields(dtype):
                if spec.init:
                    spec.type = hints[spec.name]  # as HfArgumentParser does: its field parser reads resolved types
                    self._parse_dataclass_field(groups[section.get(spec.name, TRL_SECTION)], spec)

    return SectionedParser(MultiConvGRPOConfig, **keywords)


def parse_config(argv: Sequence[str] | None = None, *, prog: str | None = None) -> MultiConvGRPOConfig:
    """Parse the command line into a :class:`MultiConvGRPOConfig`, applying ``--preset`` first
    (``prog``: the name usage and errors give, e.g. ``memagent train``; default: the script's).

    >>> parse_config(["--preset", "cpu-smoke", "--output_dir", "/tmp/x", "--max_steps", "2"]).max_steps
    2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--preset", default=None)
    early.add_argument("--graph", default=None)
    early.add_argument("--task", default=None)
    known = early.parse_known_args(argv)[0]
    preset = known.preset
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown --preset {preset!r}; expected one of {sorted(PRESETS)}")
    parser = _sectioned_parser(description=_DESCRIPTION, prog=prog)
    if preset is not None:
        defaults = PRESETS[preset]
        if known.graph not in (None, defaults.get("graph", "memagent")):
            foreign = other_graph_options(known.graph) if known.graph in GRAPHS else ()
            defaults = {key: value for key, value in defaults.items() if key not in (*_GRAPH_ONLY, *foreign)}
        if known.task not in (None, defaults.get("task")):
            defaults = {key: value for key, value in defaults.items() if key not in _TASK_ONLY}
        parser.set_defaults(**defaults)
    (config,) = parser.parse_args_into_dataclasses(args=argv)
    return config


def load_policy(config: MultiConvGRPOConfig) -> tuple[Any, Any]:
    """The policy model and tokenizer named by ``config.model_name_or_path`` (float32 on CPU)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = model_directory(config.model_name_or_path)
    dtype = torch.bfloat16 if config.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
    return model, AutoTokenizer.from_pretrained(name)


def lora_config(config: MultiConvGRPOConfig) -> Any:
    """The PEFT LoRA config of ``config`` (``None`` for full fine-tuning)."""
    if not config.use_lora:
        return None
    with needs_extra("train", "LoRA fine-tuning (--finetuning lora)"):
        from peft import LoraConfig

    targets = config.lora_target_modules
    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=targets if targets == "all-linear" else [name.strip() for name in targets.split(",")],
        task_type="CAUSAL_LM",
    )


def policy_to_train(model: Any, config: MultiConvGRPOConfig) -> tuple[Any, Any]:
    """The model and ``peft_config`` to give the trainer: ``model`` with a fresh LoRA adapter
    (:func:`lora_config`), or with the saved ``config.init_adapter`` made trainable (a
    curriculum's next stage starts where the last one ended; ``smollm2-135m-memagent`` starts from its shipped one)."""
    adapter = config.init_adapter or shipped_adapter(config.model_name_or_path)
    if adapter is None:
        return model, lora_config(config)
    with needs_extra("train", "--init_adapter"):
        from peft import PeftModel

    return PeftModel.from_pretrained(model, adapter, is_trainable=True), None


def training_dataset(config: MultiConvGRPOConfig, tokenizer: Any, records: list[dict[str, Any]] | None = None) -> Any:
    """The training rows: ``records`` (already read from ``train_file``), ``train_file``, or generated ``task`` samples
    (RULER tasks, or LoCoMo-shaped conversations from the training entity names)."""
    from datasets import Dataset

    from ..agents.tokenizers import resolve_tokenizer

    if records is None and config.train_file:
        records = load_training_file(config.train_file)
    elif records is None and config.task == CONVERSATIONS_TASK:
        shares = parse_category_shares(config.category_shares) if config.category_shares else None
        records = conversation_records(
            config.num_train_samples, seed=config.data_seed, entities="train", wording=config.conversation_wording, category_shares=shares
        )
    elif records is None:
        records = generate_samples(
            config.task,
            resolve_tokenizer(tokenizer),
            num_samples=config.num_train_samples,
            target_tokens=config.target_tokens,
            seed=config.data_seed,
            num_keys=config.num_keys,
            key_pool=config.key_pool,
            gold_rank=config.gold_position,
        )
    return Dataset.from_list(records)


def end_processes(trainer: MultiConvGRPOTrainer) -> None:
    """Meet the other training processes, release the DDP wrapper, then destroy the process group (nothing to do in a
    single process)."""
    # Under `accelerate launch` a process group left to interpreter exit can abort there (gloo's teardown race),
    # and one destroyed while another process still works in it can hang (pytorch/pytorch#75097): all meet first.
    trainer.accelerator.wait_for_everyone()
    # The DDP wrapper's reducer holds the group in C++. Freed after the group is destroyed, it is the group's last owner
    # and runs gloo's destructor holding the GIL; that destructor joins gloo's worker threads, and one still freeing a
    # finished gather's tensors waits for the GIL: a deadlock (seen with gdb in the two-process test, 2026-12-07).
    # Freed first, the last owner is torch's Python handle, which lets go of the GIL before the destructor runs.
    trainer.model_wrapped = trainer.model
    trainer.accelerator.free_memory()
    trainer.accelerator.end_training()


def main(argv: Sequence[str] | None = None, *, prog: str | None = None, reward_fn: Any = None) -> int:
    """Train from the command line (``memagent train`` passes ``prog``; ``reward_fn``, when given, replaces the graph's
    reward, as the trainer's own argument does); returns the process exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        # Everything a user can get wrong is checked before the policy loads: the config (all bad
        # fields at once, then TRL's own checks) and the training file.
        config = parse_config(argv, prog=prog)
        records = load_training_file(config.train_file) if config.train_file else None
        curriculum = ("search_curriculum" if config.search_curriculum else "write_curriculum" if config.write_curriculum
                      else f"agemem_sessions {config.agemem_sessions!r}" if config.agemem_sessions != "all" else None)
        if curriculum and records is not None and not all(record.get("evidence") for record in records):
            raise ValueError(f"{curriculum} needs evidence ids on every training row (a LoCoMo file), got rows without them in {config.train_file!r}")
        # The tool graphs' budget against the policy's window, read from its config alone.
        config.max_context_tokens = context_budget(config, context_window(model_directory(config.model_name_or_path)))
    except (ValueError, OSError) as error:
        for line in str(error).splitlines():
            print(f"{prog or _PROG}: error: {line}", file=sys.stderr)
        return 2
    model, tokenizer = load_policy(config)
    dataset = training_dataset(config, tokenizer, records)
    model, peft_config = policy_to_train(model, config)
    trainer = MultiConvGRPOTrainer(model, args=config, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config,
                                   reward_fn=reward_fn)
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    trainer.save_model(config.output_dir)
    steps = [entry for entry in trainer.state.log_history if "step_time" in entry]
    if steps:
        seconds = sum(entry["step_time"] for entry in steps) / len(steps)
        # TRL times its training_step, which makes the step's rollouts too (measured: a 528 s step held 197 s of them).
        logger.info("mean training-step time (its rollouts included): %.2f s", seconds)
    end_processes(trainer)
    return 0


__all__ = ["end_processes", "load_policy", "lora_config", "main", "parse_config", "policy_to_train", "training_dataset"]

if __name__ == "__main__":
    raise SystemExit(main())
