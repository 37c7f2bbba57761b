"""``MultiConvGRPOConfig``: TRL's ``GRPOConfig`` with MemAgent's defaults and the rollout settings (presets: :mod:`.presets`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from trl import GRPOConfig

from ..agents.loading import SHIPPED_ADAPTERS
from ..evals.conversations import CONVERSATIONS_TASK, WORDINGS
from ..evals.ruler import KEY_POOLS, NIAH_TASKS, TASKS
from ..evals.scoring import METRICS
from ..graphs.options import GraphOptions, graph_option
from ..graphs.registry import GRAPHS
from .data import parse_category_shares
from .reading import parse_reading_memory
from .rows import LOSS_AGGREGATIONS
from .writing import AGEMEM_SESSIONS


def _per_graph(name: str, what: str) -> Any:
    """A field left unset on the command line: the graph's paper value (graphs.registry), else MemAgent's."""
    shown = "; ".join(
        f"{graph} {spec.training_defaults[name].value!r} ({spec.training_defaults[name].source})"
        for graph, spec in GRAPHS.items()
        if name in spec.training_defaults
    )
    return field(default=None, metadata={"help": f"{what} Default per graph: {shown}; other graphs take MemAgent's."})


# Settings of the RL recipe: a graph whose paper gives none takes MemAgent's.
RECIPE_SETTINGS = ("num_generations", "beta", "epsilon_high", "scale_rewards", "loss_aggregation")
# TRL loss types that divide a sum over tokens by a count fixed for the whole batch: the sum of
# a batch's parts' losses is the batch's loss, so max_tokens_per_forward leaves it unchanged.
SUMMED_LOSSES = ("dapo", "cispo", "vespo")
# Those of them that read the loss mask (TRL's completion_mask * tool_mask) only in that sum, so per-token
# weights placed there (loss_aggregation) scale each token's loss and nothing else; vespo also sums
# log-ratios over the mask, and the entropy mask scales entropies by it.
WEIGHTED_LOSSES = ("dapo", "cispo")
# The trainer's own options of one graph, beside the fields of its options class (graphs.options).
TRAINER_GRAPH_OPTIONS = {"agemem": ("agemem_turn_limit", "agemem_task_weight")}
# The trainer's chunk_tokens is every graph's document piece (MemAgent's chunk, SUMER's and AgeMem's stored piece).
_EVERY_GRAPH = ("chunk_tokens",)


def other_graph_options(graph: str) -> tuple[str, ...]:
    """Trainer fields that other graphs read and ``graph`` does not: set for ``graph`` they would
    change nothing, so they are refused (and a preset made for another graph drops them).

    >>> "search_reply" in other_graph_options("agemem"), "max_turns" in other_graph_options("memagent")
    (True, True)
    >>> "max_turns" in other_graph_options("agemem")
    False
    """
    trainer = MultiConvGRPOConfig.__dataclass_fields__
    graph_fields = {name for name in GraphOptions.__dataclass_fields__ if name in trainer} - set(_EVERY_GRAPH)
    graph_fields |= {name for names in TRAINER_GRAPH_OPTIONS.values() for name in names}
    own = set(GRAPHS[graph].options.__dataclass_fields__) | set(TRAINER_GRAPH_OPTIONS.get(graph, ())) if graph in GRAPHS else set()
    return tuple(sorted(graph_fields - own))


# The trainer's --help, by section: these fields in this order, then TRL's own (GRPOConfig and
# transformers' TrainingArguments). The last of ours holds what only our recorded studies needed.
TRL_SECTION = "TRL (GRPOConfig and transformers' TrainingArguments)"
HELP_SECTIONS: dict[str, tuple[str, ...]] = {
    "recipe (TRL fields whose defaults change: each graph's paper)": (
        "beta", "scale_rewards", "num_generations", "epsilon", "epsilon_high", "use_bias_correction_kl", "lr_scheduler_type",
        "warmup_steps", "logging_steps", "bf16", "max_completion_length", "per_device_train_batch_size",
        "gradient_checkpointing", "activation_checkpointing",
    ),
    "model": ("model_name_or_path", "finetuning", "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "init_adapter"),
    "graph (the options of `memagent compare`, same names)": (
        "graph", "chunk_tokens", "memory_tokens", "answer_tokens", "final_prompt", "turn_tokens", "prethink_tokens", "infmem_unit_tokens",
        "infmem_top_k", "infmem_early_stop", "max_context_tokens", "max_turns",
        "max_parallel_calls", "search_context", "agemem_turns_per_message", "agemem_distractor_messages", "embeddings_model",
        "tool_choice",
    ),
    "rollouts": (
        "rollout_concurrency", "generation_max_batch_size", "max_tokens_per_forward", "pack_prefixes", "old_logps", "stop_after_steps",
    ),
    "objective": (
        "reward_metric", "judge_model", "judge_base_url", "judge_max_tokens", "loss_aggregation", "dynamic_sampling_rounds",
        "agemem_turn_limit",
    ),
    "data": ("train_file", "task", "num_train_samples", "target_tokens", "num_keys", "data_seed"),
    "outputs": ("reward_curve", "preset"),
    "curricula and small-model aids (ours, opt-in: our studies used them; the papers' recipes need none)": (
        "sumer_require_submit", "evidence_reward_weight", "reading_memory", "search_curriculum", "write_curriculum",
        "agemem_sessions", "agemem_task_weight", "category_shares", "conversation_wording", "key_pool", "gold_position",
        "search_reply", "query_style", "answer_rule", "forced_answer_call", "agemem_write_mode", "agemem_answer_mode",
        "agemem_retrieve_reply",
    ),
}


# Configuration
@dataclass
class MultiConvGRPOConfig(GRPOConfig):
    """TRL's ``GRPOConfig`` with each graph's paper recipe and the rollout settings.

    Defaults that depend on ``graph`` come from its paper through the graph registry
    (:class:`~langgraph_memagent.graphs.registry.PaperDefault`, each with its source):
    MemAgent (arXiv 2507.02259) ``beta=1e-3``, ``num_generations=16``, ``epsilon_high=0.2``
    (the released scripts; DAPO clip-higher is ``--epsilon_high 0.28``), ``scale_rewards="none"``
    (Dr. GRPO advantage); SUMER ``beta=0``, ``num_generations=8``, ``epsilon_high=0.28``,
    ``scale_rewards="group"``, ``loss_aggregation="rollout_sum"`` (each trajectory's token sum,
    averaged over the group; MemAgent ``"token"``, the token mean); AgeMem ``scale_rewards="group"``.
    Other changed TRL defaults:
    ``use_bias_correction_kl=False`` (the reference uses a plain KL), constant learning rate
    1e-6 with linear warm-up (MemAgent and SUMER), ``logging_steps=1``, ``bf16`` only where
    CUDA exists.

    >>> sumer = MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="sumer", reward_metric="f1")
    >>> sumer.beta, sumer.num_generations, sumer.epsilon_high, sumer.scale_rewards, sumer.loss_aggregation
    (0.0, 8, 0.28, 'group', 'rollout_sum')
    >>> MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="sumer", reward_metric="f1", beta=0.01).beta
    0.01
    """

    # TRL fields whose defaults change ------------------------------------------------
    beta: float | None = _per_graph("beta", "KL coefficient.")
    use_bias_correction_kl: bool = field(
        default=False, metadata={"help": "Multiply the KL by the importance ratio (MemAgent's reference: no)."}
    )
    scale_rewards: str | None = _per_graph("scale_rewards", "Advantage scaling: 'none' = r - group mean (Dr. GRPO), 'group' or 'batch' std.")
    num_generations: int | None = _per_graph("num_generations", "Rollouts per question, G.")
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
    max_tokens_per_forward: int | None = field(
        default=None,
        metadata={
            "help": "Split each training micro-batch so one forward pass holds at most this many tokens (rows x "
            "their padded length, or their prefix tree's tokens with pack_prefixes; a longer row goes alone); needs "
            "a loss summed over tokens (loss_type 'dapo', 'cispo' or 'vespo') and no entropy bonus or mask. "
            "Default: one pass per micro-batch, as TRL."
        },
    )
    pack_prefixes: bool = field(
        default=False,
        metadata={
            "help": "Ours: score the rows of each forward pass over their prefix tree, so each distinct prefix (a "
            "rollout's history, a group's first prompt) runs once and its branches continue its key/value cache; "
            "TRL's log-probs from fewer tokens. Default: TRL's padded rows."
        },
    )
    epsilon: float = field(default=0.2, metadata={"help": "Low clip epsilon (MemAgent released scripts: 0.2)."})
    epsilon_high: float | None = _per_graph("epsilon_high", "High clip epsilon (DAPO clip-higher: 0.28).")
    lr_scheduler_type: str = field(
        default="constant_with_warmup", metadata={"help": "LR schedule (MemAgent: constant after linear warm-up)."}
    )
    warmup_steps: float = field(default=5, metadata={"help": "Linear warm-up optimizer steps (our choice)."})
    logging_steps: float = field(default=1, metadata={"help": "Log every N optimizer steps."})
    bf16: bool | None = field(default=None, metadata={"help": "bf16 mixed precision; default: only when CUDA is available. A CPU without AVX-512 BF16 or AMX multiplies in float32 (training.cpu_bf16)."})
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
        metadata={"help": "Policy: 'smollm2-135m' (embedded), 'smollm2-135m-memagent' (embedded, its shipped MemAgent adapter "
                  "trained further) or a local transformers model directory / hub id."},
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
    init_adapter: str | None = field(
        default=None,
        metadata={"help": "A saved LoRA adapter directory to start from (a curriculum's earlier stage); its LoRA settings "
                  "replace lora_*. Unset: a fresh adapter."},
    )

    # Graph ---------------------------------------------------------------------------
    graph: str = field(
        default="memagent",
        metadata={"help": "Graph whose LLM calls become rows: a graph of the registry (graphs.registry.GRAPHS): 'memagent', 'sumer', 'agemem', ..."},
    )
    chunk_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Document tokens per piece; default per graph: MemAgent memory update 5000 (paper), SUMER memory "
            "item 200, AgeMem stage-1 message 512 (the baselines' defaults). Conversation rows with 'turns' ignore it "
            "for SUMER and AgeMem (one item per message / per session)."
        },
    )
    # Graph options with the same default and help as `memagent compare`'s (graphs.registry.GraphOptions).
    memory_tokens: int = graph_option("memory_tokens")
    answer_tokens: int = graph_option("answer_tokens")
    final_prompt: str = graph_option("final_prompt")
    turn_tokens: int | None = graph_option("turn_tokens")
    prethink_tokens: int = graph_option("prethink_tokens")
    infmem_unit_tokens: int = graph_option("infmem_unit_tokens")
    infmem_top_k: int = graph_option("infmem_top_k")
    infmem_early_stop: int = graph_option("infmem_early_stop")
    max_context_tokens: int | None = field(
        default=None,
        metadata={
            "help": "SUMER/AgeMem: context budget in tokens (SUMER ends the episode above it; AgeMem drops the oldest "
            "message groups and its reward penalizes the overflow). Default, set when the trainer starts: the "
            "policy's window minus the longest turn (SUMER: max(turn_tokens, answer_tokens); AgeMem: turn_tokens, "
            "at most 4096, its graph's default for local models). A budget that leaves no room for the turn is refused."
        },
    )
    max_turns: int | None = _per_graph("max_turns", "SUMER: assistant turns per episode; AgeMem: per stage.")
    max_parallel_calls: int = graph_option("max_parallel_calls")
    search_context: int | None = graph_option("search_context")
    search_reply: str = graph_option("search_reply")
    answer_rule: str = graph_option("answer_rule")
    query_style: str = graph_option("query_style")
    agemem_turns_per_message: int = graph_option("agemem_turns_per_message")
    agemem_distractor_messages: int = graph_option("agemem_distractor_messages")
    agemem_write_mode: str = graph_option("agemem_write_mode")
    agemem_answer_mode: str = graph_option("agemem_answer_mode")
    agemem_retrieve_reply: str = graph_option("agemem_retrieve_reply")
    agemem_turn_limit: int | None = field(
        default=None,
        metadata={
            "help": "AgeMem reward: assistant turns over all three stages above which the turn penalty applies; "
            "default max_turns (ours: the AgeMem paper's limit is not available)."
        },
    )
    agemem_task_weight: float = field(
        default=1 / 3,
        metadata={
            "help": "AgeMem reward: weight of the answer part, the context and memory parts sharing the rest equally (AgeMem: "
            "equal weights, 1/3). Ours, opt-in: 1 scores the answer alone, for the answering curriculum (--agemem_sessions given-memory)."
        },
    )
    embeddings_model: str | None = graph_option("embeddings_model")
    tool_choice: str = graph_option("tool_choice")
    forced_answer_call: str = graph_option("forced_answer_call")
    rollout_concurrency: int = field(
        default=0, metadata={"help": "Most graph runs in flight at once, in training and evaluation; 0 runs every rollout of the batch together."}
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
    evidence_reward_weight: float = field(
        default=0.0,
        metadata={
            "help": "Ours, opt-in, for small models: add this weight x the share of the row's evidence turns that the "
            "rollout's searches returned to the paper reward (rows need 'evidence' ids, e.g. --task conversations). "
            "Both parts are logged (reward/paper, reward/evidence). 0 = the paper reward alone."
        },
    )
    reading_memory: str | None = field(
        default=None,
        metadata={
            "help": "Ours, opt-in, a reading curriculum for graph 'sumer': every rollout is the forced submit_answer call "
            "alone, over this memory: 'evidence' (the row's evidence lines), 'question k=K context=C' (a search with "
            "the question) or 'evidence+question k=K' (the evidence among that search's hits, K lines). Unset: whole episodes."
        },
    )
    search_curriculum: bool = field(
        default=False,
        metadata={
            "help": "Ours, opt-in, a search curriculum for graph 'sumer': every rollout is its max_turns tool-calling turns "
            "alone, with no forced answer, and its reward is the share of the row's evidence turns that its searches "
            "returned (reward/evidence; rows need 'evidence' ids, e.g. --task conversations). It replaces the paper "
            "reward, which needs an answer, and evidence_reward_weight. False: whole episodes."
        },
    )
    write_curriculum: bool = field(
        default=False,
        metadata={
            "help": "Ours, opt-in, for graph 'agemem': every rollout is stage 1 alone (no distractor, no question), scored by the "
            "share of the row's evidence turns its stored items hold (reward/memory_recall; rows need 'evidence' ids) instead of "
            "AgeMem's composite. Meant with --agemem_sessions evidence-shuffled --agemem_write_mode line. False: whole episodes."
        },
    )
    agemem_sessions: str = field(
        default="all",
        metadata={
            "help": "Ours, opt-in, curricula for graph 'agemem' (rows need 'evidence' ids, e.g. --task conversations): 'evidence' gives "
            "stage 1 only the sessions that hold the row's evidence turns; 'evidence-shuffled' those sessions with their turns shuffled "
            "for every rollout; 'given-memory' skips stage 1 for a memory holding the evidence turns (answering); 'all': whole episodes."
        },
    )
    loss_aggregation: str | None = _per_graph(
        "loss_aggregation",
        "Loss normalization: 'token' = mean over all completion tokens (MemAgent); 'rollout_sum' = each rollout's token "
        "sum, averaged over its group (the SUMER paper); 'rollout' = each rollout's token mean, so each counts once. "
        "The last two need loss_type 'dapo' or 'cispo'.",
    )
    old_logps: str = field(
        default="recompute",
        metadata={
            "help": "Where the old policy's log-probs come from when a rollout batch feeds several optimizer steps: "
            "'recompute' (TRL's: a forward pass over the batch before its first step) or 'rollout' (the embedded "
            "engine's own, taken from the same weights at the same temperature as it sampled; saves that pass, as "
            "verl's recompute_old_log_prob=False does). 'rollout' needs sampled rollouts (temperature > 0), not vLLM."
        },
    )
    stop_after_steps: int = field(
        default=0,
        metadata={
            "help": "End training after this many optimizer steps, saving a checkpoint there, while the learning-rate "
            "schedule still spans max_steps: a run cut to a time budget, resumable later. 0 = train to max_steps."
        },
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
    task: str = field(
        default="niah_single_1",
        metadata={"help": f"Generated task when no train_file: a RULER task (evals.ruler) or {CONVERSATIONS_TASK!r} "
                  "(LoCoMo-shaped conversations with evidence ids, evals.conversations; for sumer and agemem)."},
    )
    conversation_wording: str = field(
        default="plain",
        metadata={"help": f"Wording of generated conversations: one of {list(WORDINGS)}: one phrasing per fact, or several, "
                  "often inside longer turns, closer to LoCoMo's (evals.conversations)."},
    )
    num_train_samples: int = field(default=64, metadata={"help": "Generated training questions."})
    category_shares: str | None = field(
        default=None,
        metadata={
            "help": "Ours, opt-in, for --task conversations: shares of question categories, e.g. 'open-domain=0.25' "
            "(the yes/no questions) with the other categories filling the rest in their generated order. Unset: as generated."
        },
    )
    target_tokens: int = field(default=4000, metadata={"help": "Document length of generated tasks, in policy tokens."})
    num_keys: int | None = field(
        default=None,
        metadata={"help": "Keyed needles per generated niah_multikey_1 / niah_multiquery document (RULER's num_needle_k; unset: 4)."},
    )
    data_seed: int = field(default=0, metadata={"help": "Seed of the generated training tasks."})
    key_pool: str | None = field(
        default=None,
        metadata={"help": "Needle-key vocabulary of generated NIAH tasks: 'train' or 'test' (disjoint; evals.ruler.KEY_POOLS); unset: RULER's whole list."},
    )
    gold_position: str | None = field(
        default=None,
        metadata={
            "help": "niah_multikey_1: 'balanced' puts the asked-for needle at each keyed-needle rank equally often, so "
            "answering with the first needle earns chance only; unset: RULER's random depths."
        },
    )

    # Outputs -------------------------------------------------------------------------
    reward_curve: bool = field(default=True, metadata={"help": "Write reward_curve.png to output_dir when training ends."})
    preset: str | None = field(default=None, metadata={"help": "Defaults bundle: 'paper-7b' (GPUs), 'cpu-smoke', 'cpu-sumer' or 'cpu-agemem'."})

    def __post_init__(self) -> None:
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = True
        if self.bf16 is None:
            # TRL defaults bf16 to True, which fails on machines without CUDA.
            self.bf16 = torch.cuda.is_available() and not self.fp16
        # Fields left unset take the graph's paper defaults, and the recipe MemAgent's where its paper gives none.
        paper = GRAPHS[self.graph].training_defaults if self.graph in GRAPHS else {}
        for name, default in {**{name: GRAPHS["memagent"].training_defaults[name] for name in RECIPE_SETTINGS}, **paper}.items():
            if getattr(self, name) is None:
                setattr(self, name, default.value)
        if self.agemem_turn_limit is None and self.graph == "agemem":
            self.agemem_turn_limit = self.max_turns
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

    @property
    def final_step(self) -> int:
        """The optimizer step this run ends at: ``stop_after_steps`` when set, else ``max_steps``."""
        return self.stop_after_steps or self.max_steps

    def problems(self) -> list[str]:
        """One line per bad field of this config; ``__post_init__`` raises them all together, before
        anything loads, so a command line with three bad flags names all three."""
        problems = self._choice_problems() + self._other_graph_problems() + self._range_problems()
        problems += self._data_problems() + self._model_problems() + self._sampling_problems() + self._token_budget_problems()
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

    def _choice_problems(self) -> list[str]:
        """Fields outside their choices, and reward settings that do not fit the graph, one line each."""
        problems = []
        choices = {
            "finetuning": ("auto", "lora", "full"),
            "loss_aggregation": LOSS_AGGREGATIONS,
            "old_logps": ("recompute", "rollout"),
            "conversation_wording": WORDINGS,
            "graph": tuple(GRAPHS),
            # The graph options shared with `compare` (tool_choice, search_reply, ...) allow what the registry declares.
            **{name: option.metadata["choices"] for name, option in GraphOptions.__dataclass_fields__.items()
               if "choices" in option.metadata and name in self.__dataclass_fields__},
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                problems.append(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        if self.loss_aggregation != "token" and (self.loss_type not in WEIGHTED_LOSSES or self.top_entropy_quantile < 1):
            # Its token weights scale a sum that TRL divides by a count fixed for the batch; TRL's other
            # losses divide by the weights' own sum (per row or per batch), which undoes them (WEIGHTED_LOSSES).
            problems.append(
                f"loss_aggregation {self.loss_aggregation!r} weights the tokens of a loss summed over tokens (loss_type one of "
                f"{list(WEIGHTED_LOSSES)}, no entropy mask), got loss_type {self.loss_type!r} and top_entropy_quantile "
                f"{self.top_entropy_quantile}: set loss_aggregation 'token' for that loss's own normalization"
            )
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
        return problems

    def _other_graph_problems(self) -> list[str]:
        """Options of other graphs than ``graph`` set away from their defaults, one line each."""
        if self.graph not in GRAPHS:
            return []  # _choice_problems names the graph
        fields = self.__dataclass_fields__
        problems = []
        for name in other_graph_options(self.graph):
            if getattr(self, name) != fields[name].default:
                owners = [graph for graph in GRAPHS if name not in other_graph_options(graph)]
                problems.append(
                    f"{name} is an option of graph{'s' * (len(owners) > 1)} {', '.join(map(repr, owners))} and does nothing "
                    f"with graph {self.graph!r}, got {getattr(self, name)!r}: drop it"
                )
        return problems

    def _range_problems(self) -> list[str]:
        """Numbers outside their range, one line each."""
        problems = []
        if self.num_generations is not None and self.num_generations < 2:
            problems.append(
                f"num_generations must be >= 2 (a group advantage compares rollouts of one question), got {self.num_generations!r}"
            )
        if not self.learning_rate > 0:
            problems.append(f"learning_rate must be > 0, got {self.learning_rate!r}")
        positive = (
            "chunk_tokens", "memory_tokens", "answer_tokens", "turn_tokens", "max_context_tokens", "max_turns",
            "max_parallel_calls", "agemem_turns_per_message", "agemem_turn_limit", "prethink_tokens", "infmem_unit_tokens", "infmem_top_k",
            "infmem_early_stop",
            "judge_max_tokens", "generation_max_batch_size", "num_train_samples", "target_tokens", "num_keys",
            "per_device_train_batch_size", "max_tokens_per_forward",
        )
        for name in positive:
            value = getattr(self, name)
            if value is not None and value < 1:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if self.search_context is not None and self.search_context < 0:
            problems.append(f"search_context must be >= 0 (0 = the hits alone), got {self.search_context!r}")
        non_negative = {
            "agemem_distractor_messages": "",
            "dynamic_sampling_rounds": " (0 = off)",
            "rollout_concurrency": " (0 = all at once)",
        }
        for name, note in non_negative.items():
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0{note}, got {getattr(self, name)!r}")
        if self.max_steps < 1 and self.max_steps != -1:
            problems.append(f"max_steps must be a positive number of optimizer steps (or -1: num_train_epochs decides), got {self.max_steps!r}")
        if self.stop_after_steps and not 0 < self.stop_after_steps <= self.max_steps:
            problems.append(f"stop_after_steps must be 0 (off) or from 1 to max_steps ({self.max_steps}), got {self.stop_after_steps!r}")
        return problems

    def _data_problems(self) -> list[str]:
        """Bad training data or model fields, one line each."""
        problems = []
        if self.train_file is not None and not Path(self.train_file).is_file():
            problems.append(f"train_file {self.train_file!r} does not exist or is not a file")
        if self.train_file is None and self.task not in (*TASKS, CONVERSATIONS_TASK):
            problems.append(f"task must be one of {[*TASKS, CONVERSATIONS_TASK]}, got {self.task!r}")
        if self.evidence_reward_weight < 0 or (self.evidence_reward_weight and self.graph != "sumer"):
            problems.append(
                f"evidence_reward_weight must be >= 0 (0 = off) and is for graph 'sumer' (its searches), got "
                f"{self.evidence_reward_weight!r} with graph {self.graph!r}"
            )
        if self.category_shares is not None:
            try:
                parse_category_shares(self.category_shares)
            except ValueError as error:
                problems.append(str(error))
            if self.train_file is not None or self.task != CONVERSATIONS_TASK:
                problems.append(f"category_shares is for generated conversations (--task {CONVERSATIONS_TASK}, no train_file), got task {self.task!r}")
        if self.reading_memory is not None:
            try:
                parse_reading_memory(self.reading_memory)
            except ValueError as error:
                problems.append(str(error))
            if self.graph != "sumer" or self.forced_answer_call != "submit":
                problems.append(
                    f"reading_memory is for graph 'sumer' with forced_answer_call 'submit', got graph {self.graph!r} "
                    f"and forced_answer_call {self.forced_answer_call!r}"
                )
        if not 0 <= self.agemem_task_weight <= 1:
            problems.append(f"agemem_task_weight must be between 0 and 1 (the answer part's share of AgeMem's reward), got {self.agemem_task_weight!r}")
        evidence_rows = self.train_file is not None or self.task == CONVERSATIONS_TASK
        if self.search_curriculum and (self.graph != "sumer" or self.reading_memory is not None or self.max_turns < 1 or not evidence_rows):
            problems.append(
                f"search_curriculum is for graph 'sumer' with max_turns >= 1, no reading_memory and rows with evidence ids "
                f"(--task {CONVERSATIONS_TASK} or a LoCoMo train_file), got graph {self.graph!r}, max_turns {self.max_turns!r}, "
                f"reading_memory {self.reading_memory!r} and task {self.task!r}"
            )
        if self.write_curriculum and (self.graph != "agemem" or not evidence_rows):
            problems.append(f"write_curriculum is for graph 'agemem' and rows with evidence ids (--task {CONVERSATIONS_TASK} or a "
                            f"LoCoMo train_file), got graph {self.graph!r} and task {self.task!r}")
        if self.write_curriculum and self.agemem_sessions == "given-memory":
            problems.append("write_curriculum trains stage 1, which agemem_sessions 'given-memory' skips: drop one of them")
        if self.agemem_sessions not in AGEMEM_SESSIONS or (self.agemem_sessions != "all" and self.graph != "agemem"):
            problems.append(
                f"agemem_sessions must be one of {list(AGEMEM_SESSIONS)} and other than 'all' only for graph 'agemem', got "
                f"{self.agemem_sessions!r} with graph {self.graph!r}"
            )
        if self.key_pool is not None and (self.key_pool not in KEY_POOLS or self.task not in NIAH_TASKS):
            problems.append(f"key_pool must be one of {list(KEY_POOLS)} with a NIAH task, got {self.key_pool!r} with task {self.task!r}")
        if self.gold_position is not None and (self.gold_position != "balanced" or self.task != "niah_multikey_1"):
            problems.append(f"gold_position must be 'balanced' with task 'niah_multikey_1', got {self.gold_position!r} with task {self.task!r}")
        return problems

    def _model_problems(self) -> list[str]:
        """The policy and the adapter it starts from, one line each."""
        problems = []
        if self.init_adapter is not None and not (self.use_lora and (Path(self.init_adapter) / "adapter_config.json").is_file()):
            problems.append(
                f"init_adapter must be a saved LoRA adapter directory (with adapter_config.json) and finetuning 'lora' or "
                f"'auto' on CPU, got {self.init_adapter!r} with finetuning {self.finetuning!r}"
            )
        model = self.model_name_or_path
        if model in SHIPPED_ADAPTERS and (self.init_adapter is not None or not self.use_lora):
            problems.append(
                f"model_name_or_path {model!r} trains its shipped LoRA adapter further: leave init_adapter unset and "
                f"finetuning 'lora' or 'auto' on CPU, or start from 'smollm2-135m'; got init_adapter {self.init_adapter!r} "
                f"with finetuning {self.finetuning!r}"
            )
        if model.startswith((".", "/", "~")) and not Path(model).expanduser().is_dir():
            problems.append(f"model_name_or_path {model!r} does not exist or is not a directory")
        return problems

    def _sampling_problems(self) -> list[str]:
        """Rollout sampling settings the backends cannot apply, one line each."""
        problems = []
        if self.generation_kwargs:
            problems.append(
                f"generation_kwargs {self.generation_kwargs!r} is not applied by the rollout backends, which take "
                "temperature, top_p, top_k, min_p and repetition_penalty; set those instead"
            )
        if self.top_k is not None and self.top_k < 0:
            problems.append(f"top_k must be >= 0 (0 = no limit), got {self.top_k!r}")
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            problems.append(f"min_p must be in [0, 1], got {self.min_p!r}")
        if not self.repetition_penalty > 0:
            problems.append(f"repetition_penalty must be > 0 (1.0 = off), got {self.repetition_penalty!r}")
        if self.old_logps == "rollout" and (self.use_vllm or not self.temperature):
            # vLLM's log-probs are its sampler's (see vllm_importance_sampling_correction); greedy calls have none.
            problems.append(f"old_logps 'rollout' needs the embedded engine sampling (temperature > 0, no use_vllm), got "
                            f"temperature {self.temperature!r} and use_vllm {self.use_vllm!r}")
        return problems

    def _token_budget_problems(self) -> list[str]:
        """Settings whose loss is not the sum of its parts' losses, so a token budget would change it."""
        if self.max_tokens_per_forward is None:
            return []
        problems = []
        if self.loss_type not in SUMMED_LOSSES:
            problems.append(
                f"max_tokens_per_forward needs a loss summed over tokens (loss_type one of {list(SUMMED_LOSSES)}), "
                f"got loss_type {self.loss_type!r}"
            )
        if self.entropy_coef or self.use_adaptive_entropy or self.top_entropy_quantile < 1:
            problems.append(
                "max_tokens_per_forward cannot split a batch whose entropy bonus or entropy mask is computed over the "
                f"whole batch: got entropy_coef={self.entropy_coef}, use_adaptive_entropy={self.use_adaptive_entropy}, "
                f"top_entropy_quantile={self.top_entropy_quantile}"
            )
        return problems

    @property
    def use_lora(self) -> bool:
        """Whether the policy trains a LoRA adapter (``finetuning``, with 'auto' = LoRA without CUDA)."""
        return self.finetuning == "lora" or (self.finetuning == "auto" and not torch.cuda.is_available())
