"""What a rollout runs: the registered graph built from the trainer's config, and its reward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..agents.loading import prompt_budget
from ..evals.locomo_scoring import LLMJudge
from ..graphs.options import GraphOptions
from ..graphs.registry import GRAPHS, build_graph
from .config import MultiConvGRPOConfig
from .agemem_reward import AgeMemReward, AgeMemRewardConfig
from .rewards import (
    AnswerReward,
    JudgeFreeSumerReward,
    SubmittedAnswersOnly,
    SumerReward,
)
from .reading import ReadingInput
from .writing import evidence_sessions_input, given_memory_input, shuffled_evidence_sessions_input
from .rollouts import RewardFn
from .tool_use import EvidenceShapedReward, MemoryRecallReward, SearchRecallReward


GraphBuilder = Callable[[Any, MultiConvGRPOConfig, Any], Any]
"""``graph_builder(chat_model, config, tokenizer) -> graph`` (default :func:`rollout_graph`)."""
GraphInput = Callable[[dict[str, Any]], dict[str, Any]]
"""``graph_input(row) -> graph input`` (default: the registered graph's input mapping)."""


def graph_options(config: MultiConvGRPOConfig) -> GraphOptions:
    """The registry's options of ``config.graph`` from the trainer's fields.

    ``chunk_tokens`` is MemAgent's chunk, or the stored piece of a document for SUMER and
    AgeMem; ``max_context_tokens`` is their context budget; ``max_turns`` is SUMER's turn cap
    (0 with ``reading_memory``: the forced answer alone) and AgeMem's turns per stage.

    >>> config = MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="agemem", max_turns=8)
    >>> options = graph_options(config)
    >>> options.memory_item_tokens, options.max_turns, options.turn_tokens
    (512, 8, 256)
    """
    pieces = config.graph in ("sumer", "agemem")
    per_graph = {"memory_item_tokens": config.chunk_tokens} if pieces else {"chunk_tokens": config.chunk_tokens}
    return GraphOptions(
        **per_graph,
        memory_tokens=config.memory_tokens,
        answer_tokens=config.answer_tokens,
        final_prompt=config.final_prompt,
        max_input_tokens=config.max_context_tokens,
        max_turns=0 if config.reading_memory else config.max_turns,
        turn_tokens=config.turn_tokens,
        prethink_tokens=config.prethink_tokens,
        infmem_unit_tokens=config.infmem_unit_tokens,
        infmem_top_k=config.infmem_top_k,
        infmem_early_stop=config.infmem_early_stop,
        max_parallel_calls=config.max_parallel_calls,
        search_context=config.search_context,
        search_reply=config.search_reply,
        answer_rule=config.answer_rule,
        query_style=config.query_style,
        agemem_turns_per_message=config.agemem_turns_per_message,
        agemem_distractor_messages=config.agemem_distractor_messages,
        agemem_write_mode=config.agemem_write_mode,
        agemem_answer_mode=config.agemem_answer_mode,
        agemem_retrieve_reply=config.agemem_retrieve_reply,
        embeddings_model=config.embeddings_model,
        tool_choice=config.tool_choice,
        forced_answer_call=config.forced_answer_call,
    )


def default_graph_input(config: MultiConvGRPOConfig) -> GraphInput:
    """The registered graph's input mapping, or a curriculum's: SUMER's reading (``reading_memory``)
    or AgeMem's writing (``agemem_sessions``, its turns shuffled from ``config.seed`` when asked) or answering
    (``agemem_sessions="given-memory"``)."""
    if config.agemem_sessions == "evidence":
        return evidence_sessions_input
    if config.agemem_sessions == "evidence-shuffled":
        return shuffled_evidence_sessions_input(config.seed)
    if config.agemem_sessions == "given-memory":
        return given_memory_input(config.seed)
    if config.reading_memory:
        from ..baselines import load_embeddings

        return ReadingInput(config.reading_memory, load_embeddings(config.embeddings_model), echo_query=config.search_reply == "echo")
    return GRAPHS[config.graph].graph_input


def rollout_graph(model: Any, config: MultiConvGRPOConfig, tokenizer: Any) -> Any:
    """The registered graph ``config.graph`` on the rollout chat model; chunking uses the policy's tokenizer.

    SUMER's bank ingests a conversation once and every rollout of its group searches the
    same items; AgeMem keeps each run's long-term memory under a fresh user id, cleared after
    the answer, and LangMem each run's extracted memories (``memory_per_run``), so concurrent
    rollouts never read each other's memory. SUMER's search curriculum (``search_curriculum``)
    ends each episode at its turn cap without the forced answer; AgeMem's writing curriculum
    (``write_curriculum``) after stage 1. MemAgent's final answer decodes free, as in the paper.
    """
    per_run: dict[str, Any] = {"memory_per_run": True} if config.graph == "langmem" else {}
    if config.graph == "memagent":  # the paper's RL: the policy learns to box its answer, no grammar does it for it
        per_run["constrained_answer"] = False
    if config.search_curriculum:
        per_run["force_answer"] = False
    if config.write_curriculum:
        per_run["build_only"] = True
    return build_graph(config.graph, model, graph_options(config), tokenizer, **per_run)


def default_reward(config: MultiConvGRPOConfig, *, judge: Any = None, shaped: bool = True) -> RewardFn:
    """The reward of ``config.graph``: MemAgent's answer verifier, SUMER's J x F1, AgeMem's composite.

    SUMER needs an LLM judge: ``judge`` (any chat model) or ``config.judge_model``;
    without either it fails unless ``config.reward_metric == "f1"`` chose the judge-free
    fallback; with ``config.sumer_require_submit`` (the paper's rule) only answers given
    through ``submit_answer`` count (:class:`SubmittedAnswersOnly`); ``config.evidence_reward_weight``
    adds the opt-in evidence shaping (:class:`EvidenceShapedReward`) unless ``shaped=False``
    (the paper reward alone, for held-out measurements); SUMER's search curriculum
    (``search_curriculum``) is scored by its searches' evidence recall alone (:class:`SearchRecallReward`), AgeMem's
    writing curriculum (``write_curriculum``) by the evidence its stored items hold (:class:`MemoryRecallReward`). AgeMem's limits are ``config.max_context_tokens`` (resolved by the trainer
    from the policy's window when unset) and ``config.agemem_turn_limit``; ``config.agemem_task_weight`` weighs its answer part.

    >>> default_reward(MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="sumer"))
    Traceback (most recent call last):
    ...
    ValueError: graph 'sumer' needs an LLM judge for its J x F1 reward: set judge_model (a model spec, e.g. 'smollm2-135m' or 'vllm:<model>' with judge_base_url), or choose the judge-free fallback explicitly with reward_metric='f1'
    """
    if config.graph == "sumer" and config.search_curriculum:
        return SearchRecallReward()
    if config.graph == "sumer":
        reward = _sumer_reward(config, judge)
        reward = SubmittedAnswersOnly(reward) if config.sumer_require_submit else reward
        return EvidenceShapedReward(reward, weight=config.evidence_reward_weight) if shaped and config.evidence_reward_weight else reward
    if config.graph == "agemem" and config.write_curriculum:
        return MemoryRecallReward()
    if config.graph == "agemem":
        if config.max_context_tokens is None:
            raise ValueError(
                "graph 'agemem' needs max_context_tokens for its reward's context limit (the trainer sets it from "
                "the policy's window when unset)"
            )
        return AgeMemReward(
            context_limit=config.max_context_tokens,
            turn_limit=config.agemem_turn_limit,
            config=AgeMemRewardConfig.with_task_weight(config.agemem_task_weight, task_metric=config.reward_metric),
        )
    # Graphs without a reward of their own are scored like MemAgent's answers.
    metric = config.reward_metric or GRAPHS["memagent"].training_defaults["reward_metric"].value
    return AnswerReward(metric, final_prompt=config.final_prompt)


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
    """``config.max_context_tokens`` checked against the policy's ``window``, or the default for ``config.graph``.

    SUMER ends an episode when the next prompt would not fit the window with room for
    one turn or the forced answer (the larger of ``turn_tokens`` and ``answer_tokens``); AgeMem keeps at most 4096 tokens (its graph's default for local models,
    chosen for CPU prefill). MemAgent needs none. A budget that leaves no room for a
    turn in the window is refused.

    >>> base = dict(output_dir="/tmp/x", bf16=False, answer_tokens=64)
    >>> [context_budget(MultiConvGRPOConfig(graph=g, **base, turn_tokens=256), 8192) for g in ("sumer", "agemem")]
    [7936, 4096]
    >>> context_budget(MultiConvGRPOConfig(graph="memagent", **base), 8192) is None
    True
    """
    if config.graph not in ("sumer", "agemem"):
        return config.max_context_tokens
    if window is None and config.max_context_tokens is None:
        raise ValueError(
            f"graph {config.graph!r}: the policy's context window is unknown (no max_position_embeddings in its "
            "config); set max_context_tokens"
        )
    if config.graph == "agemem":
        from ..baselines.agemem import LOCAL_CONTEXT_TOKENS

        return prompt_budget(window, config.max_context_tokens, config.turn_tokens, cap=LOCAL_CONTEXT_TOKENS)
    return prompt_budget(window, config.max_context_tokens, max(config.turn_tokens, config.answer_tokens))
