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
each rollout counts once (mean over rollouts of each rollout's token mean). Clipping
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
import json
import logging
import math
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback, TrainerState
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig, GRPOTrainer
from trl.models import unwrap_model_for_generation
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import pad, use_adapter

from ..evals.locomo_scoring import LLMJudge
from ..evals.ruler import TASKS
from ..evals.scoring import METRICS
from .rewards import AgeMemReward, AgeMemRewardConfig, AnswerReward, JudgeFreeSumerReward, SubmittedAnswersOnly, SumerReward, gold_answers
from .rollouts import MissingTokenIdsError, RewardFn, Rollout, run_rollouts, score_rollouts

logger = logging.getLogger(__name__)
# Logged with dynamic sampling: a rollout batch's mean reward before flat groups were replaced.
FIRST_DRAW_REWARD = "dynamic_sampling/first_draw_reward"


# --------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------
@dataclass
class MultiConvGRPOConfig(GRPOConfig):
    """TRL's ``GRPOConfig`` with MemAgent's defaults (arXiv 2507.02259) and the rollout settings.

    Changed TRL defaults: ``beta=1e-3`` (paper), ``use_bias_correction_kl=False`` (the
    reference uses a plain KL), ``scale_rewards="none"`` (Dr. GRPO advantage),
    ``num_generations=16`` (paper G), ``epsilon=epsilon_high=0.2`` (the released
    scripts; DAPO clip-higher is ``--epsilon_high 0.28``), constant learning rate 1e-6
    with linear warm-up (paper), ``logging_steps=1``, ``bf16`` only where CUDA exists.
    """

    # TRL fields whose defaults change ------------------------------------------------
    beta: float = field(default=1e-3, metadata={"help": "KL coefficient (MemAgent: 1e-3)."})
    use_bias_correction_kl: bool = field(
        default=False, metadata={"help": "Multiply the KL by the importance ratio (MemAgent's reference: no)."}
    )
    scale_rewards: str = field(
        default="none",
        metadata={"help": "Advantage scaling: 'none' = Dr. GRPO r - group mean (MemAgent), 'group' or 'batch' std."},
    )
    num_generations: int | None = field(default=16, metadata={"help": "Rollouts per question, G (MemAgent: 16)."})
    per_device_train_batch_size: int = field(
        default=16, metadata={"help": "Rollouts per process per micro-batch; a micro-batch holds all their calls' rows."}
    )
    # transformers 5.24 renamed gradient checkpointing to activation checkpointing; TRL 1.16
    # still sets the old name to True, which warns on every config. Unset here, so the old
    # name warns only when a user passes it, and TRL's default moves to the new name.
    gradient_checkpointing: bool | None = field(
        default=None, metadata={"help": "Deprecated alias of --activation_checkpointing (transformers 5.24)."}
    )
    activation_checkpointing: bool | None = field(
        default=None, metadata={"help": "Recompute activations in the backward pass to save memory (default: True, TRL's)."}
    )
    epsilon: float = field(default=0.2, metadata={"help": "Low clip epsilon (MemAgent released scripts: 0.2)."})
    epsilon_high: float | None = field(
        default=0.2, metadata={"help": "High clip epsilon (released scripts: 0.2; DAPO clip-higher: 0.28)."}
    )
    lr_scheduler_type: str = field(
        default="constant_with_warmup", metadata={"help": "LR schedule (MemAgent: constant after linear warm-up)."}
    )
    warmup_steps: float = field(default=5, metadata={"help": "Linear warm-up optimizer steps (our choice)."})
    logging_steps: float = field(default=1, metadata={"help": "Log every N optimizer steps."})
    bf16: bool | None = field(default=None, metadata={"help": "bf16 mixed precision; default: only when CUDA is available."})
    max_completion_length: int | None = field(
        default=None,
        metadata={
            "help": "Default: the graph's largest generation limit (MemAgent: max(memory_tokens, answer_tokens); "
            "SUMER: max(turn_tokens, answer_tokens); AgeMem: turn_tokens); used by TRL's length-normalized losses."
        },
    )

    # Model ---------------------------------------------------------------------------
    model_name_or_path: str = field(
        default="smollm2-135m",
        metadata={"help": "Policy: 'smollm2-135m' (embedded) or a local transformers model directory / hub id."},
    )
    finetuning: str = field(
        default="auto", metadata={"help": "'lora', 'full', or 'auto' (LoRA on CPU, full fine-tuning on GPU)."}
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha."})
    lora_dropout: float = field(default=0.0, metadata={"help": "LoRA dropout (0: rollouts and loss see the same policy)."})
    lora_target_modules: str = field(
        default="all-linear", metadata={"help": "Comma-separated module names or 'all-linear' (never lm_head)."}
    )

    # Graph ---------------------------------------------------------------------------
    graph: str = field(
        default="memagent",
        metadata={"help": "Graph whose LLM calls become rows: 'memagent', 'sumer' or 'agemem' (see GRAPH_BUILDERS)."},
    )
    chunk_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Document tokens per piece; default per graph: MemAgent memory update 5000 (paper), SUMER memory "
            "item 200, AgeMem stage-1 message 512 (the baselines' defaults). Conversation rows with 'turns' ignore it "
            "for SUMER and AgeMem (one item per message / per session)."
        },
    )
    memory_tokens: int = field(default=1024, metadata={"help": "Generation limit of a memory update (MemAgent: 1024)."})
    answer_tokens: int = field(default=1024, metadata={"help": "Generation limit of the final answer (MemAgent: 1024)."})
    final_prompt: str = field(default="boxed", metadata={"help": "'boxed' (paper) or 'answer_is' final prompt."})
    turn_tokens: int | None = field(
        default=None,
        metadata={"help": "SUMER/AgeMem: generation limit of one tool-calling turn; default SUMER 1024, AgeMem 256."},
    )
    max_context_tokens: int | None = field(
        default=None,
        metadata={
            "help": "SUMER/AgeMem: context budget in tokens (SUMER ends the episode above it; AgeMem drops the oldest "
            "message groups and its reward penalizes the overflow). Default, set when the trainer starts: the "
            "policy's window minus turn_tokens (AgeMem: at most 4096, its graph's default for local models)."
        },
    )
    max_turns: int = field(default=20, metadata={"help": "SUMER: assistant turns per episode (SUMER paper: 20)."})
    max_parallel_calls: int = field(default=5, metadata={"help": "SUMER: tool calls run per turn (SUMER paper: 5)."})
    agemem_turns_per_message: int = field(
        default=2, metadata={"help": "AgeMem: assistant turns after each arriving message (graph default 2; the paper sets none)."}
    )
    agemem_stage_turns: int = field(default=32, metadata={"help": "AgeMem: assistant turns per stage (graph default 32)."})
    agemem_distractor_messages: int = field(
        default=2, metadata={"help": "AgeMem: stage-2 distractor messages of essay prose (graph default 2)."}
    )
    agemem_turn_limit: int | None = field(
        default=None,
        metadata={
            "help": "AgeMem reward: assistant turns over all three stages above which the turn penalty applies; "
            "default agemem_stage_turns (ours: the AgeMem paper's limit is not available)."
        },
    )
    embeddings_model: str | None = field(
        default=None,
        metadata={
            "help": "SUMER/AgeMem: sentence-transformers model directory for memory search; default the embedded "
            "all-MiniLM-L6-v2."
        },
    )
    rollout_concurrency: int = field(
        default=0, metadata={"help": "Most graph runs in flight at once; 0 runs every rollout of the batch together."}
    )
    generation_max_batch_size: int = field(
        default=64, metadata={"help": "Most calls the local backend decodes in one step (its continuous batch)."}
    )

    # Objective -----------------------------------------------------------------------
    reward_metric: str | None = field(
        default=None,
        metadata={
            "help": f"MemAgent: final-answer reward, 'strict_boxed' (its training verifier, the default) or one of "
            f"{METRICS[1:]}. SUMER: unset = J x F1 with --judge_model (the paper's reward), or 'f1' = the judge-free "
            "fallback F1 (-1 without an answer). AgeMem: metric of the reward's task component (default 'f1')."
        },
    )
    judge_model: str | None = field(
        default=None,
        metadata={
            "help": "SUMER: the LLM judge's model spec for agents.loading.load_chat_model ('smollm2-135m', 'hf:<dir>', "
            "'vllm:<model>' with --judge_base_url, ...). SUMER's reward multiplies the judge's CORRECT/WRONG by token F1."
        },
    )
    judge_base_url: str | None = field(
        default=None, metadata={"help": "OpenAI-compatible endpoint of a 'vllm:'/'openai:' judge_model."}
    )
    judge_max_tokens: int | None = field(
        default=None, metadata={"help": "Reply limit of the judge (default: the judge model's own)."}
    )
    sumer_require_submit: bool = field(
        default=True,
        metadata={
            "help": "SUMER reward: only an answer given with submit_answer counts; an answer forced at the turn cap or "
            "read from a turn without a tool call scores -1 like no answer (the SUMER paper). --sumer_require_submit "
            "false scores those answers too (a denser signal for small models)."
        },
    )
    loss_aggregation: str = field(
        default="token",
        metadata={"help": "'token': mean over all completion tokens (MemAgent); 'rollout': each rollout counts once."},
    )
    dynamic_sampling_rounds: int = field(
        default=0,
        metadata={
            "help": "DAPO's dynamic sampling (arXiv 2503.14476): a group whose rollouts all earned the same reward "
            "(zero advantage, no signal) is replaced by a fresh training question's group, for up to this many "
            "rounds per rollout batch; groups still flat after that are kept. 0 = off (TRL's behaviour). One process only."
        },
    )

    # Data ----------------------------------------------------------------------------
    train_file: str | None = field(
        default=None,
        metadata={"help": "JSON/JSONL/parquet in MemAgent's training format (prompt, context, reward_model.ground_truth)."},
    )
    task: str = field(default="niah_single_1", metadata={"help": "Generated task when no train_file (evals.ruler)."})
    num_train_samples: int = field(default=64, metadata={"help": "Generated training questions."})
    target_tokens: int = field(default=4000, metadata={"help": "Document length of generated tasks, in policy tokens."})
    num_keys: int | None = field(
        default=None,
        metadata={"help": "Keyed needles per generated niah_multikey_1 / niah_multiquery document (RULER's num_needle_k; unset: 4)."},
    )
    data_seed: int = field(default=0, metadata={"help": "Seed of the generated training tasks."})

    # Outputs -------------------------------------------------------------------------
    reward_curve: bool = field(default=True, metadata={"help": "Write reward_curve.png to output_dir when training ends."})
    preset: str | None = field(default=None, metadata={"help": "Defaults bundle: 'paper-7b' (GPUs) or 'cpu-smoke'."})

    def __post_init__(self) -> None:
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = True
        if self.bf16 is None:
            # TRL defaults bf16 to True, which fails on machines without CUDA.
            self.bf16 = torch.cuda.is_available() and not self.fp16
        # Fields left unset take the graph's defaults.
        for name, value in GRAPH_DEFAULTS.get(self.graph, {}).items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if self.agemem_turn_limit is None:
            self.agemem_turn_limit = self.agemem_stage_turns
        if self.max_completion_length is None:
            limits = {
                "memagent": (self.memory_tokens, self.answer_tokens),
                "sumer": (self.turn_tokens, self.answer_tokens),
                "agemem": (self.turn_tokens,),
            }.get(self.graph, (self.memory_tokens, self.answer_tokens))
            self.max_completion_length = max(limits)
        problems = self.problems()
        if problems:
            # One line per bad field, all at once, before TRL's own checks (which stop at the first).
            raise ValueError("\n".join(problems))
        super().__post_init__()

    def problems(self) -> list[str]:
        """One line per bad field of this config; ``__post_init__`` raises them all together, before
        anything loads, so a command line with three bad flags names all three."""
        problems = []
        choices = {
            "finetuning": ("auto", "lora", "full"),
            "loss_aggregation": ("token", "rollout"),
            "final_prompt": ("boxed", "answer_is"),
            "graph": tuple(GRAPH_BUILDERS),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                problems.append(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        if self.reward_metric is not None and self.reward_metric not in METRICS:
            problems.append(f"reward_metric must be one of {list(METRICS)}, got {self.reward_metric!r}")
        if self.graph == "sumer" and self.reward_metric not in (None, "f1"):
            problems.append(
                f"reward_metric for graph 'sumer' must be unset (SUMER's J x F1, with judge_model) or 'f1' (the "
                f"judge-free fallback), got {self.reward_metric!r}"
            )
        if self.graph == "sumer" and self.reward_metric == "f1" and self.judge_model is not None:
            problems.append(
                f"graph 'sumer' got both judge_model={self.judge_model!r} (J x F1) and reward_metric='f1' (judge-free "
                "F1); give one"
            )
        if self.num_generations is not None and self.num_generations < 2:
            problems.append(
                f"num_generations must be >= 2 (a group advantage compares rollouts of one question), got {self.num_generations!r}"
            )
        if not self.learning_rate > 0:
            problems.append(f"learning_rate must be > 0, got {self.learning_rate!r}")
        positive = (
            "chunk_tokens", "memory_tokens", "answer_tokens", "turn_tokens", "max_context_tokens", "max_turns",
            "max_parallel_calls", "agemem_turns_per_message", "agemem_stage_turns", "agemem_turn_limit",
            "judge_max_tokens", "generation_max_batch_size", "num_train_samples", "target_tokens", "num_keys",
            "per_device_train_batch_size",
        )
        for name in positive:
            value = getattr(self, name)
            if value is not None and value < 1:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        non_negative = {
            "agemem_distractor_messages": "",
            "dynamic_sampling_rounds": " (0 = off)",
            "rollout_concurrency": " (0 = all at once)",
        }
        for name, note in non_negative.items():
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0{note}, got {getattr(self, name)!r}")
        if self.train_file is not None and not Path(self.train_file).is_file():
            problems.append(f"train_file {self.train_file!r} does not exist or is not a file")
        if self.train_file is None and self.task not in TASKS:
            problems.append(f"task must be one of {list(TASKS)}, got {self.task!r}")
        model = self.model_name_or_path
        if model.startswith((".", "/", "~")) and not Path(model).expanduser().is_dir():
            problems.append(f"model_name_or_path {model!r} does not exist or is not a directory")
        if self.use_vllm and self.vllm_mode == "colocate" and (self.vllm_tensor_parallel_size > 1 or self.vllm_enable_sleep_mode):
            # TRL gathers prompts over the tensor-parallel group inside every generate call, a collective each rank
            # must enter equally often, while a graph's number of calls depends on what the model writes; sleep
            # mode needs TRL's own generate to wake the engine.
            problems.append(
                f"vllm_mode='colocate' with vllm_tensor_parallel_size={self.vllm_tensor_parallel_size} and "
                f"vllm_enable_sleep_mode={self.vllm_enable_sleep_mode} is not supported: rollouts need tensor parallel "
                "size 1 and no sleep mode when colocated; use vllm_mode='server' for a model that needs several GPUs"
            )
        return problems

    @property
    def use_lora(self) -> bool:
        """Whether the policy trains a LoRA adapter (``finetuning``, with 'auto' = LoRA without CUDA)."""
        return self.finetuning == "lora" or (self.finetuning == "auto" and not torch.cuda.is_available())


# Defaults of fields left unset, per graph: MemAgent's paper values; the baselines' own defaults.
GRAPH_DEFAULTS: dict[str, dict[str, Any]] = {
    "memagent": {"chunk_tokens": 5000, "reward_metric": "strict_boxed"},
    "sumer": {"chunk_tokens": 200, "turn_tokens": 1024},
    "agemem": {"chunk_tokens": 512, "turn_tokens": 256, "reward_metric": "f1"},
}


PRESETS: dict[str, dict[str, Any]] = {
    # MemAgent-7B RL (arXiv 2507.02259): Qwen2.5-7B-Instruct, 128 questions x G=16 per rollout
    # batch, 16 optimizer steps per batch, lr 1e-6, KL 1e-3, 5000-token chunks, 1024-token
    # memory/answer. Sized for 32 processes (4 nodes x 8 GPUs): 4 x 32 x 16 = 2048 rollouts.
    "paper-7b": {
        "model_name_or_path": "Qwen/Qwen2.5-7B-Instruct",
        "finetuning": "full",
        "num_generations": 16,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 16,
        "learning_rate": 1e-6,
        "beta": 1e-3,
        "chunk_tokens": 5000,
        "memory_tokens": 1024,
        "answer_tokens": 1024,
        "reward_metric": "strict_boxed",
        "bf16": True,
        "activation_checkpointing": True,
        "save_steps": 20,
    },
    # SmolLM2-135M + LoRA on short generated NIAH tasks: 2 chunks of essay text holding the
    # queried needle and 1 distractor needle (RULER niah_multikey_1 with num_keys=2).
    # The strict verifier gives this model no signal (it never writes \boxed{}), so the
    # reward is lenient (environment.md). Rollouts sample at T=0.7: measured on held-out
    # questions, T=1.0 earns this reward 0 times in 32 (the memory derails), T=0.7 6/32,
    # T=0.5 11/32, greedy 5/16; with 3 distractors and 3 chunks even T=1.0 got 2/128 and a
    # run saw no signal. On this task, 24 steps (28 min) took held-out accuracy from 23% to
    # 48% at T=0.7 and from 4% to 15% at T=1.0; more steps resumed at --temperature 1.0 (a
    # second trainer: TRL fixes the loss's temperature at init) lift T=1.0 further. At T=1.0
    # 4 in 10 batches had no reward spread, hence DAPO's dynamic sampling (2 rounds). This
    # preset's 16 steps, then 16 at T=1.0 (bench_learning --then-steps 16), 42 minutes of
    # training: T=1.0 1.6% -> 27.3%, greedy 34% -> 50% (BENCHMARKS.md section 6, run 7;
    # runs vary by about +-5 points at T=1.0). Sizes, lr and rank are ours.
    "cpu-smoke": {
        "model_name_or_path": "smollm2-135m",
        "finetuning": "lora",
        "task": "niah_multikey_1",
        "num_keys": 2,
        "target_tokens": 240,
        "chunk_tokens": 120,
        "memory_tokens": 48,
        "answer_tokens": 24,
        "temperature": 0.7,
        "num_generations": 8,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 2,  # one question x 8 rollouts per batch, 2 optimizer steps on it
        "learning_rate": 2e-4,
        "warmup_steps": 2,
        "lora_r": 16,
        "lora_alpha": 32,
        "reward_metric": "string_match_all",
        "num_train_samples": 256,
        "max_steps": 16,
        "dynamic_sampling_rounds": 2,
        "activation_checkpointing": False,
        "bf16": False,
        "save_steps": 4,
        "report_to": "none",
    },
}


# --------------------------------------------------------------------------------------
# Advantages and rows (pure functions: what the tests check against hand computations)
# --------------------------------------------------------------------------------------
def vllm_importance_ratio(
    old_logps: torch.Tensor,
    sampling_logps: torch.Tensor,
    mask: torch.Tensor,
    *,
    mode: str = "sequence_mask",
    clip_min: float | None = None,
    clip_max: float | None = 3.0,
) -> torch.Tensor:
    """TRL's vLLM importance-sampling correction (TRL 1.16) for rows whose tokens vLLM sampled.

    The ratio pi_old / pi_vllm per token (``token_*`` modes, shape ``(rows, tokens)``) or
    per row (``sequence_*``: the product over the row's tokens, shape ``(rows, 1)``);
    ``*_truncate`` clamps it to ``[clip_min, clip_max]``, ``*_mask`` sets it to 0 outside.
    A token without a sampling log-prob (NaN) counts as ratio 1. Defaults are TRL's.

    >>> old = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1]]))
    >>> vllm = torch.log(torch.tensor([[0.25, 0.5], [0.1, float("nan")]]))
    >>> mask = torch.tensor([[1, 1], [1, 0]])
    >>> vllm_importance_ratio(old, vllm, mask).squeeze(1).tolist()   # 2.0 kept, 9.0 > 3 masked
    [2.0, 0.0]
    >>> vllm_importance_ratio(old, vllm, mask, mode="token_truncate").tolist()
    [[2.0, 1.0], [3.0, 1.0]]
    """
    if mode not in ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask"):
        raise ValueError(f"unknown vllm_importance_sampling_mode {mode!r}; expected token_/sequence_ + truncate/mask")
    difference = torch.nan_to_num((old_logps - sampling_logps) * mask, nan=0.0)
    if mode.startswith("sequence"):
        difference = difference.sum(dim=-1, keepdim=True)
    ratio = torch.exp(difference)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    low = -math.inf if clip_min is None else clip_min
    high = math.inf if clip_max is None else clip_max
    return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)


def group_advantages(rewards: torch.Tensor, group_ids: torch.Tensor, *, scale: str = "none") -> torch.Tensor:
    """Per-rollout advantage ``R_i - mean(R of its group)``, groups given by rollout-group id.

    ``scale="group"`` divides by the group's standard deviation (+1e-4, as TRL),
    ``"batch"`` by the whole batch's; ``"none"`` is Dr. GRPO (MemAgent). Groups need
    not be contiguous or equal-sized; a group whose rewards are all equal gets 0.

    >>> group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), torch.tensor([0, 0, 1, 1]))
    tensor([ 0.5000, -0.5000,  0.0000,  0.0000])
    """
    if rewards.shape != group_ids.shape or rewards.dim() != 1:
        raise ValueError(f"rewards {tuple(rewards.shape)} and group_ids {tuple(group_ids.shape)} must be equal 1-D shapes")
    if scale not in ("none", "group", "batch"):
        raise ValueError(f"scale must be 'none', 'group' or 'batch', got {scale!r}")
    _, inverse = torch.unique(group_ids, return_inverse=True)
    counts = torch.bincount(inverse).to(rewards.dtype)
    means = torch.zeros_like(counts).index_add_(0, inverse, rewards) / counts
    advantages = rewards - means[inverse]
    if scale == "group":
        squares = torch.zeros_like(counts).index_add_(0, inverse, advantages**2)
        std = torch.sqrt(squares / (counts - 1).clamp(min=1))  # unbiased, like TRL's nanstd
        advantages = advantages / (std[inverse] + 1e-4)
    elif scale == "batch":
        std = rewards.std() if rewards.numel() > 1 else rewards.new_zeros(())
        advantages = advantages / (std + 1e-4)
    return advantages


def rollout_group_ids(num_rollouts: int, num_generations: int, *, first_rollout: int = 0) -> list[int]:
    """GRPO group of each rollout of a process's slice: its *question's* position, never its own.

    TRL's sampler puts the ``num_generations`` copies of a question next to each other
    in the global generation batch and gives each process a contiguous slice, so the
    group is the global rollout position divided by G. (Grouping by trajectory instead
    would make every group a singleton and every advantage zero.)

    >>> rollout_group_ids(4, 2, first_rollout=4)
    [2, 2, 3, 3]
    """
    if num_generations < 1:
        raise ValueError(f"num_generations must be >= 1, got {num_generations!r}")
    return [(first_rollout + i) // num_generations for i in range(num_rollouts)]


@dataclass
class RowBatch:
    """The rows of a generation batch, before padding into tensors."""

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    advantages: list[float]
    token_weights: list[float]  # loss weight of each token of the row (1.0 for the token mean)
    rollout_index: list[int]  # which rollout a row came from; -1 for padding rows
    sampling_logps: list[list[float | None] | None] = field(default_factory=list)  # vLLM's, per completion token

    def __len__(self) -> int:
        return len(self.prompt_ids)


def rollout_rows(
    rollouts: Sequence[Rollout],
    advantages: Sequence[float],
    *,
    loss_aggregation: str = "token",
    total_tokens: int | None = None,
    total_rollouts: int | None = None,
) -> RowBatch:
    """One row per LLM call; every row of a rollout carries that rollout's advantage.

    With ``loss_aggregation="rollout"`` each token of rollout ``r`` is weighted
    ``total_tokens / (total_rollouts * tokens_r)``: TRL's token-mean loss then equals
    the mean over rollouts of each rollout's token mean. ``total_*`` default to this
    batch (pass the global counts when several processes share a batch).

    >>> from langgraph_memagent.training.rollouts import LLMCall, Rollout
    >>> rollout = Rollout(0, 0, [LLMCall([1], [2, 3], "m"), LLMCall([4], [5], "a")], {})
    >>> rows = rollout_rows([rollout], [0.5])
    >>> rows.completion_ids, rows.advantages
    ([[2, 3], [5]], [0.5, 0.5])
    """
    if len(rollouts) != len(advantages):
        raise ValueError(f"got {len(advantages)} advantages for {len(rollouts)} rollouts")
    if loss_aggregation not in ("token", "rollout"):
        raise ValueError(f"loss_aggregation must be 'token' or 'rollout', got {loss_aggregation!r}")
    total_tokens = sum(r.completion_tokens for r in rollouts) if total_tokens is None else total_tokens
    total_rollouts = len(rollouts) if total_rollouts is None else total_rollouts
    rows = RowBatch([], [], [], [], [])
    for index, (rollout, advantage) in enumerate(zip(rollouts, advantages)):
        weight = 1.0
        if loss_aggregation == "rollout":
            weight = total_tokens / (total_rollouts * max(rollout.completion_tokens, 1))
        for call in rollout.calls:
            rows.prompt_ids.append(call.prompt_ids)
            rows.completion_ids.append(call.completion_ids)
            rows.advantages.append(float(advantage))
            rows.token_weights.append(weight)
            rows.rollout_index.append(index)
            rows.sampling_logps.append(call.sampling_logps)
    return rows


def pad_rows(rows: RowBatch, multiple: int, pad_token_id: int) -> int:
    """Append zero-mask, zero-advantage rows until ``len(rows)`` is a multiple of ``multiple``.

    TRL splits a generation batch into ``steps_per_generation`` equal slices and drops
    the remainder; padding rows carry no loss, so nothing real is dropped and nothing
    fake is learnt. A padding row has a one-token prompt (an all-masked row would make
    attention undefined) and an empty completion. Returns the number of rows added.

    >>> rows = RowBatch([[1]] * 5, [[2]] * 5, [1.0] * 5, [1.0] * 5, list(range(5)))
    >>> pad_rows(rows, 4, pad_token_id=0), len(rows), rows.advantages[-1]
    (3, 8, 0.0)
    """
    if multiple < 1:
        raise ValueError(f"multiple must be >= 1, got {multiple!r}")
    missing = (-len(rows)) % multiple
    for _ in range(missing):
        rows.prompt_ids.append([pad_token_id])
        rows.completion_ids.append([])
        rows.advantages.append(0.0)
        rows.token_weights.append(0.0)
        rows.rollout_index.append(-1)
        rows.sampling_logps.append(None)
    return missing


def rows_to_tensors(rows: RowBatch, pad_token_id: int, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Left-padded prompts, right-padded completions, masks, advantages and per-token weights.

    >>> rows = RowBatch([[7, 8], [9]], [[1], [2, 3]], [0.5, -0.5], [1.0, 1.0], [0, 1])
    >>> batch = rows_to_tensors(rows, pad_token_id=0)
    >>> batch["prompt_ids"].tolist(), batch["completion_mask"].tolist()
    ([[7, 8], [0, 9]], [[1, 0], [1, 1]])
    """
    prompts = [torch.tensor(ids, dtype=torch.long) for ids in rows.prompt_ids]
    # An empty completion (padding row) still needs one column so every row has a width.
    completions = [torch.tensor(ids or [pad_token_id], dtype=torch.long) for ids in rows.completion_ids]
    completion_mask = [torch.full((max(len(ids), 1),), int(bool(ids)), dtype=torch.long) for ids in rows.completion_ids]
    weights = [torch.full((len(c),), w, dtype=torch.float32) for c, w in zip(completions, rows.token_weights)]
    tensors = {
        "prompt_ids": pad(prompts, padding_value=pad_token_id, padding_side="left").to(device),
        "prompt_mask": pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left").to(device),
        "completion_ids": pad(completions, padding_value=pad_token_id, padding_side="right").to(device),
        "completion_mask": pad(completion_mask, padding_value=0, padding_side="right").to(device),
        "token_weights": pad(weights, padding_value=0.0, padding_side="right").to(device),
        "advantages": torch.tensor(rows.advantages, dtype=torch.float32, device=device),
    }
    if any(logps is not None for logps in rows.sampling_logps):
        # NaN where no sampling log-prob exists (padding, masked calls): TRL's correction reads it as ratio 1.
        sampling = []
        for logps, ids in zip(rows.sampling_logps, rows.completion_ids):
            values = [math.nan if value is None else value for value in (logps or [])][: len(ids)]
            sampling.append(torch.tensor(values + [math.nan] * (max(len(ids), 1) - len(values)), dtype=torch.float32))
        tensors["sampling_logps"] = pad(sampling, padding_value=math.nan, padding_side="right").to(device)
    return tensors


# --------------------------------------------------------------------------------------
# Graphs, data and the rollout model
# --------------------------------------------------------------------------------------
def build_memagent_rollout_graph(model: Any, config: MultiConvGRPOConfig, tokenizer: Any) -> Any:
    """MemAgent with the config's budgets; chunking uses the policy's own tokenizer."""
    from ..graphs.memagent import build_memagent_graph

    return build_memagent_graph(
        model,
        chunk_tokens=config.chunk_tokens,
        memory_tokens=config.memory_tokens,
        answer_tokens=config.answer_tokens,
        final_prompt=config.final_prompt,
        tokenizer=tokenizer,
    )


def _memory_embeddings(config: MultiConvGRPOConfig) -> Any:
    """The embeddings of the baselines' memory search (``None``: their embedded default)."""
    if config.embeddings_model is None:
        return None
    from ..baselines.embeddings import load_embeddings

    return load_embeddings(config.embeddings_model)


def build_sumer_rollout_graph(model: Any, config: MultiConvGRPOConfig, tokenizer: Any) -> Any:
    """SUMER's search loop with the config's caps; one memory bank shared by all rollouts.

    The bank ingests a conversation (or document) once and every rollout of its group
    searches the same items; the forced answer at the turn cap stays on (its call is a row).
    """
    from ..baselines.sumer import build_sumer_graph

    return build_sumer_graph(
        model,
        embeddings=_memory_embeddings(config),
        max_turns=config.max_turns,
        max_parallel_calls=config.max_parallel_calls,
        max_context_tokens=config.max_context_tokens,
        tokenizer=tokenizer,
        turn_tokens=config.turn_tokens,
        answer_tokens=config.answer_tokens,
        chunk_tokens=config.chunk_tokens,
        final_prompt=config.final_prompt,
    )


def build_agemem_rollout_graph(model: Any, config: MultiConvGRPOConfig, tokenizer: Any) -> Any:
    """AgeMem's three-stage rollout (build memory, distractors, question) with the config's caps.

    Each run keeps its long-term memory under a fresh user id that is cleared after the
    answer, so concurrent rollouts never read each other's memory.
    """
    from ..baselines.agemem import build_agemem_qa_graph

    return build_agemem_qa_graph(
        model,
        embeddings=_memory_embeddings(config),
        tokenizer=tokenizer,
        chunk_tokens=config.chunk_tokens,
        distractor_messages=config.agemem_distractor_messages,
        max_turns_per_message=config.agemem_turns_per_message,
        max_stage_turns=config.agemem_stage_turns,
        turn_tokens=config.turn_tokens,
        max_context_tokens=config.max_context_tokens,
    )


GraphBuilder = Callable[[Any, MultiConvGRPOConfig, Any], Any]
GRAPH_BUILDERS: dict[str, GraphBuilder] = {
    "memagent": build_memagent_rollout_graph,
    "sumer": build_sumer_rollout_graph,
    "agemem": build_agemem_rollout_graph,
}


def memagent_graph_input(sample: dict[str, Any]) -> dict[str, Any]:
    """The MemAgent input of a dataset row.

    >>> memagent_graph_input({"question": "q?", "document": "text", "answers": ["a"]})
    {'question': 'q?', 'document': 'text'}
    """
    return {"question": sample["question"], "document": sample["document"]}


def _row_turns(sample: dict[str, Any]) -> list[dict[str, Any]] | None:
    turns = sample.get("turns")
    if not turns and isinstance(sample.get("meta"), dict):
        turns = sample["meta"].get("turns")
    if not turns:
        return None
    if not isinstance(turns, list) or not all(isinstance(turn, dict) for turn in turns):
        raise ValueError(f"row field 'turns' must be a list of message dicts (LoCoMo turns), got {turns!r:.80}")
    # A datasets.Dataset gives every turn every key seen in any turn, None where absent.
    return [{key: value for key, value in turn.items() if value is not None} for turn in turns]


def conversation_graph_input(sample: dict[str, Any]) -> dict[str, Any]:
    """The SUMER / AgeMem input of a dataset row: question and document, plus ``turns`` when it has them.

    Turns come from the row's ``turns`` or ``meta["turns"]`` (LoCoMo rows). A row's
    ``distractors`` are not passed on: they are the needle values the lenient reward
    refuses, not AgeMem's stage-2 messages (those default to essay prose).

    >>> conversation_graph_input({"question": "q?", "document": "Ann: hi", "answers": ["a"],
    ...                           "turns": [{"speaker": "Ann", "text": "hi", "blip_caption": None}]})
    {'question': 'q?', 'document': 'Ann: hi', 'turns': [{'speaker': 'Ann', 'text': 'hi'}]}
    """
    graph_input = memagent_graph_input(sample)
    turns = _row_turns(sample)
    if turns:
        graph_input["turns"] = turns
    return graph_input


GraphInput = Callable[[dict[str, Any]], dict[str, Any]]
GRAPH_INPUTS: dict[str, GraphInput] = {
    "memagent": memagent_graph_input,
    "sumer": conversation_graph_input,
    "agemem": conversation_graph_input,
}


def default_reward(config: MultiConvGRPOConfig, *, judge: Any = None) -> RewardFn:
    """The reward of ``config.graph``: MemAgent's answer verifier, SUMER's J x F1, AgeMem's composite.

    SUMER needs an LLM judge: ``judge`` (any chat model) or ``config.judge_model``;
    without either it fails unless ``config.reward_metric == "f1"`` chose the judge-free
    fallback; with ``config.sumer_require_submit`` (the paper's rule) only answers given
    through ``submit_answer`` count (:class:`SubmittedAnswersOnly`). AgeMem's limits are ``config.max_context_tokens`` (resolved by the trainer
    from the policy's window when unset) and ``config.agemem_turn_limit``.

    >>> default_reward(MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="sumer"))
    Traceback (most recent call last):
    ...
    ValueError: graph 'sumer' needs an LLM judge for its J x F1 reward: set judge_model (a model spec, e.g. 'smollm2-135m' or 'vllm:<model>' with judge_base_url), or choose the judge-free fallback explicitly with reward_metric='f1'
    """
    if config.graph == "sumer":
        reward = _sumer_reward(config, judge)
        return SubmittedAnswersOnly(reward) if config.sumer_require_submit else reward
    if config.graph == "agemem":
        if config.max_context_tokens is None:
            raise ValueError(
                "graph 'agemem' needs max_context_tokens for its reward's context limit (the trainer sets it from "
                "the policy's window when unset)"
            )
        return AgeMemReward(
            context_limit=config.max_context_tokens,
            turn_limit=config.agemem_turn_limit,
            config=AgeMemRewardConfig(task_metric=config.reward_metric or GRAPH_DEFAULTS["agemem"]["reward_metric"]),
        )
    return AnswerReward(config.reward_metric or GRAPH_DEFAULTS["memagent"]["reward_metric"])


def _sumer_reward(config: MultiConvGRPOConfig, judge: Any) -> RewardFn:
    """SUMER's J x F1 with ``judge`` or ``config.judge_model``, or the explicitly chosen judge-free F1."""
    if config.reward_metric == "f1":
        return JudgeFreeSumerReward()
    if judge is None and config.judge_model is None:
        raise ValueError(
            "graph 'sumer' needs an LLM judge for its J x F1 reward: set judge_model (a model spec, e.g. "
            "'smollm2-135m' or 'vllm:<model>' with judge_base_url), or choose the judge-free fallback explicitly "
            "with reward_metric='f1'"
        )
    if judge is None:
        from ..agents.loading import load_chat_model

        options = {"base_url": config.judge_base_url} if config.judge_base_url else {}
        judge = load_chat_model(config.judge_model, **options)
    return SumerReward(LLMJudge(judge, max_tokens=config.judge_max_tokens))


def context_budget(config: MultiConvGRPOConfig, window: int | None) -> int | None:
    """``config.max_context_tokens``, or the default for ``config.graph`` given the policy's ``window``.

    SUMER ends an episode when the next prompt would not fit the window with room for
    one turn; AgeMem keeps at most 4096 tokens (its graph's default for local models,
    chosen for CPU prefill). MemAgent needs none.

    >>> base = dict(output_dir="/tmp/x", bf16=False, turn_tokens=256)
    >>> [context_budget(MultiConvGRPOConfig(graph=g, **base), 8192) for g in ("memagent", "sumer", "agemem")]
    [None, 7936, 4096]
    """
    if config.max_context_tokens is not None or config.graph not in ("sumer", "agemem"):
        return config.max_context_tokens
    if window is None:
        raise ValueError(
            f"graph {config.graph!r}: the policy's context window is unknown (no max_position_embeddings in its "
            "config); set max_context_tokens"
        )
    room = window - config.turn_tokens
    if room < 1:
        raise ValueError(f"turn_tokens={config.turn_tokens} leaves no room in the policy's {window}-token window")
    if config.graph == "agemem":
        from ..baselines.agemem import LOCAL_CONTEXT_TOKENS

        return min(room, LOCAL_CONTEXT_TOKENS)
    return room


def _policy_window(model: Any) -> int | None:
    """``max_position_embeddings`` of a loaded policy (PEFT-wrapped or not) or of a model id/directory."""
    model_config = getattr(model, "config", None)
    if model_config is None and isinstance(model, (str, Path)):
        from transformers import AutoConfig

        model_config = AutoConfig.from_pretrained(str(model))
    return getattr(model_config, "max_position_embeddings", None)


def policy_chat_model(trainer: "MultiConvGRPOTrainer") -> Any:
    """A chat model generating with the trainer's policy module itself (current weights, adapter on)."""
    from ..agents.local_model import LocalChatModel

    args = trainer.args
    return LocalChatModel.from_model(
        trainer.accelerator.unwrap_model(trainer.model),
        trainer.processing_class,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_completion_length,
        max_batch_size=args.generation_max_batch_size,
    )


def vllm_chat_model(trainer: "MultiConvGRPOTrainer") -> Any:
    """A chat model generating with TRL's vLLM (``--use_vllm``): its colocated engine, or the server.

    In server mode every process sends its own rollouts' calls over HTTP (the main
    process through TRL's client, which also pushes the weights; the others through a
    client of their own), so no process waits on another's number of calls. Each reply
    carries vLLM's sampling log-probs for the importance-sampling correction.
    """
    from ..agents.vllm_engine import VLLMEngineChatModel, VLLMServerEngine

    args, generation = trainer.args, trainer.vllm_generation
    if args.vllm_mode == "colocate":
        engine = generation.llm
    else:
        client = getattr(generation, "vllm_client", None)
        if client is None:  # TRL connects the main process only
            from trl.generation.vllm_client import VLLMClient

            base_url = args.vllm_server_base_url or f"http://{args.vllm_server_host}:{args.vllm_server_port}"
            client = VLLMClient(base_url=base_url, connection_timeout=args.vllm_server_timeout)
        engine = VLLMServerEngine(client, trainer._tokenizer)
    return VLLMEngineChatModel(
        model=str(args.model_name_or_path),  # a label: the engine is already loaded
        engine=engine,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_completion_length,
        logprobs=True,
    )


def _needle_values(document: str) -> list[str]:
    """Values of every RULER needle sentence in a document, in order of appearance."""
    from ..evals.ruler import NEEDLE

    pattern = re.escape(NEEDLE).replace(r"\{value_type\}", r"\w+").replace(r"\{key\}", r"\S+?")
    return re.findall(pattern.replace(r"\{value\}", r"(\S+?)"), document)


def _sample_record(sample: Any) -> dict[str, Any]:
    answers = [str(answer) for answer in sample.answers]
    # Needles whose values are not gold are the distractors a lenient reward must not pay for.
    distractors = [value for value in _needle_values(sample.document) if value not in answers]
    return {
        "question": sample.question,
        "document": sample.document,
        "answers": answers,
        "distractors": distractors,
        "task": sample.task,
    }


def generate_samples(
    task: str, codec: Any, *, num_samples: int, target_tokens: int, seed: int, num_keys: int | None = None
) -> list[dict[str, Any]]:
    """Generated task records (``question``, ``document``, ``answers``, ``distractors``, ``task``).

    Uses ``evals.ruler.generate_task`` (all RULER-style tasks, with distractor needles
    for the multi-key ones; ``num_keys`` sets how many needles those hold).
    ``distractors`` lists the values of the document's needles that are not gold.
    """
    from ..evals.ruler import generate_task

    options = {} if num_keys is None else {"num_keys": num_keys}
    samples = generate_task(task, target_tokens, codec=codec, num_samples=num_samples, seed=seed, **options)
    return [_sample_record(sample) for sample in samples]


def _question_of(record: dict[str, Any]) -> Any:
    prompt = record.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[-1], dict):
        return prompt[-1].get("content")
    return record.get("question", record.get("input"))


def load_training_file(path: str | Path) -> list[dict[str, Any]]:
    """Records of a JSON list, JSONL or parquet file in MemAgent's training or evaluation format.

    Accepted fields: question from ``prompt`` (chat messages or a string), ``question`` or
    ``input``; document from ``context`` or ``document``; golds from
    ``reward_model.ground_truth`` or ``answers``. A record missing one raises with its index.
    A conversation's raw messages (``turns`` or ``meta.turns``, LoCoMo's turn dicts) are
    kept as ``turns`` for the SUMER and AgeMem graphs.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"train_file {str(path)!r} does not exist")
    if path.suffix == ".parquet":
        import pandas

        raw = pandas.read_parquet(path).to_dict(orient="records")
    else:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            if path.suffix == ".jsonl":
                raw = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                raw = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"train_file {str(path)!r} is not valid JSON{' lines' if path.suffix == '.jsonl' else ''}: {error}") from None
    if not isinstance(raw, list):
        raise ValueError(f"train_file {str(path)!r} must hold a list of records, got {type(raw).__name__}")
    records = []
    for index, record in enumerate(raw):
        question, document = _question_of(record), record.get("context", record.get("document"))
        if not isinstance(question, str) or not isinstance(document, str):
            raise ValueError(
                f"record {index} of {str(path)!r}: expected a question ('prompt', 'question' or 'input') and a "
                f"document string ('context' or 'document'); keys: {sorted(record)}"
            )
        answers = record.get("reward_model")
        if isinstance(answers, dict) and not isinstance(answers.get("ground_truth"), (str, list)):
            answers = {"ground_truth": list(answers["ground_truth"])}  # parquet stores lists as arrays
        golds = gold_answers({"answers": record.get("answers"), "reward_model": answers} if answers else record)
        row = {"question": question, "document": document, "answers": golds, "distractors": [], "task": "file"}
        turns = _row_turns(record)
        if turns:
            row["turns"] = turns
        records.append(row)
    return records


# --------------------------------------------------------------------------------------
# The trainer
# --------------------------------------------------------------------------------------
@contextmanager
def _eval_mode(module: torch.nn.Module):
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)


class RewardCurveCallback(TrainerCallback):
    """Writes ``reward_curve.png`` (mean rollout reward per logged step) when training ends."""

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            plot_reward_curve(state.log_history, Path(args.output_dir) / "reward_curve.png")


def plot_reward_curve(log_history: Sequence[dict[str, Any]], path: str | Path, *, window: int = 4) -> Path | None:
    """Plot the mean reward of each rollout batch against ``step``; ``None`` if nothing was logged.

    With one question per batch (``cpu-smoke``) batch means jump between 0 and 1, so a running
    mean over ``window`` batches is drawn over them. Each change of the logged rollout
    ``temperature`` (a run resumed at a new temperature) is marked with a dashed line and
    restarts the running mean. KL to the reference goes on a second axis. With dynamic
    sampling the points are each batch's first draw (``dynamic_sampling/first_draw_reward``),
    what the policy scored before flat groups were replaced, so filtering cannot flatter the curve.

    Example::

        >>> plot_reward_curve([{"step": 1, "reward": 0.5, "kl": 0.0}], "/tmp/curve.png")  # doctest: +SKIP
    """
    entries = [entry for entry in log_history if "reward" in entry]
    if not entries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Segments of equal rollout temperature: the running mean restarts in each.
    segments: list[list[dict[str, Any]]] = []
    for entry in entries:
        if not segments or entry.get("temperature") != segments[-1][0].get("temperature"):
            segments.append([])
        segments[-1].append(entry)
    figure, axes = plt.subplots(figsize=(7, 4))
    lines = []
    point_label = "batch mean reward" + (" (first draw)" if any(FIRST_DRAW_REWARD in entry for entry in entries) else "")
    for number, segment in enumerate(segments):
        steps, rewards = [entry["step"] for entry in segment], [_policy_reward(entry) for entry in segment]
        first = number == 0
        lines += axes.plot(steps, rewards, "o", color="tab:blue", alpha=0.45, label=point_label if first else None)
        lines += axes.plot(steps, running_mean(rewards, window), color="tab:orange", linewidth=2, label=f"running mean ({window} batches)" if first else None)
        if "temperature" in segment[0]:
            if not first:
                axes.axvline(steps[0] - 0.5, color="black", linestyle="--", linewidth=1)
            axes.annotate(f"T = {segment[0]['temperature']:g}", (steps[0], 0.94), xycoords=("data", "axes fraction"), fontsize=9)
    if any("kl" in entry for entry in entries):
        kl_axes = axes.twinx()
        kl = [entry.get("kl", float("nan")) for entry in entries]
        lines += kl_axes.plot([entry["step"] for entry in entries], kl, color="tab:gray", linestyle=":", label="KL to reference")
        kl_axes.set_ylabel("KL to reference", color="tab:gray")
    # Room above the points for the temperature labels; SUMER's reward goes down to -1.
    low, high = min(map(_policy_reward, entries)), max(map(_policy_reward, entries))
    axes.set_ylim(min(-0.05, low - 0.05), max(1.15, high + 0.15))
    axes.legend(handles=[line for line in lines if not line.get_label().startswith("_")], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=8)
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("reward")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _policy_reward(entry: dict[str, Any]) -> float:
    return entry.get(FIRST_DRAW_REWARD, entry["reward"])


def running_mean(values: Sequence[float], window: int) -> list[float]:
    """Mean of each value and the up to ``window - 1`` values before it: ``[1, 0, 1]``, 2 -> ``[1, 0.5, 0.5]``."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return [sum(values[max(0, i + 1 - window) : i + 1]) / (i + 1 - max(0, i + 1 - window)) for i in range(len(values))]


class MultiConvGRPOTrainer(GRPOTrainer):
    """GRPO over multi-conversation rollouts: every LLM call of a graph run is a row.

    Args:
        model: the policy (a loaded causal LM, PEFT-wrapped or not, or a model id).
        args: a :class:`MultiConvGRPOConfig`.
        train_dataset: rows with the graph's input fields and gold answers (``answers``
            or ``reward_model.ground_truth``); see :func:`generate_samples`.
        reward_fn: ``reward_fn(graph_output, row) -> float`` (one with a ``batch(outputs,
            rows)`` method scores a whole rollout batch at once, e.g. the SUMER judge);
            default :func:`default_reward` of ``args``.
        graph_builder: ``graph_builder(chat_model, args, tokenizer) -> graph``; default
            from ``GRAPH_BUILDERS[args.graph]``.
        graph_input: ``graph_input(row) -> graph input``; default from
            ``GRAPH_INPUTS[args.graph]`` (question + document, plus ``turns`` for the
            baselines).
        rollout_model: ``rollout_model(trainer) -> chat model``; default
            :func:`policy_chat_model` (generation on the current policy), or
            :func:`vllm_chat_model` with ``use_vllm``. Anything else must generate with
            the current weights or the ratio is off-policy.
        peft_config, processing_class, callbacks, eval_dataset: as TRL's ``GRPOTrainer``.
    """

    _tag_names = ["trl", "grpo", "memagent", "multi-conversation"]

    def __init__(
        self,
        model: Any,
        args: MultiConvGRPOConfig,
        train_dataset: Any,
        *,
        reward_fn: RewardFn | None = None,
        graph_builder: GraphBuilder | None = None,
        graph_input: GraphInput | None = None,
        rollout_model: Callable[["MultiConvGRPOTrainer"], Any] | None = None,
        processing_class: Any = None,
        peft_config: Any = None,
        eval_dataset: Any = None,
        callbacks: list[TrainerCallback] | None = None,
    ):
        if not isinstance(args, MultiConvGRPOConfig):
            raise TypeError(f"args must be a MultiConvGRPOConfig, got {type(args).__name__}")
        if graph_builder is None and args.graph not in GRAPH_BUILDERS:
            raise ValueError(f"unknown graph {args.graph!r}; expected one of {sorted(GRAPH_BUILDERS)}")
        if args.max_context_tokens is None and args.graph in ("sumer", "agemem"):
            # Resolved once here, so the graph's budget and the reward's limit are the same number.
            args.max_context_tokens = context_budget(args, _policy_window(model))
            logger.info("graph %s: max_context_tokens = %d", args.graph, args.max_context_tokens)
        self.rollout_reward = reward_fn or default_reward(args)
        self.graph_builder = graph_builder or GRAPH_BUILDERS[args.graph]
        self.graph_input = graph_input or GRAPH_INPUTS.get(args.graph, memagent_graph_input)
        self.rollout_model = rollout_model or (vllm_chat_model if args.use_vllm else policy_chat_model)
        self._rollout_graph: Any = None
        callbacks = list(callbacks or [])
        if args.reward_curve:
            callbacks.append(RewardCurveCallback())
        super().__init__(
            model=model,
            # TRL requires a reward source; the reward is applied per rollout in
            # _generate_and_score_completions, never through TRL's per-completion path.
            reward_funcs=[self.rollout_reward],
            args=args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            callbacks=callbacks,
            peft_config=peft_config,
        )
        if args.dynamic_sampling_rounds and self.accelerator.num_processes > 1:
            # Ranks would replace different numbers of groups, i.e. make different numbers of
            # generate calls, which deadlocks ZeRO-3 gathers and tensor-parallel vLLM.
            raise ValueError(
                f"dynamic_sampling_rounds={args.dynamic_sampling_rounds} needs one process, got {self.accelerator.num_processes}"
            )

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs: Any) -> Any:
        """TRL's ``train``; refuses a checkpoint that has already reached ``max_steps``.

        transformers' ``Trainer`` resumed there still trains (checkpoint 40 of a 40-step
        run went on to steps 41 and 42, BENCHMARKS.md section 6), which would silently
        change a finished run.
        """
        checkpoint = get_last_checkpoint(self.args.output_dir) if resume_from_checkpoint is True else resume_from_checkpoint
        state_file = Path(checkpoint, "trainer_state.json") if isinstance(checkpoint, str) else None
        if state_file is not None and state_file.is_file() and self.args.max_steps > 0:
            done = TrainerState.load_from_json(str(state_file)).global_step
            if done >= self.args.max_steps:
                raise ValueError(
                    f"{checkpoint} is at step {done} and max_steps is {self.args.max_steps}: nothing left to train; "
                    "raise --max_steps to train further"
                )
        return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    # Rollouts -------------------------------------------------------------------------
    def _graph(self) -> Any:
        if self._rollout_graph is None:
            self._rollout_graph = self.graph_builder(self.rollout_model(self), self.args, self._tokenizer)
        return self._rollout_graph

    def _run_rollouts(self, inputs: list[dict[str, Any]], group_ids: list[int], first_rollout_id: int) -> list[Rollout]:
        graph_inputs = [self.graph_input(sample) for sample in inputs]
        concurrency = self.args.rollout_concurrency or None
        if self.use_vllm:
            if self.state.global_step != self._last_loaded_step:  # push the weights once per optimizer step
                self.vllm_generation.sync_weights()
                self._last_loaded_step = self.state.global_step
            return run_rollouts(self._graph(), graph_inputs, group_ids, max_concurrency=concurrency, first_rollout_id=first_rollout_id)
        unwrapped_context = unwrap_model_for_generation(
            self.model_wrapped,
            self.accelerator,
            gather_deepspeed3_params=self.args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=self.args.activation_checkpointing_kwargs,
        )
        with unwrapped_context as unwrapped, torch.no_grad(), _eval_mode(unwrapped):
            return run_rollouts(self._graph(), graph_inputs, group_ids, max_concurrency=concurrency, first_rollout_id=first_rollout_id)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, torch.Tensor | Any]:
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        first = self.accelerator.process_index * len(inputs)
        group_ids = rollout_group_ids(len(inputs), num_generations, first_rollout=first)
        started = time.perf_counter()
        rollouts = self._run_rollouts(inputs, group_ids, first)
        self._score_rollouts(rollouts, inputs)
        if mode == "train" and self.args.dynamic_sampling_rounds:
            rollouts = self._replace_flat_groups(rollouts, num_generations, next_rollout_id=first + len(inputs))
        seconds = time.perf_counter() - started
        return self._batch_from_rollouts(rollouts, mode, rollout_seconds=seconds)

    def _score_rollouts(self, rollouts: Sequence[Rollout], inputs: Sequence[dict[str, Any]]) -> None:
        score_batch = getattr(self.rollout_reward, "batch", None)
        if callable(score_batch):
            # One batched judge call for the whole rollout batch instead of one per rollout.
            rewards = score_batch([rollout.output for rollout in rollouts], inputs)
            for rollout, reward in zip(rollouts, rewards, strict=True):
                rollout.reward = float(reward)
        else:
            score_rollouts(rollouts, inputs, self.rollout_reward)

    def _replace_flat_groups(self, rollouts: list[Rollout], num_generations: int, *, next_rollout_id: int) -> list[Rollout]:
        """DAPO's dynamic sampling: swap each group with one reward for all its rollouts for a fresh question's group.

        Such a group has zero advantage everywhere, so its rows would cost a full
        optimizer pass and teach nothing. Fresh questions are drawn from the training set
        (seeded by ``seed`` and the step) and keep the replaced group's id and place.
        Logs the first draw's reward (``dynamic_sampling/first_draw_reward``: what the
        policy scores before filtering) and the groups replaced.
        """
        metrics = self._metrics["train"]
        metrics[FIRST_DRAW_REWARD].append(sum(r.reward for r in rollouts) / len(rollouts))
        replaced = 0
        for round_number in range(self.args.dynamic_sampling_rounds):
            flat = [group for group in dict.fromkeys(r.group_id for r in rollouts) if len({r.reward for r in rollouts if r.group_id == group}) == 1]
            if not flat:
                break
            draw = random.Random(hash((self.args.seed, self.state.global_step, round_number)))
            questions = [self.train_dataset[draw.randrange(len(self.train_dataset))] for _ in flat]
            inputs = [question for question in questions for _ in range(num_generations)]
            group_ids = [group for group in flat for _ in range(num_generations)]
            fresh = self._run_rollouts(inputs, group_ids, next_rollout_id)
            self._score_rollouts(fresh, inputs)
            next_rollout_id += len(fresh)
            replaced += len(flat)
            by_group: dict[int, list[Rollout]] = {}
            for rollout in fresh:
                by_group.setdefault(rollout.group_id, []).append(rollout)
            rollouts = [by_group[r.group_id].pop(0) if r.group_id in by_group else r for r in rollouts]
        metrics["dynamic_sampling/replaced_groups"].append(replaced)
        return rollouts

    def _batch_from_rollouts(
        self, rollouts: Sequence[Rollout], mode: str, *, rollout_seconds: float = 0.0
    ) -> dict[str, torch.Tensor | Any]:
        """Scored rollouts of this process -> the dict TRL's ``_compute_loss`` consumes.

        Advantages are computed over the rollouts of all processes (a group may span
        processes), then this process's rows are built, padded and scored by the old
        and reference policies.
        """
        device = self.accelerator.device
        first = self.accelerator.process_index * len(rollouts)
        rewards = self.accelerator.gather(torch.tensor([r.reward for r in rollouts], dtype=torch.float32, device=device))
        groups = self.accelerator.gather(torch.tensor([r.group_id for r in rollouts], dtype=torch.long, device=device))
        all_advantages = group_advantages(rewards, groups, scale=self.scale_rewards)
        advantages = all_advantages[first : first + len(rollouts)]

        if self.mask_truncated_completions:
            # A call cut off at its token limit carries no loss (and no tokens in the mean).
            for rollout in rollouts:
                for call in rollout.calls:
                    if call.completion_ids and call.completion_ids[-1] not in self.eos_token_ids:
                        call.completion_ids = []
        local_tokens = torch.tensor(sum(r.completion_tokens for r in rollouts), device=device)
        rows = rollout_rows(
            rollouts,
            advantages.tolist(),
            loss_aggregation=self.args.loss_aggregation,
            total_tokens=int(self.accelerator.gather(local_tokens).sum().item()),
            total_rollouts=int(rewards.numel()),
        )
        padding = pad_rows(rows, self.args.steps_per_generation, self._tokenizer.pad_token_id) if mode == "train" else 0
        batch = rows_to_tensors(rows, self._tokenizer.pad_token_id, device)
        completion_mask = batch["completion_mask"]
        old_per_token_logps, ref_per_token_logps = self._reference_logps(batch, mode)
        self._log_rollouts(mode, rollouts, rewards, groups, all_advantages, rows, padding, rollout_seconds)

        output = {
            "prompt_ids": batch["prompt_ids"],
            "prompt_mask": batch["prompt_mask"],
            "completion_ids": batch["completion_ids"],
            "completion_mask": completion_mask,
            "advantages": batch["advantages"],
            "num_items_in_batch": self.accelerator.gather(completion_mask.sum()).sum(),
        }
        if self.args.loss_aggregation == "rollout":
            # TRL's loss mask is completion_mask * tool_mask; per-token weights there turn its
            # token mean into a mean over rollouts (see rollout_rows).
            output["tool_mask"] = batch["token_weights"]
        if old_per_token_logps is not None:
            output["old_per_token_logps"] = old_per_token_logps
        if self._corrects_vllm_sampling:
            if "sampling_logps" not in batch:
                raise MissingTokenIdsError(
                    "vllm_importance_sampling_correction needs each call's sampling log-probs "
                    "(response_metadata['completion_logprobs']); the rollout model reported none"
                )
            output["sampling_per_token_logps"] = batch["sampling_logps"]
            output["importance_sampling_ratio"] = vllm_importance_ratio(
                old_per_token_logps,
                batch["sampling_logps"],
                completion_mask,
                mode=self.vllm_importance_sampling_mode,
                clip_min=self.vllm_importance_sampling_clip_min,
                clip_max=self.vllm_importance_sampling_clip_max,
            )
        if ref_per_token_logps is not None:
            output["ref_per_token_logps"] = ref_per_token_logps
        return output

    def _reference_logps(self, batch: dict[str, torch.Tensor], mode: str) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Old-policy log-probs (needed when a rollout batch feeds several optimizer steps) and reference ones."""
        input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        logits_to_keep = batch["completion_ids"].size(1)
        batch_size = self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size
        old, ref = None, None
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.activation_checkpointing_kwargs):
            generate_every = self.args.steps_per_generation * self.num_iterations
            if self.args.gradient_accumulation_steps % generate_every != 0 or self._corrects_vllm_sampling:
                old, _, _ = self._get_per_token_logps_and_entropies(
                    self.model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size
                )
            if self.beta != 0.0:
                if self.ref_model is not None:
                    ref, _, _ = self._get_per_token_logps_and_entropies(
                        self.ref_model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size
                    )
                else:
                    # PEFT: the reference is the base model (adapter disabled) or a frozen "ref" adapter.
                    unwrapped = self.accelerator.unwrap_model(self.model)
                    with use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None):
                        ref, _, _ = self._get_per_token_logps_and_entropies(
                            self.model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size
                        )
        return old, ref

    @property
    def _corrects_vllm_sampling(self) -> bool:
        """Whether vLLM sampled the rollouts and TRL's importance-sampling correction applies to them."""
        return self.use_vllm and self.vllm_importance_sampling_correction

    def _log_rollouts(
        self,
        mode: str,
        rollouts: Sequence[Rollout],
        rewards: torch.Tensor,
        groups: torch.Tensor,
        advantages: torch.Tensor,
        rows: RowBatch,
        padding: int,
        seconds: float,
    ) -> None:
        metrics = self._metrics[mode]
        zero_spread = [bool((rewards[groups == group] == rewards[groups == group][0]).all()) for group in groups.unique()]
        conversations = [len(r.calls) for r in rollouts]
        metrics["reward"].append(rewards.mean().item())
        metrics["reward_std"].append(rewards.std().item() if rewards.numel() > 1 else 0.0)
        metrics["frac_reward_zero_std"].append(sum(zero_spread) / len(zero_spread))
        metrics["advantages/mean"].append(advantages.mean().item())
        metrics["advantages/abs_mean"].append(advantages.abs().mean().item())
        metrics["advantages/min"].append(advantages.min().item())
        metrics["advantages/max"].append(advantages.max().item())
        metrics["conversations_per_rollout/mean"].append(sum(conversations) / len(conversations))
        metrics["conversations_per_rollout/min"].append(min(conversations))
        metrics["conversations_per_rollout/max"].append(max(conversations))
        metrics["tokens/completion_per_rollout"].append(sum(r.completion_tokens for r in rollouts) / len(rollouts))
        metrics["tokens/prompt_per_row"].append(sum(map(len, rows.prompt_ids[: len(rows) - padding])) / max(len(rows) - padding, 1))
        metrics["rows"].append(len(rows) - padding)
        metrics["padding_rows"].append(padding)
        metrics["rollout_seconds"].append(seconds)
        metrics["temperature"].append(self.temperature)  # marks a temperature curriculum on the reward curve
        if self.accelerator.is_main_process:
            logger.info(
                "rollout batch at step %d: %d rollouts, %d rows (+%d padding), reward %.3f +- %.3f, %.1f s",
                self.state.global_step, len(rollouts), len(rows) - padding, padding,
                rewards.mean().item(), metrics["reward_std"][-1], seconds,
            )


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------
_DESCRIPTION = (
    "Multi-conversation GRPO (MemAgent's Multi-Conv DAPO) on TRL. Presets: "
    + "; ".join(f"--preset {name}" for name in PRESETS)
    + ". Options given after a preset override it. The presets are MemAgent's: with --graph sumer or agemem "
    "their reward_metric and chunk_tokens are not applied (those graphs have their own defaults); with another "
    "--task, their num_keys is not applied."
)
# Preset values that only mean something for MemAgent (its verifier and its chunk size).
_PROG = "grpo_multiconv"
_MEMAGENT_ONLY = ("reward_metric", "chunk_tokens")
# Preset values that only mean something for the preset's own task (dropped with --task).
_TASK_ONLY = ("num_keys",)


def parse_config(argv: Sequence[str] | None = None) -> MultiConvGRPOConfig:
    """Parse the command line into a :class:`MultiConvGRPOConfig`, applying ``--preset`` first.

    >>> parse_config(["--preset", "cpu-smoke", "--output_dir", "/tmp/x", "--max_steps", "2"]).max_steps
    2
    """
    from transformers import HfArgumentParser

    argv = list(sys.argv[1:] if argv is None else argv)
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--preset", default=None)
    early.add_argument("--graph", default="memagent")
    early.add_argument("--task", default=None)
    known = early.parse_known_args(argv)[0]
    preset = known.preset
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown --preset {preset!r}; expected one of {sorted(PRESETS)}")
    parser = HfArgumentParser(MultiConvGRPOConfig, description=_DESCRIPTION)
    if preset is not None:
        defaults = PRESETS[preset]
        if known.graph != "memagent":
            defaults = {key: value for key, value in defaults.items() if key not in _MEMAGENT_ONLY}
        if known.task not in (None, defaults.get("task")):
            defaults = {key: value for key, value in defaults.items() if key not in _TASK_ONLY}
        parser.set_defaults(**defaults)
    (config,) = parser.parse_args_into_dataclasses(args=argv)
    return config


def load_policy(config: MultiConvGRPOConfig) -> tuple[Any, Any]:
    """The policy model and tokenizer named by ``config.model_name_or_path`` (float32 on CPU)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = config.model_name_or_path
    if name == "smollm2-135m":
        from ..agents.embedded import embedded_model_dir

        name = str(embedded_model_dir())
    dtype = torch.bfloat16 if config.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
    return model, AutoTokenizer.from_pretrained(name)


def lora_config(config: MultiConvGRPOConfig) -> Any:
    """The PEFT LoRA config of ``config`` (``None`` for full fine-tuning)."""
    if not config.use_lora:
        return None
    from peft import LoraConfig

    targets = config.lora_target_modules
    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=targets if targets == "all-linear" else [name.strip() for name in targets.split(",")],
        task_type="CAUSAL_LM",
    )


def training_dataset(config: MultiConvGRPOConfig, tokenizer: Any, records: list[dict[str, Any]] | None = None) -> Any:
    """The training rows: ``records`` (already read from ``train_file``), ``train_file``, or generated ``task`` samples."""
    from datasets import Dataset

    from ..agents.tokenizers import resolve_tokenizer

    if records is not None:
        pass
    elif config.train_file:
        records = load_training_file(config.train_file)
    else:
        records = generate_samples(
            config.task,
            resolve_tokenizer(tokenizer),
            num_samples=config.num_train_samples,
            target_tokens=config.target_tokens,
            seed=config.data_seed,
            num_keys=config.num_keys,
        )
    return Dataset.from_list(records)


def main(argv: Sequence[str] | None = None) -> int:
    """Train from the command line; returns the process exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        # Everything a user can get wrong is checked before the policy loads: the config (all bad
        # fields at once, then TRL's own checks) and the training file.
        config = parse_config(argv)
        records = load_training_file(config.train_file) if config.train_file else None
    except (ValueError, OSError) as error:
        for line in str(error).splitlines():
            print(f"{_PROG}: error: {line}", file=sys.stderr)
        return 2
    model, tokenizer = load_policy(config)
    dataset = training_dataset(config, tokenizer, records)
    trainer = MultiConvGRPOTrainer(
        model, args=config, train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(config)
    )
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    trainer.save_model(config.output_dir)
    steps = [entry for entry in trainer.state.log_history if "step_time" in entry]
    if steps:
        seconds = sum(entry["step_time"] for entry in steps) / len(steps)
        logger.info("mean optimizer-step time (excluding rollouts): %.2f s", seconds)
    return 0


__all__ = [
    "GRAPH_BUILDERS",
    "GRAPH_DEFAULTS",
    "GRAPH_INPUTS",
    "PRESETS",
    "MultiConvGRPOConfig",
    "MultiConvGRPOTrainer",
    "RowBatch",
    "build_agemem_rollout_graph",
    "build_memagent_rollout_graph",
    "build_sumer_rollout_graph",
    "context_budget",
    "conversation_graph_input",
    "default_reward",
    "generate_samples",
    "group_advantages",
    "load_training_file",
    "main",
    "pad_rows",
    "parse_config",
    "plot_reward_curve",
    "rollout_group_ids",
    "rollout_rows",
    "rows_to_tensors",
]

if __name__ == "__main__":
    raise SystemExit(main())
