"""vLLM in-process as a LangChain chat model (optional extra ``vllm``; needs a GPU).

For the highest single-node throughput without a server. Calls that arrive together
(``graph.batch`` over many documents, MemAgent's concurrent rollouts, parallel tool
loops) are gathered for ``batch_window_ms`` and handed to one ``LLM.generate`` call,
which vLLM schedules as one continuous batch; ``vllm.LLM`` itself is not thread-safe,
so every call goes through that one worker thread.

Prompts are rendered here with the model's chat template (:mod:`.tool_calling`), so
``bind_tools`` works as on the embedded backend: native tool templates (Qwen2.5,
Llama 3.1, ...) render the tools, others get the Hermes JSON tool prompt, and
``<tool_call>`` blocks are parsed into ``tool_calls``. Prompt and completion token ids
are recorded for the trainer, as by the other local backends.

Import-guarded: without vLLM installed, constructing the model raises an error that
says how to install it.

The trainer (``--use_vllm``) hands it an engine that already runs: TRL's colocated
``vllm.LLM``, or :class:`VLLMServerEngine` over a ``trl vllm-serve`` server. With
``logprobs=True`` each reply also carries the sampling log-prob of every completion
token (``response_metadata["completion_logprobs"]``), which the trainer's
importance-sampling correction needs.

>>> from langgraph_memagent import load_chat_model
>>> model = load_chat_model("vllm-engine:Qwen/Qwen2.5-7B-Instruct", temperature=0.7)  # doctest: +SKIP
>>> model.bind_tools([search_memory]).invoke("When did Ann move?").tool_calls           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import atexit
import queue
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, Field, PrivateAttr

from .constrained import token_counter
from .local_model import token_level_result
from .structured_output import JsonSchemaOutput, reply_grammar
from .tool_calling import ToolChoice, ToolTurn, bind_local_tools, encode_chat_prompt, prepare_turn


VLLM_INSTALL = "pip install 'langgraph-memagent[vllm]' (vLLM needs a CUDA GPU)"
_SAMPLING_OPTIONS = ("top_k", "min_p", "repetition_penalty")  # vLLM's own SamplingParams fields
_CALL_OPTIONS = ("max_tokens", "temperature", "top_p", *_SAMPLING_OPTIONS, "tools", "tool_choice", "response_format", "grammar")


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as error:
        raise ImportError(f"the 'vllm-engine:' backend needs vLLM, which is not installed: {VLLM_INSTALL}") from error
    return vllm


def _shut_down_engine_core(llm: Any) -> None:
    """Stop the engine-core process of a ``vllm.LLM`` this model started.

    vLLM runs its engine core as a non-daemonic child process, which ``multiprocessing`` joins
    at exit, while the finalizer that would stop it never runs because the generate worker
    keeps the engine referenced: the interpreter waited on the child forever. Registered with
    ``atexit`` after vLLM (and so ``multiprocessing``) was imported, this runs before that join.
    """
    engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if engine_core is not None and hasattr(engine_core, "shutdown"):
        engine_core.shutdown()


@dataclass
class _Request:
    prompt_ids: list[int]
    params: Any
    future: Future


class _GenerateWorker:
    """The one thread that calls ``llm.generate``, on every request queued within a window."""

    def __init__(self, llm: Any, batch_window_s: float):
        self.llm, self.batch_window_s = llm, batch_window_s
        self.requests: queue.Queue[_Request] = queue.Queue()
        threading.Thread(target=self._serve, name="vllm-engine", daemon=True).start()

    def submit(self, prompt_ids: list[int], params: Any) -> Future:
        future: Future = Future()
        self.requests.put(_Request(prompt_ids, params, future))
        return future

    def _serve(self) -> None:
        while True:
            batch = [self.requests.get()]
            try:
                while True:
                    batch.append(self.requests.get(timeout=self.batch_window_s))
            except queue.Empty:
                pass
            try:
                outputs = self.llm.generate(
                    [{"prompt_token_ids": request.prompt_ids} for request in batch],
                    [request.params for request in batch],
                    use_tqdm=False,
                )
            except Exception as error:  # noqa: BLE001 - every waiting caller gets the engine's error
                for request in batch:
                    request.future.set_exception(error)
                continue
            for request, output in zip(batch, outputs):
                request.future.set_result(output)


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _CompletionOutput:
    token_ids: list[int]
    text: str
    finish_reason: str
    logprobs: list[dict[int, _Logprob]] | None


@dataclass
class _RequestOutput:
    prompt_token_ids: list[int]
    outputs: list[_CompletionOutput] = field(default_factory=list)


class VLLMServerEngine:
    """A vLLM server seen through the part of ``vllm.LLM`` this module uses (``generate``, ``get_tokenizer``).

    Requests go through TRL's ``VLLMClient.generate`` (``/v1/completions`` with token-id
    prompts), one request per distinct sampling setting of a batch. The server returns no
    finish reason, so a completion that filled ``max_tokens`` without an EOS is "length".

    >>> engine = VLLMServerEngine(client, tokenizer)                    # doctest: +SKIP
    >>> chat = VLLMEngineChatModel(model="Qwen/Qwen2.5-7B-Instruct", engine=engine)  # doctest: +SKIP
    """

    def __init__(self, client: Any, tokenizer: Any):
        self.client, self.tokenizer = client, tokenizer

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    def generate(self, prompts: list[dict[str, Any]], params: list[Any], use_tqdm: bool = False) -> list[_RequestOutput]:
        settings: dict[tuple, list[int]] = defaultdict(list)
        for index, param in enumerate(params):
            sampling = tuple(getattr(param, name) for name in _SAMPLING_OPTIONS)
            grammar = getattr(getattr(param, "structured_outputs", None), "grammar", None)
            settings[(param.max_tokens, param.temperature, param.top_p, sampling, tuple(param.stop or ()), param.logprobs, grammar)].append(index)
        outputs: list[_RequestOutput | None] = [None] * len(prompts)
        for (max_tokens, temperature, top_p, sampling, stop, logprobs, grammar), indices in settings.items():
            extra = {"stop": list(stop)} if stop else {}
            if grammar:  # the server's /v1/completions takes vLLM's structured_outputs field
                extra["structured_outputs"] = {"grammar": grammar}
            reply = self.client.generate(
                prompts=[prompts[index]["prompt_token_ids"] for index in indices],
                n=1,
                temperature=temperature,
                top_p=top_p,
                **dict(zip(_SAMPLING_OPTIONS, sampling)),
                max_tokens=max_tokens,
                logprobs=logprobs,
                generation_kwargs=extra or None,
            )
            for position, index in enumerate(indices):
                token_ids = list(reply["completion_ids"][position])
                ended = bool(token_ids) and token_ids[-1] == self.tokenizer.eos_token_id
                sampled = None
                if reply.get("logprobs") is not None:
                    # logprobs=0: one entry per token, the sampled token's own.
                    sampled = [{token: _Logprob(step[0])} for token, step in zip(token_ids, reply["logprobs"][position])]
                completion = _CompletionOutput(
                    token_ids,
                    self.tokenizer.decode(token_ids, skip_special_tokens=True),
                    "length" if len(token_ids) >= max_tokens and not ended else "stop",
                    sampled,
                )
                outputs[index] = _RequestOutput(list(prompts[index]["prompt_token_ids"]), [completion])
        return outputs  # type: ignore[return-value]


class VLLMEngineChatModel(JsonSchemaOutput, BaseChatModel):
    """A ``vllm.LLM`` engine in this process (defaults: MemAgent eval sampling 0.7 / 0.95, arXiv 2507.02259)."""

    model_config = ConfigDict(protected_namespaces=())
    decodes_grammars: ClassVar[bool] = True  # a call may pass ``grammar=`` (llguidance Lark, vLLM's "guidance" backend)

    model: str = Field(description="Model name or local directory for vllm.LLM.")
    max_tokens: int = Field(1024, description="Default generation limit per call (MemAgent: 1024).")
    temperature: float = Field(0.7, description="Sampling temperature (MemAgent eval: 0.7).")
    top_p: float = Field(0.95, description="Nucleus sampling mass (MemAgent eval: 0.95).")
    top_k: int = Field(0, description="Sample among the k most likely tokens only; 0 = no limit.")
    min_p: float = Field(0.0, description="Drop tokens below min_p x the most likely token's probability; 0 = off.")
    repetition_penalty: float = Field(1.0, description="vLLM's penalty on tokens already in the prompt or reply; 1.0 = off.")
    batch_window_ms: float = Field(5.0, description="How long the worker waits for more calls to join a batch.")
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra vllm.LLM arguments, e.g. tensor_parallel_size.")
    engine: Any = Field(None, exclude=True, description="An engine already running (TRL's colocated vllm.LLM, a VLLMServerEngine); None: a new vllm.LLM.")
    logprobs: bool = Field(False, description="Record the sampling log-prob of each completion token (for the trainer's importance sampling).")

    _llm: Any = PrivateAttr(default=None)
    _worker: _GenerateWorker = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        if self.engine is not None:  # its owner (TRL, a server) shuts it down
            self._llm = self.engine
        else:
            self._llm = _import_vllm().LLM(model=self.model, **self.engine_kwargs)
            atexit.register(_shut_down_engine_core, self._llm)
        self._worker = _GenerateWorker(self._llm, self.batch_window_ms / 1000)

    @property
    def _llm_type(self) -> str:
        return "vllm-engine"

    @property
    def tokenizer(self) -> Any:
        """The engine's tokenizer, used for token-exact chunking and prompt rendering."""
        return self._llm.get_tokenizer()

    @property
    def context_window(self) -> int | None:
        """vLLM's ``max_model_len``: the budget SUMER and AgeMem stop at; None where the engine does not say (a server)."""
        # Without it a tool graph's context grew past vLLM's limit and vLLM refused the prompt (seen on an H100).
        return getattr(getattr(getattr(self._llm, "llm_engine", None), "model_config", None), "max_model_len", None)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | BaseTool],
        *,
        tool_choice: ToolChoice | str | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with ``tools`` offered on every call; ``tool_choice`` as the embedded backend's."""
        return bind_local_tools(self, tools, tool_choice, **kwargs)

    def _submit(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> tuple[Future, ToolTurn]:
        unknown = set(kwargs) - set(_CALL_OPTIONS)
        if unknown:
            raise ValueError(f"unsupported call options {sorted(unknown)}; the vllm-engine backend accepts {list(_CALL_OPTIONS)}")
        vllm = _import_vllm()
        turn = prepare_turn(self.tokenizer, messages, kwargs)
        max_tokens = kwargs.get("max_tokens", self.max_tokens)
        # The same llguidance grammar as the embedded engine's; vLLM runs it with its "guidance" backend.
        grammar = reply_grammar(turn, kwargs.get("response_format"), max_tokens, token_counter(self.tokenizer), kwargs.get("grammar"))
        params = vllm.SamplingParams(
            max_tokens=max_tokens,
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            **{name: kwargs.get(name, getattr(self, name)) for name in _SAMPLING_OPTIONS},
            stop=stop,
            logprobs=0 if self.logprobs else None,
            **({"structured_outputs": vllm.sampling_params.StructuredOutputsParams(grammar=grammar)} if grammar else {}),
        )
        prompt_ids = encode_chat_prompt(self.tokenizer, turn.prompt)  # message text never becomes a control token
        return self._worker.submit(list(prompt_ids), params), turn

    def _result(self, output: Any, turn: ToolTurn) -> ChatResult:
        completion = output.outputs[0]
        reply = turn.read(completion.text)
        return token_level_result(
            reply.content,
            list(output.prompt_token_ids),
            list(completion.token_ids),
            model_name=self.model,
            finish_reason=completion.finish_reason,
            tool_calls=reply.tool_calls,
            invalid_tool_calls=reply.invalid_tool_calls,
            completion_logprobs=(
                [step[token].logprob for token, step in zip(completion.token_ids, completion.logprobs)] if self.logprobs else None
            ),
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        future, turn = self._submit(messages, stop, kwargs)
        return self._result(future.result(), turn)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Template rendering and tokenizing stay off the caller's event loop (see LocalChatModel).
        future, turn = await asyncio.to_thread(self._submit, messages, stop, kwargs)
        output = await asyncio.wrap_future(future)
        return await asyncio.to_thread(self._result, output, turn)
