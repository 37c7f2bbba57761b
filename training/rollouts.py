"""Rollout recording: run a graph of this package and keep every LLM call as one training row.

A MemAgent rollout is not one conversation but several independent single-message
calls (one per memory update, one final answer). Each call is a (prompt ids,
completion ids) pair that a multi-conversation GRPO trainer turns into one row. The
recorder is an ordinary LangChain callback handler: it reads the exact token ids the
backend reports in ``response_metadata`` (``LocalChatModel`` does; so does any model
that fills ``prompt_token_ids`` / ``completion_token_ids``), so it works for any graph
(MemAgent, SUMER, AgeMem) without touching the graph's code.

One handler per rollout tags the calls with their rollout: the graph runs of a batch
execute concurrently, and a handler attached through a run's config only sees that run.

>>> recorder = CallRecorder(rollout_id=0)
>>> recorder.calls
[]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from tqdm.auto import tqdm

from .tool_use import tool_use_measures


class MissingTokenIdsError(RuntimeError):
    """A model call reported no token ids, so it cannot become a training row."""


@dataclass
class LLMCall:
    """One recorded model call: a training row's tokens and what the model said."""

    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    finish_reason: str | None = None  # "stop" (EOS) or "length" (hit max_tokens), as the backend reports
    sampling_logps: list[float | None] | None = None  # per completion token, when another engine sampled it (vLLM)


@dataclass
class Rollout:
    """One graph run of one sample: its calls in order, its output and its reward.

    ``group_id`` names the GRPO group (all rollouts of the same sample in one batch);
    ``rollout_id`` is unique per run. The reward comes from the final call only (the
    graph's ``response``), but the advantage applies to every call.
    """

    rollout_id: int
    group_id: int
    calls: list[LLMCall]
    output: dict[str, Any]
    reward: float = 0.0
    measures: dict[str, Any] = field(default_factory=dict)  # tool use and reward parts, set when scored

    @property
    def completion_tokens(self) -> int:
        """Completion tokens over all calls (the tokens that carry loss)."""
        return sum(len(call.completion_ids) for call in self.calls)


class CallRecorder(BaseCallbackHandler):
    """Collects the token ids of every chat-model call of one graph run, in call order.

    Attach one per run: ``graph.invoke(inputs, {"callbacks": [CallRecorder(rollout_id=i)]})``.
    Calls within one MemAgent run are sequential, so arrival order is call order; the
    lock covers graphs that fan out calls in parallel threads.
    """

    raise_error = True  # a call without token ids must stop training, not vanish silently

    def __init__(self, rollout_id: int):
        self.rollout_id = rollout_id
        self.calls: list[LLMCall] = []
        self._lock = threading.Lock()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                metadata = getattr(message, "response_metadata", None) or {}
                prompt_ids, completion_ids = metadata.get("prompt_token_ids"), metadata.get("completion_token_ids")
                if prompt_ids is None or completion_ids is None:
                    raise MissingTokenIdsError(
                        f"rollout {self.rollout_id}: a model call reported no 'prompt_token_ids'/'completion_token_ids' "
                        f"in response_metadata (keys: {sorted(metadata)}); train with a backend that records them, "
                        "e.g. LocalChatModel.from_model(policy, tokenizer)"
                    )
                with self._lock:
                    self.calls.append(
                        LLMCall(
                            list(prompt_ids),
                            list(completion_ids),
                            generation.text,
                            metadata.get("finish_reason"),
                            metadata.get("completion_logprobs"),
                        )
                    )


def run_rollouts(
    graph: Any,
    graph_inputs: Sequence[dict[str, Any]],
    group_ids: Sequence[int],
    *,
    max_concurrency: int | None = None,
    first_rollout_id: int = 0,
    progress: str | None = None,
    served_by: Any = None,
) -> list[Rollout]:
    """Run ``graph`` once per input, concurrently, recording every LLM call of every run.

    Runs go through ``graph.batch_as_completed`` so a batching backend (``LocalChatModel``) decodes
    the calls of all rollouts together. A run that fails raises with its rollout id;
    a run that made no model call is an error too (nothing to train on). ``served_by``, the
    graph model's local engine (:func:`local_engine`), decodes on the calling thread while the
    runs go on (``BatchedGenerator.serve_while``): a trainer's thread already runs tensor work.

    Args:
        graph: any compiled graph of this package (or any runnable whose model calls
            report token ids).
        graph_inputs: one graph input per rollout (the same input G times for a group).
        group_ids: the GRPO group of each rollout (same length as ``graph_inputs``).
        max_concurrency: most runs in flight at once (``None``: all).
        first_rollout_id: id of the first rollout (ids are consecutive).
        progress: label of a progress bar (finished rollouts) on stderr; ``None``: no bar.

    >>> run_rollouts(None, [{"question": "q"}], [0, 1])
    Traceback (most recent call last):
    ...
    ValueError: graph_inputs (1) and group_ids (2) must have one entry per rollout
    """
    if len(graph_inputs) != len(group_ids):
        raise ValueError(
            f"graph_inputs ({len(graph_inputs)}) and group_ids ({len(group_ids)}) must have one entry per rollout"
        )
    recorders = [CallRecorder(first_rollout_id + i) for i in range(len(graph_inputs))]
    # LangChain reads max_concurrency from the config (a keyword would reach invoke and be
    # ignored); its default pool has min(32, cores + 4) threads, which on a small machine
    # leaves rollouts waiting instead of letting the backend decode them together.
    limit = max_concurrency or max(len(graph_inputs), 1)
    configs = [
        {"callbacks": [recorder], "metadata": {"rollout_id": recorder.rollout_id, "group_id": group}, "max_concurrency": limit}
        for recorder, group in zip(recorders, group_ids)
    ]
    outputs: list[Any] = [None] * len(graph_inputs)

    def run_all() -> None:
        with tqdm(total=len(graph_inputs), desc=progress, unit="rollout", disable=progress is None) as bar:
            for index, output in graph.batch_as_completed(list(graph_inputs), configs, return_exceptions=True):
                outputs[index] = output
                bar.update(1)

    if served_by is not None:
        served_by.serve_while(run_all)
    else:
        run_all()
    rollouts = []
    for recorder, group, output in zip(recorders, group_ids, outputs):
        if isinstance(output, BaseException):
            raise RuntimeError(f"rollout {recorder.rollout_id} (group {group}) failed: {output}") from output
        if not recorder.calls:
            raise RuntimeError(f"rollout {recorder.rollout_id} (group {group}) made no model call")
        rollouts.append(Rollout(recorder.rollout_id, group, recorder.calls, dict(output)))
    return rollouts


def local_engine(chat_model: Any) -> Any:
    """The engine of a :class:`~langgraph_memagent.agents.local_model.LocalChatModel` (None for any other chat model)."""
    from ..agents.local_model import LocalChatModel

    return chat_model.engine if isinstance(chat_model, LocalChatModel) else None


RewardFn = Callable[[dict[str, Any], dict[str, Any]], float]


def score_rollouts(rollouts: Sequence[Rollout], samples: Sequence[dict[str, Any]], reward_fn: RewardFn, graph: str) -> None:
    """Set each rollout's reward to ``reward_fn(graph output, sample)`` (one ``reward_fn.batch`` call when it has one)
    and its ``measures``: ``graph``'s tool use (:func:`~langgraph_memagent.training.tool_use.tool_use_measures`) and the reward's
    parts when it reports them (``last_components``, e.g. the paper reward apart from an opt-in shaping)."""
    outputs = [rollout.output for rollout in rollouts]
    score_batch = getattr(reward_fn, "batch", None)
    if callable(score_batch):
        # One batched judge call for the whole rollout batch instead of one per rollout.
        rewards = list(score_batch(outputs, list(samples)))
    else:
        rewards = [reward_fn(output, sample) for output, sample in zip(outputs, samples, strict=True)]
    components = getattr(reward_fn, "last_components", None) or [{}] * len(rollouts)
    for rollout, sample, reward, parts in zip(rollouts, samples, rewards, components, strict=True):
        rollout.reward = float(reward)
        rollout.measures = {**tool_use_measures(rollout.output, sample, graph), **{f"reward/{name}": value for name, value in parts.items()}}


__all__ = ["CallRecorder", "LLMCall", "MissingTokenIdsError", "Rollout", "RewardFn", "local_engine", "run_rollouts", "score_rollouts"]
