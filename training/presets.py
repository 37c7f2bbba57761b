"""Named training recipes (``--preset``): the papers' settings and the CPU recipes measured in BENCHMARKS.md.

Each preset is a mapping of :class:`~.config.MultiConvGRPOConfig` fields; options given on the
command line override it.
"""

from __future__ import annotations

from typing import Any

from ..evals.conversations import CONVERSATIONS_TASK

# The loss passes of the CPU tool-use presets. A row is a whole SUMER prompt (up to 3K tokens):
# 10 rows in one pass took 19 GB and were killed for memory on a 24 GB machine (measured); parts
# give the same loss. A rollout's rows share their history, so they are scored over their prefix
# tree: one rollout batch's loss work took 1.49x less time with 16K tree tokens a part but peaked
# at 23.2 GB, and a training run at 8K was killed for memory at step 9 (23 GB); rows at 4K peaked
# at 16.9 GB.
_CPU_TOOL_LOSS: dict[str, Any] = {
    "activation_checkpointing": False,
    "pack_prefixes": True,
    "max_tokens_per_forward": 6144,
    "bf16": False,
    "save_steps": 2,
    "report_to": "none",
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
        # About 250K tokens reach one forward pass without it; 32K is ours, not yet run on a GPU.
        "max_tokens_per_forward": 32768,
        "save_steps": 20,
    },
    # SmolLM2-135M + LoRA on short generated NIAH tasks: 2 chunks of essay text holding the
    # queried needle and 1 distractor needle (RULER niah_multikey_1 with num_keys=2), the gold
    # first in exactly half the questions and keys from the training vocabulary only.
    # The strict verifier gives this model no signal (it never writes \boxed{}), so the
    # reward is lenient (0 of 16 sampled answers boxed, measured). Rollouts sample at T=0.7: measured on held-out
    # questions, T=1.0 earns this reward 0 times in 32 (the memory derails), T=0.7 6/32,
    # T=0.5 11/32, greedy 5/16; with 3 distractors and 3 chunks even T=1.0 got 2/128 and a
    # run saw no signal. On this task, 24 steps (28 min) took held-out accuracy from 23% to
    # 48% at T=0.7 and from 4% to 15% at T=1.0; more steps resumed at --temperature 1.0 (a
    # second trainer: TRL fixes the loss's temperature at init) lift T=1.0 further. At T=1.0
    # 4 in 10 batches had no reward spread, hence DAPO's dynamic sampling (2 rounds). This
    # preset's 16 steps, then 16 at T=1.0 (bench_learning --then-steps 16), 42 minutes of
    # training: T=1.0 1.6% -> 27.3%, greedy 34% -> 50% (BENCHMARKS.md section 6, run 7;
    # runs vary by about +-5 points at T=1.0). Those runs used RULER's random needle depths,
    # where the gold was first in 19 of the 32 held-out questions, and most of the gain was
    # answering with the first needle; the balanced task below removes that shortcut.
    # Sizes, lr and rank are ours, tuned on that held-out (now: dev) set.
    "cpu-smoke": {
        "model_name_or_path": "smollm2-135m",
        "finetuning": "lora",
        "task": "niah_multikey_1",
        "num_keys": 2,
        "gold_position": "balanced",
        "key_pool": "train",
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
    # SmolLM2-135M + LoRA learning SUMER's search-then-submit loop on generated LoCoMo-shaped
    # conversations (evals.conversations: 4-8 sessions of 6-10 turns, facts among small talk,
    # evidence ids). SUMER's reward needs an LLM judge and the policy's own base model cannot
    # judge (BENCHMARKS.md section 8), so the judge-free token F1 stands in (-1 without a
    # submitted answer, the paper's rule). Every turn must call a tool (left to choose, the
    # model answered in text 16/16 on LoCoMo) and calls decode under the tool grammar. SUMER's
    # temperature 1.0, G = 8, clip-high 0.28, no KL come from the registry; the turn cap,
    # budgets, sizes, lr and rank are ours, for a 2-core CPU. The preset opts in to the
    # evidence shaping (ours: + 0.5 x the share of evidence turns the searches returned);
    # reward/paper logs SUMER's reward alone, and the benchmark scores with it alone.
    "cpu-sumer": {
        "model_name_or_path": "smollm2-135m",
        "finetuning": "lora",
        "graph": "sumer",
        "task": CONVERSATIONS_TASK,
        "tool_choice": "required",
        "reward_metric": "f1",
        "evidence_reward_weight": 0.5,
        "max_turns": 4,
        # A forced call's grammar fits its longest admissible call in the turn: at 128 tokens a
        # search's query may be 27 characters long beside every other field; at 96, 11.
        "turn_tokens": 128,
        "answer_tokens": 32,
        "max_context_tokens": 3072,
        "num_generations": 8,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 2,
        "learning_rate": 2e-4,
        "warmup_steps": 2,
        "lora_r": 16,
        "lora_alpha": 32,
        "num_train_samples": 256,
        "max_steps": 16,
        # The token mean, not SUMER's per-trajectory token sums (the graph's default): the
        # learning rate above was tuned with it and every reported cpu-sumer run used it.
        "loss_aggregation": "token",
        **_CPU_TOOL_LOSS,
    },
    # SmolLM2-135M + LoRA learning AgeMem's memory tools on the same generated conversations:
    # one session arrives per message and the policy must call a tool after it (one turn per
    # message), one distractor message, then the question. The reward is AgeMem's composite
    # (answer, context and memory parts; training.agemem_reward), its judge replaced by token F1
    # and its "useful item" read against the generator's evidence turns. Untrained on 16 dev
    # questions, no stored item holds an evidence turn and no answer scores, and one optimizer
    # step takes 52 minutes here; its writing curriculum (--write_curriculum true) moved the kept
    # line weakly (BENCHMARKS.md section 11). Caps, budgets, sizes, lr and rank are ours, as in cpu-sumer.
    "cpu-agemem": {
        "model_name_or_path": "smollm2-135m",
        "finetuning": "lora",
        "graph": "agemem",
        "task": CONVERSATIONS_TASK,
        "tool_choice": "required",
        "reward_metric": "f1",
        "agemem_turns_per_message": 1,
        "max_turns": 12,
        "agemem_distractor_messages": 1,
        "turn_tokens": 128,
        "max_context_tokens": 3072,
        "num_generations": 8,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 2,
        "learning_rate": 2e-4,
        "warmup_steps": 2,
        # No KL term, as in cpu-sumer: with it the first optimizer step took 52 minutes, about 20 of
        # them log-probability passes (reference and old policy) over the batch's 144 rows (measured).
        "beta": 0.0,
        "lora_r": 16,
        "lora_alpha": 32,
        "num_train_samples": 256,
        "max_steps": 12,
        **_CPU_TOOL_LOSS,
    },
}


__all__ = ["PRESETS"]
