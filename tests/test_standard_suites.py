"""LangChain's own standard tests for chat models (``langchain-tests``), run on our chat models.

``LocalChatModel`` runs the unit and the integration suites twice: as the embedded model
(int4, as ``load_chat_model("smollm2-135m")`` gives it) and as an ``hf:`` directory in
float32 (the same weights where a test checks what a reply says, a tiny random Llama
elsewhere). ``VLLMEngineChatModel`` runs the unit suite against its stand-in engine.
Capabilities that are truly absent (images, audio, PDF, Anthropic-format inputs) are
turned off through the suite's own flags; a test that fails only because a 135M model
chooses badly is marked expected-to-fail with the measured rate.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from vllm_stand_in import install_fake_vllm

from langgraph_memagent.agents.embedded import embedded_model_dir
from langgraph_memagent.agents.local_model import LocalChatModel
from langgraph_memagent.agents.vllm_engine import VLLMEngineChatModel

pytestmark = pytest.mark.embedded


class _LocalBackend:
    """What both local backends take, in the suites' terms."""

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False  # a model serves the one model it loaded; there is no other to name per call


class _LocalCapabilities(_LocalBackend):
    """What LocalChatModel can and cannot take."""

    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supported_usage_metadata_details(self) -> dict[str, list[str]]:
        return {"invoke": [], "stream": []}  # no cache or reasoning token counts to report

    @property
    def supports_image_inputs(self) -> bool:
        return False  # a text-only model

    @property
    def supports_anthropic_inputs(self) -> bool:
        return False

    @property
    def tool_choice_value(self) -> str:
        return "required"


# Measured 2026-12-03 with the suite's own prompt and tool: greedy, neither the int4 nor the float32
# model called get_weather; sampled at temperature 1.0, 0 of 20 replies each did (they describe the weather).
_AUTO_CHOICE = "a 135M model under tool_choice='auto' does not call the tool: 0 of 1 greedy, 0 of 20 sampled at T=1 (int4 and float32)"


class _AgentLoopUnderAuto:
    @pytest.mark.xfail(reason=_AUTO_CHOICE, strict=True)
    def test_agent_loop(self, model: Any) -> None:
        super().test_agent_loop(model)


class TestEmbeddedModelUnit(_LocalCapabilities, ChatModelUnitTests):
    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model_path": str(embedded_model_dir()), "quantization": "int4"}


# The suites' calls get 64 tokens instead of their 100: enough for every reply they check, and the
# two integration suites are the longest tests of `make test`.
REPLY_TOKENS = 64


class TestEmbeddedModelIntegration(_AgentLoopUnderAuto, _LocalCapabilities, ChatModelIntegrationTests):
    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model_path": str(embedded_model_dir()), "quantization": "int4", "max_tokens": REPLY_TOKENS}


class TestHFDirectoryUnit(_LocalCapabilities, ChatModelUnitTests):
    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model_path": str(embedded_model_dir())}


# The tests of the float32 run that check what a reply says (a tool call's argument values, unicode in
# them, a call under "auto"): they need the real weights. The rest check the interface (streaming,
# usage, structured output, stop sequences), which a tiny random Llama directory drives through the
# same loading and float32 path in a tenth of the time (the 135M model's float32 run took 132 s).
_REPLY_CONTENT_TESTS = {"test_tool_calling", "test_tool_calling_async", "test_unicode_tool_call_integration", "test_agent_loop"}


class TestHFDirectoryIntegration(_AgentLoopUnderAuto, _LocalCapabilities, ChatModelIntegrationTests):
    directory: str = ""

    @pytest.fixture(autouse=True)
    def _directory(self, request, embedded_model_dir, tiny_model_dir):
        real = request.node.originalname in _REPLY_CONTENT_TESTS
        type(self).directory = str(embedded_model_dir if real else tiny_model_dir)

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model_path": self.directory, "max_tokens": REPLY_TOKENS}


class TestVLLMEngineUnit(_LocalBackend, ChatModelUnitTests):
    """The vllm-engine backend on its stand-in module (vLLM needs a GPU; tests/vllm_stand_in.py)."""

    @pytest.fixture(autouse=True)
    def _stand_in(self, monkeypatch, embedded_model_dir):
        from transformers import AutoTokenizer

        install_fake_vllm(monkeypatch, AutoTokenizer.from_pretrained(str(embedded_model_dir)))

    @property
    def chat_model_class(self) -> type[VLLMEngineChatModel]:
        return VLLMEngineChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model": "HuggingFaceTB/SmolLM2-135M-Instruct"}
