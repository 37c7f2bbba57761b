"""vLLM in-process as a LangChain chat model (optional extra ``vllm``; needs a GPU).

For the highest single-node throughput without a server: ``vllm.LLM`` batches every
prompt handed to it at once, so ``graph.batch`` over many documents maps onto one
``LLM.chat`` call per step via LangChain's batch API. Import-guarded: without vLLM
installed, constructing the model raises an error that says how to install it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from .local_model import token_level_result

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
VLLM_INSTALL = "pip install 'langgraph-memagent[vllm]' (vLLM needs a CUDA GPU)"


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as error:
        raise ImportError(f"the 'vllm-engine:' backend needs vLLM, which is not installed: {VLLM_INSTALL}") from error
    return vllm


class VLLMEngineChatModel(BaseChatModel):
    """A ``vllm.LLM`` engine in this process (defaults: MemAgent eval sampling 0.7 / 0.95)."""

    model_config = ConfigDict(protected_namespaces=())

    model: str = Field(description="Model name or local directory for vllm.LLM.")
    max_tokens: int = Field(1024, description="Default generation limit per call (MemAgent: 1024).")
    temperature: float = Field(0.7, description="Sampling temperature (MemAgent eval: 0.7).")
    top_p: float = Field(0.95, description="Nucleus sampling mass (MemAgent eval: 0.95).")
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra vllm.LLM arguments, e.g. tensor_parallel_size.")

    _llm: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        vllm = _import_vllm()
        self._llm = vllm.LLM(model=self.model, **self.engine_kwargs)

    @property
    def _llm_type(self) -> str:
        return "vllm-engine"

    @property
    def tokenizer(self) -> Any:
        """The engine's tokenizer, used for token-exact chunking."""
        return self._llm.get_tokenizer()

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        vllm = _import_vllm()
        params = vllm.SamplingParams(
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            stop=stop,
        )
        chat = [{"role": _ROLES.get(m.type, m.type), "content": m.text} for m in messages]
        output = self._llm.chat([chat], params, use_tqdm=False)[0]
        completion = output.outputs[0]
        return token_level_result(
            completion.text,
            list(output.prompt_token_ids),
            list(completion.token_ids),
            model_name=self.model,
            finish_reason=completion.finish_reason,
        )
