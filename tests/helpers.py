"""Helpers several test modules share (plain functions and constants; the fixtures are in conftest.py).

Test modules import from here, never from one another: importing a fixture from another test
module registers a second copy of it (a module-scoped model built once per importing module).
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

# The data the tests read sits in shared/data beside the checkout (CI clones it there too).
DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO_FILE = DATA_DIR / "locomo_conv30.json"

AGEMEM_FORCED = "Answer the question now from what you know"  # AgeMem's FORCE_ANSWER_PROMPT


def _byte_codec():
    import tiktoken

    from langgraph_memagent.agents.tokenizers import TiktokenCodec

    return TiktokenCodec(
        tiktoken.Encoding("bytes", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
    )


BYTES = _byte_codec()  # one token per byte, offline: exact counts for scripted-model tests


def tiny_config(tmp_path, **overrides):
    """A one-step GRPO configuration for the tiny Llama of the ``tiny_model_dir`` fixture."""
    from langgraph_memagent.training.config import MultiConvGRPOConfig

    settings = dict(
        output_dir=str(tmp_path / "run"),
        chunk_tokens=64,
        answer_tokens=4,
        num_generations=2,
        per_device_train_batch_size=4,
        steps_per_generation=1,
        max_steps=1,
        learning_rate=1e-2,
        warmup_steps=0,
        reward_metric="string_match_all",
        activation_checkpointing=False,
        save_strategy="no",
        report_to="none",
        reward_curve=False,
        seed=0,
    )
    if overrides.get("graph", "memagent") == "memagent":
        settings["memory_tokens"] = 4  # MemAgent's alone: the trainer refuses another graph's options
    settings.update(overrides)
    return MultiConvGRPOConfig(**settings)


def make_trainer(tiny_model_dir, dataset, config, trainer_class=None, **kwargs):
    """The real trainer (LoRA r=4) on the tiny Llama."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    return (trainer_class or MultiConvGRPOTrainer)(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        args=config,
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(tiny_model_dir),
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
        **kwargs,
    )


def trained_recording_rollouts(tiny_model_dir, rows, config):
    """A trainer run on ``rows`` under ``config``, and every rollout it trained on."""
    from datasets import Dataset

    from langgraph_memagent.training.trainer import MultiConvGRPOTrainer

    batches = []

    class Recording(MultiConvGRPOTrainer):
        def _batch_from_rollouts(self, rollouts, mode, **kwargs):
            batches.append(rollouts)
            return super()._batch_from_rollouts(rollouts, mode, **kwargs)

    trainer = make_trainer(tiny_model_dir, Dataset.from_list(rows), config, Recording)
    trainer.train()
    return trainer, [rollout for batch in batches for rollout in batch]


class ScriptedEngine:
    """Stands in for ``LocalChatModel``'s batched generator: ``script(decoded prompt)`` is the completion.

    Token ids are the tokenizer's own (the completion ends with EOS, as a finished
    generation does), so the recorded rows are exactly what the trainer would get.
    """

    def __init__(self, tokenizer, script):
        self.tokenizer = tokenizer
        self.script = script

    def submit(self, prompt_ids, params, grammar=None, on_tokens=None):
        from langgraph_memagent.agents.batched_generator import Completion

        # The script's text is the reply: a forced call's grammar is not applied here (tests/test_constrained.py),
        # and it arrives whole (token streaming is tests/test_streaming.py's).
        text = self.script(self.tokenizer.decode(prompt_ids))
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        assert len(ids) < params.max_tokens, f"scripted reply longer than max_tokens={params.max_tokens}: {text!r}"
        future = Future()
        future.set_result(Completion(list(prompt_ids), ids + [self.tokenizer.eos_token_id], text, "stop"))
        return future


def scripted_policy(tokenizer, script):
    """The real ``LocalChatModel`` (tool rendering, tool-call parser, token ids) on a scripted engine."""
    from langgraph_memagent.agents.local_model import LocalChatModel

    chat = LocalChatModel(model_path="scripted-policy")
    chat._engine = ScriptedEngine(tokenizer, script)
    return chat


def turns_of(conversation: dict) -> dict[str, dict]:
    """A LoCoMo-shaped conversation's turns by dialogue id, each with its session's key."""
    return {
        turn["dia_id"]: {**turn, "session": key}
        for key, turns in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(turns, list)
        for turn in turns
    }
