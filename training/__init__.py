"""Multi-conversation GRPO training: every LLM call of a graph run is a training row.

>>> from langgraph_memagent.training import MultiConvGRPOConfig, MultiConvGRPOTrainer, AnswerReward
"""

from .grpo_multiconv import (
    GRAPH_BUILDERS,
    PRESETS,
    MultiConvGRPOConfig,
    MultiConvGRPOTrainer,
    generate_samples,
    group_advantages,
    load_training_file,
    plot_reward_curve,
)
from .evaluation import PolicyEvaluation, evaluate_policy
from .rewards import AnswerReward, gold_answers
from .rollouts import CallRecorder, LLMCall, MissingTokenIdsError, Rollout, run_rollouts

__all__ = [
    "GRAPH_BUILDERS",
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
