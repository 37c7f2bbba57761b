"""A stand-in ``vllm`` module for tests on machines without a GPU.

It plays ``vllm.LLM``: it records what it is handed and replies with scripted text (the
module's ``replies``) tokenized by the real SmolLM2 tokenizer. This checks our side
(rendering, batching, parsing, token ids), not vLLM.
"""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace
from typing import Any


class _FakeLLM:
    def __init__(self, tokenizer, replies, max_model_len=None):
        self.tokenizer, self.replies, self.batches = tokenizer, list(replies), []
        if max_model_len is not None:  # where vllm.LLM keeps it
            self.llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=max_model_len))

    def get_tokenizer(self):
        return self.tokenizer

    def generate(self, prompts, params, use_tqdm=True):
        self.batches.append([(prompt["prompt_token_ids"], param) for prompt, param in zip(prompts, params)])
        outputs = []
        for prompt in prompts:
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            completion = SimpleNamespace(text=reply, token_ids=self.tokenizer(reply)["input_ids"], finish_reason="stop")
            outputs.append(SimpleNamespace(prompt_token_ids=prompt["prompt_token_ids"], outputs=[completion]))
        return outputs


def install_fake_vllm(monkeypatch: Any, tokenizer: Any) -> ModuleType:
    """Put the stand-in in ``sys.modules["vllm"]`` for one test; its ``replies`` list is what it answers, in order."""
    module = ModuleType("vllm")
    module.engines = []
    module.replies = []

    def make_llm(model, **kwargs):
        module.engines.append(_FakeLLM(tokenizer, module.replies, kwargs.get("max_model_len")))
        return module.engines[-1]

    module.LLM = make_llm
    module.SamplingParams = lambda **kwargs: SimpleNamespace(**kwargs)
    module.sampling_params = SimpleNamespace(StructuredOutputsParams=lambda **kwargs: SimpleNamespace(**kwargs))
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module
