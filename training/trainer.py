"""``MultiConvGRPOTrainer``: TRL's ``GRPOTrainer`` whose rollouts run a graph; every LLM call is a training row."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import DistributedType
from transformers import DynamicCache, TrainerCallback, TrainerState
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOTrainer
from trl.models import unwrap_model_for_generation
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import use_adapter

from ..agents.loading import context_window
from ..graphs.registry import GRAPHS
from .config import MultiConvGRPOConfig
from .cpu_bf16 import cpu_emulates_bf16, float32_products
from .micro_batches import rows_per_part, split_rows, trim_part
from .prefix_packing import pack_rows, packed_length
from .reward_curve import FIRST_DRAW_REWARD, RewardCurveCallback
from .rollout_graphs import GraphBuilder, GraphInput, context_budget, default_graph_input, default_reward, rollout_graph
from .rollouts import MissingTokenIdsError, RewardFn, Rollout, local_engine, run_rollouts, score_rollouts
from .rows import (
    RowBatch,
    group_advantages,
    pad_rows,
    rollout_group_ids,
    rollout_old_logps,
    rollout_rows,
    rows_to_tensors,
    vllm_importance_ratio,
)
from .tool_use import mean_measures


logger = logging.getLogger(__name__)


class StopAfterSteps(TrainerCallback):
    """Ends training after ``steps`` optimizer steps and saves a checkpoint there. The
    learning-rate schedule still spans ``max_steps``: the cut run is the first part of the
    longer one, and resuming continues that schedule.

    >>> from transformers import TrainerControl
    >>> control = StopAfterSteps(6).on_step_end(None, TrainerState(global_step=6), TrainerControl())
    >>> control.should_training_stop, control.should_save
    (True, True)
    >>> StopAfterSteps(6).on_step_end(None, TrainerState(global_step=5), TrainerControl()).should_training_stop
    False
    """

    def __init__(self, steps: int):
        self.steps = steps

    def on_step_end(self, args: Any, state: TrainerState, control: Any, **kwargs: Any) -> Any:
        if state.global_step >= self.steps:
            control.should_training_stop = control.should_save = True
        return control


# The trainer
@contextmanager
def eval_mode(module: torch.nn.Module):
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)


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
            :func:`~.rollout_graphs.rollout_graph`, the registered graph ``args.graph``.
        graph_input: ``graph_input(row) -> graph input``; default the registered graph's
            (question + document, plus ``turns`` for the graphs that store messages), or
            with ``args.reading_memory`` SUMER's plus that memory (:mod:`.reading`).
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
        if graph_builder is None and args.graph not in GRAPHS:
            raise ValueError(f"unknown graph {args.graph!r}; expected one of {sorted(GRAPHS)}")
        if args.graph in ("sumer", "agemem"):
            # Resolved once here, so the graph's budget and the reward's limit are the same number.
            args.max_context_tokens = context_budget(args, context_window(model))
            logger.info("graph %s: max_context_tokens = %d", args.graph, args.max_context_tokens)
        self.rollout_reward = reward_fn or default_reward(args)
        self.graph_builder = graph_builder or rollout_graph
        self.graph_input = graph_input or default_graph_input(args)
        self.rollout_model = rollout_model or (vllm_chat_model if args.use_vllm else policy_chat_model)
        self._rollout_graph: Any = None
        self._rollout_chat: Any = None
        callbacks = list(callbacks or [])
        if args.reward_curve:
            callbacks.append(RewardCurveCallback())
        if args.stop_after_steps:
            callbacks.append(StopAfterSteps(args.stop_after_steps))
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
        per_process = args.per_device_train_batch_size * args.steps_per_generation
        if args.dynamic_sampling_rounds and self.accelerator.num_processes > 1 and per_process % self.num_generations:
            # A group split across processes would be judged flat or not from a part of its rollouts.
            raise ValueError(
                f"dynamic_sampling_rounds with {self.accelerator.num_processes} processes needs each process's "
                f"{per_process} rollouts (per_device_train_batch_size x steps_per_generation) to hold whole groups of "
                f"num_generations={self.num_generations}"
            )

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs: Any) -> Any:
        """TRL's ``train``; refuses a checkpoint that has already reached ``max_steps`` (or ``stop_after_steps``).

        bf16 on a CPU without AVX-512 BF16 or AMX trains with :func:`~.cpu_bf16.float32_products`: the same numbers up
        to the order of the sums, 8.4 times as fast on an AVX2 EPYC (``benchmarks/bench_cpu_bf16.py``).

        transformers' ``Trainer`` resumed there still trains (checkpoint 40 of a 40-step
        run went on to steps 41 and 42, BENCHMARKS.md section 6), which would silently
        change a finished run.
        """
        checkpoint = get_last_checkpoint(self.args.output_dir) if resume_from_checkpoint is True else resume_from_checkpoint
        state_file = Path(checkpoint, "trainer_state.json") if isinstance(checkpoint, str) else None
        if state_file is not None and state_file.is_file() and self.args.final_step > 0:
            done = TrainerState.load_from_json(str(state_file)).global_step
            if done >= self.args.final_step:
                raise ValueError(
                    f"{checkpoint} is at step {done}, and max_steps is {self.args.max_steps} and stop_after_steps "
                    f"{self.args.stop_after_steps}: nothing left to train; raise them to train further"
                )
        emulated = self.args.bf16 and self.accelerator.device.type == "cpu" and cpu_emulates_bf16()
        with float32_products(*((self.model, self.ref_model) if emulated else ())) as layers:
            if layers:
                logger.info("bf16 on a CPU without AVX-512 BF16 or AMX: %d Linear layers multiply in float32 (training.cpu_bf16)", layers)
            return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    # Rollouts -------------------------------------------------------------------------
    def _graph(self) -> Any:
        if self._rollout_graph is None:
            self._rollout_chat = self.rollout_model(self)
            self._rollout_graph = self.graph_builder(self._rollout_chat, self.args, self._tokenizer)
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
        graph = self._graph()
        with unwrapped_context as unwrapped, torch.no_grad(), eval_mode(unwrapped):
            return run_rollouts(
                graph, graph_inputs, group_ids, max_concurrency=concurrency, first_rollout_id=first_rollout_id,
                served_by=local_engine(self._rollout_chat),
            )

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, torch.Tensor | Any]:
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        first = self.accelerator.process_index * len(inputs)
        group_ids = rollout_group_ids(len(inputs), num_generations, first_rollout=first)
        started = time.perf_counter()
        rollouts = self._run_rollouts(inputs, group_ids, first)
        score_rollouts(rollouts, inputs, self.rollout_reward, self.args.graph)
        if mode == "train" and self.args.dynamic_sampling_rounds:
            rollouts = self._replace_flat_groups(rollouts, num_generations, next_rollout_id=first + len(inputs))
        seconds = time.perf_counter() - started
        return self._batch_from_rollouts(rollouts, mode, rollout_seconds=seconds)

    def _prepare_inputs(self, generation_batch: Any) -> dict[str, torch.Tensor | Any]:
        """TRL's slice of the generation batch for this step; with ``pack_prefixes``, in generation order.

        TRL shuffles the rows before slicing them into optimizer steps. A slice's order does not
        change its loss, and in generation order a rollout's rows sit together, so the forward
        parts (consecutive rows) share their prefixes.
        """
        inputs = super()._prepare_inputs(generation_batch)
        if "row_order" not in inputs:
            return inputs
        order = inputs["row_order"].argsort()
        rows = order.numel()
        return {
            key: value[order] if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.size(0) == rows else value
            for key, value in inputs.items()
        }

    def _replace_flat_groups(self, rollouts: list[Rollout], num_generations: int, *, next_rollout_id: int) -> list[Rollout]:
        """DAPO's dynamic sampling: swap each group with one reward for all its rollouts for a fresh question's group.

        Such a group has zero advantage everywhere, so its rows would cost a full
        optimizer pass and teach nothing. Fresh questions are drawn from the training set
        (seeded by ``seed``, the step and the process) and keep the replaced group's id and
        place. With several processes, all of them run a round while any process has a
        flat group (one with none runs an empty one), so each enters the rollouts, and their
        weight gathers, equally often. Logs the first draw's reward
        (``dynamic_sampling/first_draw_reward``: what the policy scores before filtering)
        and the groups replaced.
        """
        metrics = self._metrics["train"]
        metrics[FIRST_DRAW_REWARD].append(sum(r.reward for r in rollouts) / len(rollouts))
        replaced = 0
        for round_number in range(self.args.dynamic_sampling_rounds):
            flat = [group for group in dict.fromkeys(r.group_id for r in rollouts) if len({r.reward for r in rollouts if r.group_id == group}) == 1]
            flat_anywhere = self.accelerator.gather(torch.tensor([len(flat)], device=self.accelerator.device)).sum().item()
            if not flat_anywhere:
                break
            draw = random.Random(hash((self.args.seed, self.state.global_step, round_number, self.accelerator.process_index)))
            questions = [self.train_dataset[draw.randrange(len(self.train_dataset))] for _ in flat]
            inputs = [question for question in questions for _ in range(num_generations)]
            group_ids = [group for group in flat for _ in range(num_generations)]
            fresh = self._run_rollouts(inputs, group_ids, next_rollout_id)
            score_rollouts(fresh, inputs, self.rollout_reward, self.args.graph)
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
        padding = 0
        if mode == "train":
            # Every process pads to the most rows of any process: ranks that made fewer calls
            # would otherwise make fewer forward passes and leave the others waiting in a gather.
            most = int(self.accelerator.gather(torch.tensor([len(rows)], device=device)).max().item())
            padding = pad_rows(rows, self.args.steps_per_generation, self._tokenizer.pad_token_id, minimum=most)
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
        if self.args.pack_prefixes and mode == "train":
            output["row_order"] = torch.arange(len(rows), device=device)  # see _prepare_inputs
        if self.args.loss_aggregation != "token":
            # TRL's loss mask is completion_mask * tool_mask; per-token weights there turn its
            # token mean into a mean over rollouts of their token means or sums (see rollout_rows).
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
        old, ref = None, None
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.activation_checkpointing_kwargs):
            generate_every = self.args.steps_per_generation * self.num_iterations
            off_policy = self.args.gradient_accumulation_steps % generate_every != 0
            # Evaluation decodes as it is told (often greedily), so only training batches take the engine's.
            if off_policy and self.args.old_logps == "rollout" and mode == "train":
                if "sampling_logps" not in batch:
                    raise MissingTokenIdsError("old_logps 'rollout' needs each call's log-probs (response_metadata['completion_logprobs']); "
                                               "the rollout model reported none")
                old = rollout_old_logps(batch["sampling_logps"], batch["completion_mask"])
            elif off_policy or self._corrects_vllm_sampling:
                old = self._per_token_logps(self.model, batch, mode)
                self._log_sampling_difference(mode, old, batch)
            if self.beta != 0.0:
                if self.ref_model is not None:
                    ref = self._per_token_logps(self.ref_model, batch, mode)
                else:
                    # PEFT: the reference is the base model (adapter disabled) or a frozen "ref" adapter.
                    unwrapped = self.accelerator.unwrap_model(self.model)
                    with use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None):
                        ref = self._per_token_logps(self.model, batch, mode)
        return old, ref

    def _log_sampling_difference(self, mode: str, old: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        """How far the rollout engine's log-probs are from the recomputed ones, under TRL's metric names.

        Every process joins the gather, with NaN where it has no token with an engine log-prob:
        a process that skipped it would leave the others waiting there for good.
        """
        delta = old.new_empty(0)
        if "sampling_logps" in batch:
            delta = (old - batch["sampling_logps"]).abs()[batch["completion_mask"].bool()]
            delta = delta[~torch.isnan(delta)]
        largest = delta.max() if delta.numel() else old.new_tensor(float("nan"))
        local = torch.stack([delta.sum(), old.new_tensor(float(delta.numel())), largest])
        total, count, largest = self.accelerator.gather(local.unsqueeze(0)).unbind(dim=1)
        if count.sum() > 0:
            self._metrics[mode]["sampling/sampling_logp_difference/mean"].append((total.sum() / count.sum()).item())
            self._metrics[mode]["sampling/sampling_logp_difference/max"].append(largest.nan_to_num(float("-inf")).max().item())

    def _per_token_logps(self, model: Any, batch: dict[str, torch.Tensor], mode: str) -> torch.Tensor:
        """``model``'s log-probs of ``batch``'s completion tokens, by TRL's row batches or by the token budget."""
        parts = self._forward_parts(batch, mode)
        if parts is None:
            chunks = [(batch, self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size)]
        else:
            chunks = [(trim_part(batch, rows), len(rows)) for rows in parts]
        width, pieces = batch["completion_ids"].size(1), []
        for part, batch_size in chunks:
            input_ids = torch.cat([part["prompt_ids"], part["completion_ids"]], dim=1)
            attention_mask = torch.cat([part["prompt_mask"], part["completion_mask"]], dim=1)
            logps = self._get_per_token_logps_and_entropies(model, input_ids, attention_mask, part["completion_ids"].size(1), batch_size=batch_size)[0]
            pieces.append(torch.nn.functional.pad(logps, (0, width - logps.size(1))))  # a trimmed part back to full width (masked)
        return torch.cat(pieces)

    def _get_per_token_logps_and_entropies(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
        batch_size: int | None = None, compute_entropy: bool = False, compute_aux_loss: bool = False, **model_inputs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """TRL's per-token log-probs (and entropies); with ``pack_prefixes``, each ``batch_size`` rows as one prefix tree."""
        if not self.args.pack_prefixes:
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss, **model_inputs
            )
        extra = sorted(name for name, value in model_inputs.items() if value is not None)
        if compute_aux_loss or extra:
            raise ValueError(f"pack_prefixes scores text-only dense models; this batch also needs {extra or ['the MoE aux loss']}")
        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            packed = pack_rows(input_ids[start : start + batch_size], attention_mask[start : start + batch_size], logits_to_keep)
            outputs, caches = [], []
            for segment in packed.segments:
                # A segment continues its parent's keys and values (a copy: siblings continue the same ones).
                parent = [] if segment.parent < 0 else [(layer.keys, layer.values) for layer in caches[segment.parent].layers]
                caches.append(DynamicCache(parent))
                with self.accelerator.autocast():
                    outputs.append(model(input_ids=segment.input_ids[None], shift_labels=segment.labels[None], fused_lm_head=True, cache=caches[-1]))
            logps.append(packed.unpack([output.log_probs for output in outputs]))
            if compute_entropy:
                entropies.append(packed.unpack([output.entropy for output in outputs]))
        return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    # Loss -----------------------------------------------------------------------------
    def _forward_parts(self, batch: dict[str, torch.Tensor], mode: str) -> list[range] | None:
        """The row ranges of ``batch``'s forward passes under ``max_tokens_per_forward`` (None: no budget).

        Every process splits into parts of the same row count, the smallest any process needs,
        so collective operations inside the passes (ZeRO-3 weight gathers, TRL's gathers of
        per-row metrics) pair up. Training batches only: evaluation batches differ in size
        across processes.
        """
        budget = self.args.max_tokens_per_forward
        if budget is None or mode != "train":
            return None
        part_size = None
        if self.args.pack_prefixes:
            input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
            attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
            width = batch["completion_ids"].size(1)

            def part_size(start: int, stop: int) -> int:
                return packed_length(input_ids[start:stop], attention_mask[start:stop], width)

        size = rows_per_part(batch["prompt_mask"], batch["completion_mask"], budget, part_size)
        size = int(self.accelerator.gather(torch.tensor([size], device=self.accelerator.device)).min().item())
        return split_rows(batch["prompt_mask"].size(0), size)

    def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None) -> torch.Tensor:
        """TRL's loss; under ``max_tokens_per_forward``, summed over parts of the batch, each backpropagated in turn.

        Every part but the last is backpropagated here (without gradient synchronisation),
        so only one part's activations are held at a time; the Trainer backpropagates the
        returned last part. The loss types allowed with a budget divide a sum over tokens by
        the whole batch's token count, so the parts' losses and gradients add up to the
        batch's. Metrics (KL, entropy, clip ratios) are logged per part and averaged.
        """
        parts = self._forward_parts(inputs, "train" if self.model.training else "eval")
        if parts is None or len(parts) == 1:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        earlier = torch.zeros((), device=self.accelerator.device)
        for rows in parts[:-1]:
            with self.accelerator.no_sync(model):
                loss = self._compute_loss(model, trim_part(inputs, rows))
                self._backward_part(loss)
            earlier += loss.detach()
        return self._compute_loss(model, trim_part(inputs, parts[-1])) + earlier

    def _backward_part(self, loss: torch.Tensor) -> None:
        if self.accelerator.distributed_type == DistributedType.DEEPSPEED:
            # Not an accumulation boundary, so DeepSpeed accumulates without an optimizer step.
            self.accelerator.deepspeed_engine_wrapped.backward(loss, sync_gradients=False, scale_wrt_gas=False)
        else:
            self.accelerator.backward(loss)

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
        for name, value in mean_measures([rollout.measures for rollout in rollouts]).items():
            # Tool use (valid calls, searches, evidence recall, submits) and the reward's parts, e.g. reward/paper.
            metrics[name if name.startswith("reward/") else f"tools/{name}"].append(value)
        if self.accelerator.is_main_process:
            logger.info(
                "rollout batch at step %d: %d rollouts, %d rows (+%d padding), reward %.3f +- %.3f, %.1f s",
                self.state.global_step, len(rollouts), len(rows) - padding, padding,
                rewards.mean().item(), metrics["reward_std"][-1], seconds,
            )


def sampling_options(args: Any) -> dict[str, Any]:
    """TRL's sampling fields beyond temperature and top_p, for either rollout backend."""
    return {"top_k": args.top_k or 0, "min_p": args.min_p or 0.0, "repetition_penalty": args.repetition_penalty}


def policy_chat_model(trainer: MultiConvGRPOTrainer) -> Any:
    """A chat model generating with the trainer's policy module itself (current weights, adapter on)."""
    from ..agents.local_model import LocalChatModel

    args = trainer.args
    return LocalChatModel.from_model(
        trainer.accelerator.unwrap_model(trainer.model),
        trainer.processing_class,
        temperature=args.temperature,
        top_p=args.top_p,
        **sampling_options(args),
        max_tokens=args.max_completion_length,
        max_batch_size=args.generation_max_batch_size,
        logprobs=True,  # --old_logps rollout reads them; recompute logs their difference from its own pass
    )


def vllm_chat_model(trainer: MultiConvGRPOTrainer) -> Any:
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
        **sampling_options(args),
        max_tokens=args.max_completion_length,
        logprobs=True,
    )
