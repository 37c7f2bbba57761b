"""Multi-conversation GRPO training: every LLM call of a graph run is a training row.

>>> from langgraph_memagent.training import MultiConvGRPOConfig, MultiConvGRPOTrainer, AnswerReward

Needs the ``train`` extra (torch, transformers, TRL, PEFT, datasets, matplotlib): without it,
importing this package (or ``memagent train``) fails with one line that says how to install it.
"""

from ..agents.extras import needs_extra

# Every module of the package is reached through here, so this one block names the extra for all.
with needs_extra("train", "the trainer (langgraph_memagent.training)"):
    from .config import MultiConvGRPOConfig
    from .data import generate_samples, load_training_file
    from .evaluation import PolicyEvaluation, evaluate_policy
    from .presets import PRESETS
    from .reward_curve import plot_reward_curve
    from .rewards import AnswerReward, gold_answers
    from .rollouts import CallRecorder, LLMCall, MissingTokenIdsError, Rollout, run_rollouts
    from .rows import group_advantages
    from .trainer import MultiConvGRPOTrainer


__all__ = [
    "PRESETS",
    "AnswerReward",
    "CallRecorder",
    "LLMCall",
    "MissingTokenIdsError",
    "MultiConvGRPOConfig",
    "MultiConvGRPOTrainer",
    "PolicyEvaluation",
    "Rollout",
    "evaluate_policy",
    "generate_samples",
    "gold_answers",
    "group_advantages",
    "load_training_file",
    "plot_reward_curve",
    "run_rollouts",
]
