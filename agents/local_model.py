"""A local transformers causal LM as a LangChain chat model, with dynamic batching.

Concurrent calls (``graph.batch``, ``abatch``, several graphs at once, threads or
asyncio) are queued to one worker thread per loaded model, which decodes them
together (continuous batching: prefill alone, shared decode steps; :mod:`.batched_generator`). On 2 CPU cores
8 MemAgent runs at once process about 2x the tokens per second of one after another
(BENCHMARKS.md, float32 and int4 alike); decode alone gets about 4x faster, prefill gains
nothing from batching on CPU.

Every reply carries ``usage_metadata`` and, in ``response_metadata``, the exact
``prompt_token_ids`` and ``completion_token_ids`` of the call: the rows a
multi-conversation RL trainer needs.
"""

from __future__ import annotations

import asyncio
import json
import queue
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, InvalidToolCall, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, Field, PrivateAttr

from .batched_generator import BatchedGenerator, Completion, TokenListener, shared_engine
from .constrained import token_counter
from .prompt_lookup import DRAFT_TOKENS
from .sampling import SamplingParams
from .streaming import TextDeltas
from .structured_output import JsonSchemaOutput, reply_grammar
from .tool_calling import ToolChoice, ToolTurn, bind_local_tools, encode_chat_prompt, prepare_turn


_SAMPLING_OPTIONS = ("top_k", "min_p", "repetition_penalty", "prompt_lookup_num_tokens")
_CALL_OPTIONS = ("max_tokens", "temperature", "top_p", *_SAMPLING_OPTIONS, "tools", "tool_choice", "response_format", "grammar")


def token_level_result(
    text: str,
    prompt_ids: list[int],
    completion_ids: list[int],
    *,
    model_name: str,
    finish_reason: str,
    tool_calls: Sequence[ToolCall] = (),
    invalid_tool_calls: Sequence[InvalidToolCall] = (),
    completion_logprobs: Sequence[float | None] | None = None,
) -> ChatResult:
    """A chat result with token usage and the exact prompt/completion token ids (trainer rows).

    ``text`` is the reply's content; parsed ``tool_calls`` / ``invalid_tool_calls`` ride on
    the message, while the token ids stay those of the whole completion.
    ``completion_logprobs``, for sampled calls, are the completion tokens' log-probs: vLLM's
    sampling ones, or the embedded engine's under the model's own distribution at the
    temperature (before grammar masks and top-p, as a trainer's forward pass computes them).
    """
    usage, metadata = _usage_and_metadata(prompt_ids, completion_ids, model_name, finish_reason, completion_logprobs)
    message = AIMessage(
        content=text,
        tool_calls=list(tool_calls),
        invalid_tool_calls=list(invalid_tool_calls),
        usage_metadata=usage,
        response_metadata=metadata,
    )
    return ChatResult(generations=[ChatGeneration(message=message)])


def _usage_and_metadata(
    prompt_ids: list[int], completion_ids: list[int], model_name: str, finish_reason: str,
    completion_logprobs: Sequence[float | None] | None = None,
) -> tuple[dict[str, int], dict[str, Any]]:
    usage = {
        "input_tokens": len(prompt_ids),
        "output_tokens": len(completion_ids),
        "total_tokens": len(prompt_ids) + len(completion_ids),
    }
    metadata = {
        "model_name": model_name,
        "finish_reason": finish_reason,
        "prompt_token_ids": prompt_ids,
        "completion_token_ids": completion_ids,
    }
    if completion_logprobs is not None:
        metadata["completion_logprobs"] = list(completion_logprobs)
    return usage, metadata


def default_sampling(generation_config: dict[str, Any] | None) -> tuple[float, float]:
    """``(temperature, top_p)`` a model decodes with when the caller sets neither.

    A generation config that turns sampling on gives its own temperature and top_p
    (transformers' defaults, 1.0, where it leaves one out); anything else is greedy, with
    the MemAgent paper's top_p 0.95 kept for when the caller sets a temperature: then
    ``temperature=0.7`` alone is the paper's evaluation setting (arXiv 2507.02259).

    >>> default_sampling({"do_sample": True, "temperature": 0.7, "top_p": 0.8})  # Qwen2.5-Instruct's
    (0.7, 0.8)
    >>> default_sampling({"bos_token_id": 1, "eos_token_id": 2})  # the embedded SmolLM2: greedy
    (0.0, 0.95)
    >>> default_sampling(None)
    (0.0, 0.95)
    """
    if not generation_config or not generation_config.get("do_sample"):
        return 0.0, 0.95
    temperature = generation_config.get("temperature")
    top_p = generation_config.get("top_p")
    return float(1.0 if temperature is None else temperature), float(1.0 if top_p is None else top_p)


def _read_generation_config(model_path: str) -> dict[str, Any] | None:
    """``<model_path>/generation_config.json`` as a dict; None when the directory has none."""
    path = Path(model_path) / "generation_config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read the generation config {str(path)!r}: {error}") from error


def _stop_strings(stop: str | Sequence[str] | None) -> tuple[str, ...]:
    """A call's stop strings as a tuple; one string is one stop string, not its characters.

    >>> _stop_strings("\\n\\n"), _stop_strings(["A:", "B:"]), _stop_strings(None)
    (('\\n\\n',), ('A:', 'B:'), ())
    """
    if stop is None:
        return ()
    strings = (stop,) if isinstance(stop, str) else tuple(stop)
    for string in strings:
        # An empty stop string would end every reply before its first token: refused, not obeyed.
        if not isinstance(string, str) or not string:
            raise ValueError(f"stop must be non-empty strings, got {string!r} in {stop!r}")
    return strings


@dataclass(frozen=True)
class _PendingCall:
    """A submitted generation and how to read its reply."""

    future: Future
    turn: ToolTurn
    stop: tuple[str, ...] = ()


def check_adapter(path: str) -> None:
    """Refuse, by name, a path that is not a PEFT adapter directory (before any weights load)."""
    if not (Path(path) / "adapter_config.json").is_file():
        raise ValueError(f"adapter must be a PEFT LoRA adapter directory (holding adapter_config.json), got {str(path)!r}")


class LocalChatModel(JsonSchemaOutput, BaseChatModel):
    """A local transformers causal LM as a LangChain chat model with dynamic batching.

    Decoding follows the model's own ``generation_config.json``, as ``vllm serve`` and
    ``transformers`` do: sampling with its temperature and top_p when it sets
    ``do_sample``, greedy otherwise (:func:`default_sampling`). The embedded SmolLM2-135M
    has no sampling settings, so it decodes greedily: on the same 16 generated RULER
    ``niah_single_1`` haystacks of 4K tokens (MemAgent, 1000-token chunks, 128-token memory)
    its final reply held the needle 13 times greedy and 4 times at the MemAgent paper's
    evaluation setting, temperature 0.7 and top_p 0.95 (arXiv 2507.02259, chosen for 7B/14B
    models). That setting stays one argument away: ``temperature=0.7`` (top_p keeps 0.95).
    Per-call ``max_tokens``, ``temperature``, ``top_p`` and ``stop`` can be passed to ``invoke`` or
    ``bind``. ``stream``/``astream`` hand over each decode step's text as it is decoded, the
    other calls of the batch decoding beside it (:meth:`_stream`).

    Tools: :meth:`bind_tools` renders tools through the model's chat template, or as the
    Hermes/Qwen2.5 JSON tool prompt when the template has no tool support (SmolLM2), and
    parses ``<tool_call>`` blocks (and bare JSON calls) from the reply into ``tool_calls``;
    malformed ones become ``invalid_tool_calls`` with an error. See
    :mod:`langgraph_memagent.agents.tool_calling`.

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> model = load_chat_model("smollm2-135m", temperature=0)   # doctest: +SKIP
        >>> reply = model.invoke("What is 2 + 2?", max_tokens=16)     # doctest: +SKIP
        >>> reply.usage_metadata["output_tokens"] <= 16               # doctest: +SKIP
        True
        >>> len(reply.response_metadata["completion_token_ids"]) <= 16  # doctest: +SKIP
        True
        >>> from langchain_core.tools import tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     "Add two integers."
        ...     return a + b
        >>> reply = model.bind_tools([add]).invoke("What is 2 + 3? Use the tool.")  # doctest: +SKIP
        >>> reply.tool_calls                                                       # doctest: +SKIP
        [{'name': 'add', 'args': {'a': 2, 'b': 3}, 'id': 'call_0_...', 'type': 'tool_call'}]
    """

    model_config = ConfigDict(protected_namespaces=())
    decodes_grammars: ClassVar[bool] = True  # a call may pass ``grammar=`` (llguidance Lark); see agents.constrained

    model_path: str = Field(description="Local transformers model directory (config, weights, tokenizer).")
    max_tokens: int = Field(1024, description="Default generation limit per call (MemAgent: 1024).")
    temperature: float | None = Field(None, description="Sampling temperature; 0 means greedy (default: the model's generation config, else greedy).")
    top_p: float | None = Field(None, description="Nucleus sampling mass (default: the model's generation config, else MemAgent's 0.95).")
    top_k: int = Field(0, description="Sample among the k most likely tokens only; 0 = no limit.")
    min_p: float = Field(0.0, description="Drop tokens below min_p x the most likely token's probability; 0 = off.")
    repetition_penalty: float = Field(1.0, description="Penalty on tokens already in the prompt or reply (transformers'); 1.0 = off.")
    logprobs: bool = Field(False, description="Sampled calls report each completion token's log-prob at the temperature (response_metadata['completion_logprobs'], for a trainer).")
    dtype: str = Field("float32", description="Torch dtype of the loaded weights; float32 by default (all-bfloat16 logits tie under greedy decoding, measured).")
    device: str = Field("cpu", description="Torch device, e.g. 'cpu' or 'cuda:0'.")
    adapter: str | None = Field(
        None, description="A PEFT LoRA adapter directory (e.g. `memagent train --finetuning lora`'s output_dir) merged into the weights at load."
    )
    free_answer: bool = Field(
        False, description="Trained to write its final answer unaided (a `memagent train` adapter, `smollm2-135m-memagent`; load_chat_model sets it with an adapter): MemAgent graphs that leave constrained_answer unset decode it without a grammar."
    )
    quantization: str | None = Field(
        None, description="'int4': 4-bit Linear layers on CPU (for the embedded model its GGUF's own codes), ~3x faster decoding; inference only."
    )
    compile_decode: bool = Field(
        False, description="int4 Llama models: run the fused decode step compiled ahead of time (AOTInductor), 1.3-1.5x the eager step at batch 1 after a one-off compile kept on disk."
    )
    prompt_lookup_num_tokens: int = Field(
        DRAFT_TOKENS,
        description="int4 Llama models, greedy calls decoded alone: tokens drafted from the prompt and checked in one forward (prompt lookup decoding); 0 = off. Per call too; models that differ only here share one engine.",
    )
    stop: list[str] | None = Field(None, description="Strings that end every reply where they first appear, cut from its text (per call too).")
    max_batch_size: int = Field(8, description="Most calls decoded together in one step.")
    batch_window_ms: float = Field(30.0, description="How long the first call after an idle spell waits for others.")
    prefix_cache_size: int = Field(
        16, description="Recent prompts whose caches a new prompt may continue, prefilling only what it does not share with one; 0 = off."
    )
    default_tool_choice: str | None = Field(
        None, description="tool_choice of bind_tools calls that set none (None: 'auto'); 'required' makes a small model call tools inside libraries (LangMem)."
    )

    _engine: BatchedGenerator | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        if self.adapter is not None:
            check_adapter(self.adapter)
        if self.quantization is not None:
            from .quantization import QUANTIZATIONS  # imports torch: only when asked for

            if self.quantization not in QUANTIZATIONS:
                raise ValueError(f"quantization must be one of {list(QUANTIZATIONS)} or None, got {self.quantization!r}")
        if self.temperature is None or self.top_p is None:
            temperature, top_p = default_sampling(_read_generation_config(self.model_path))
            self.temperature = temperature if self.temperature is None else self.temperature
            self.top_p = top_p if self.top_p is None else self.top_p
        self._sampling({})  # a bad setting is named now, not at the first call

    @property
    def _llm_type(self) -> str:
        return "local-transformers"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path, "adapter": self.adapter, "dtype": self.dtype, "quantization": self.quantization,
            "compile_decode": self.compile_decode, "prompt_lookup_num_tokens": self.prompt_lookup_num_tokens,
            "temperature": self.temperature, "top_p": self.top_p,
        }

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, **fields: Any) -> LocalChatModel:
        """Serve an already loaded causal LM (e.g. a trainer's policy, PEFT-wrapped or not).

        Generation runs on that very module, so weight updates and an enabled LoRA adapter
        take effect on the next call; nothing is copied or reloaded.

        >>> from transformers import AutoModelForCausalLM, AutoTokenizer   # doctest: +SKIP
        >>> policy = AutoModelForCausalLM.from_pretrained(model_dir)        # doctest: +SKIP
        >>> chat = LocalChatModel.from_model(policy, AutoTokenizer.from_pretrained(model_dir), temperature=1.0)  # doctest: +SKIP
        """
        if fields.get("quantization") is not None or fields.get("adapter") is not None:
            raise ValueError("from_model serves the given module as it is: quantize it or add the adapter first, or load by path")
        name = str(getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__)
        config = getattr(model, "generation_config", None)
        temperature, top_p = default_sampling(config.to_dict() if config is not None else None)
        fields = {"temperature": temperature, "top_p": top_p, **{k: v for k, v in fields.items() if v is not None}}
        chat = cls(model_path=name, **fields)
        chat._engine = BatchedGenerator(
            model, tokenizer, max_batch_size=chat.max_batch_size, batch_window_s=chat.batch_window_ms / 1000,
            compile_decode=chat.compile_decode, prefix_cache_size=chat.prefix_cache_size,
        )
        return chat

    @property
    def engine(self) -> BatchedGenerator:
        """The shared batched generator (loads the model on first use)."""
        if self._engine is None:
            if not Path(self.model_path).is_dir():
                raise ValueError(f"model_path must be a local transformers model directory, got {self.model_path!r}")
            self._engine = shared_engine(
                self.model_path,
                dtype=self.dtype,
                device=self.device,
                quantization=self.quantization,
                adapter=self.adapter,
                max_batch_size=self.max_batch_size,
                batch_window_s=self.batch_window_ms / 1000,
                compile_decode=self.compile_decode,
                prefix_cache_size=self.prefix_cache_size,
            )
        return self._engine

    @property
    def prompt_lookup_in_use(self) -> int:
        """How many tokens the engine drafts for this model's greedy calls decoded alone; 0 where it does not
        draft (not an int4 Llama model, a compiled step, or ``prompt_lookup_num_tokens=0``). Loads the model."""
        return self.prompt_lookup_num_tokens if self.engine.can_draft else 0

    @property
    def tokenizer(self) -> Any:
        """The model's own tokenizer, used for token-exact chunking."""
        return self.engine.tokenizer

    @property
    def context_window(self) -> int | None:
        """The model's window in tokens (``max_position_embeddings``), read without loading the weights; None if unknown."""
        loaded = getattr(getattr(self._engine, "model", None), "config", None)  # a trainer's policy has no directory
        if loaded is not None:
            return getattr(loaded, "max_position_embeddings", None)
        path = Path(self.model_path) / "config.json"
        try:
            return json.loads(path.read_text(encoding="utf-8")).get("max_position_embeddings")
        except (OSError, ValueError):
            return None  # no readable config: the engine reports the problem when it loads

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | BaseTool],
        *,
        tool_choice: ToolChoice | str | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with ``tools`` offered on every call (LangChain tools, functions, pydantic models or schemas).

        ``tool_choice``: ``None``/``"auto"`` the model decides; ``"none"`` no tools are
        offered; ``"required"``/``"any"`` or a tool's name start the reply with a tool call
        (see :mod:`langgraph_memagent.agents.tool_calling`).
        """
        return bind_local_tools(self, tools, self.default_tool_choice if tool_choice is None else tool_choice, **kwargs)

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """What LangSmith records of a call: provider, model, temperature, token limit and stop strings."""
        params = LangSmithParams(
            ls_provider="local-transformers", ls_model_name=kwargs.get("model", Path(self.model_path).name), ls_model_type="chat",
            ls_temperature=kwargs.get("temperature", self.temperature), ls_max_tokens=kwargs.get("max_tokens", self.max_tokens),
        )
        if stop or self.stop:
            params["ls_stop"] = list(stop or self.stop)
        return params

    def _sampling(self, kwargs: dict[str, Any], stop: Sequence[str] | None = None) -> SamplingParams:
        """This call's settings: its own options, else the model's."""
        return SamplingParams(
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            **{name: kwargs.get(name, getattr(self, name)) for name in _SAMPLING_OPTIONS},
            logprobs=self.logprobs,
            stop=_stop_strings(stop or self.stop),
        )

    def _submit(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any], on_tokens: TokenListener | None = None
    ) -> _PendingCall:
        unknown = set(kwargs) - set(_CALL_OPTIONS)
        if unknown:
            raise ValueError(f"unsupported call options {sorted(unknown)}; LocalChatModel accepts {list(_CALL_OPTIONS)}")
        params = self._sampling(kwargs, stop)
        turn = prepare_turn(self.engine.tokenizer, messages, kwargs)
        # What apply_chat_template(tokenize=True) does, on the text that may end with a forced-call
        # prefix, except that message text never becomes a control token.
        prompt_ids = encode_chat_prompt(self.engine.tokenizer, turn.prompt)
        window = self.context_window
        if window is not None and len(prompt_ids) + params.max_tokens > window:
            # Past its window the model keeps generating, but garbage: refuse, as vLLM does.
            raise ValueError(
                f"prompt of {len(prompt_ids)} tokens + max_tokens {params.max_tokens} = {len(prompt_ids) + params.max_tokens} "
                f"exceeds the model's {window}-token window"
            )
        grammar = reply_grammar(
            turn, kwargs.get("response_format"), params.max_tokens, token_counter(self.engine.tokenizer), kwargs.get("grammar")
        )
        return _PendingCall(self.engine.submit(list(prompt_ids), params, grammar, on_tokens), turn, params.stop)

    def _result(self, call: _PendingCall, completion: Completion) -> ChatResult:
        reply = call.turn.read(completion.text)
        return token_level_result(
            reply.content,
            completion.prompt_token_ids,
            completion.completion_token_ids,
            model_name=Path(self.model_path).name,
            finish_reason=completion.finish_reason,
            tool_calls=reply.tool_calls,
            invalid_tool_calls=reply.invalid_tool_calls,
            completion_logprobs=completion.completion_logprobs,
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._submit(messages, stop, kwargs)
        return self._result(call, call.future.result())

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Loading the model on first use, rendering the template and tokenizing all touch
        # files or burn CPU: a worker thread keeps them off the caller's event loop.
        call = await asyncio.to_thread(self._submit, messages, stop, kwargs)
        completion = await asyncio.wrap_future(call.future)
        return await asyncio.to_thread(self._result, call, completion)

    # Streaming ----------------------------------------------------------------------
    def _chunks(self, call: _PendingCall, deltas: TextDeltas, ids: list[int]) -> Iterator[ChatGenerationChunk]:
        """The text pieces ``ids`` add, as chunks; a turn with tools bound waits for its parsed reply."""
        if call.turn.tool_names is None and (piece := deltas.add(ids)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))

    def _last_chunk(self, call: _PendingCall, deltas: TextDeltas, completion: Completion) -> ChatGenerationChunk:
        """The rest of the reply, with its tool calls, usage and token ids (what ``invoke`` returns, in chunks)."""
        reply = call.turn.read(completion.text)
        usage, metadata = _usage_and_metadata(
            completion.prompt_token_ids, completion.completion_token_ids, Path(self.model_path).name, completion.finish_reason,
            completion.completion_logprobs,
        )
        calls = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
            for i, c in enumerate(reply.tool_calls)
        ] + [
            {"name": c["name"], "args": c["args"], "id": c["id"], "index": len(reply.tool_calls) + i, "type": "tool_call_chunk"}
            for i, c in enumerate(reply.invalid_tool_calls)
        ]
        content = deltas.rest(reply.content) if call.turn.tool_names is None else reply.content
        message = AIMessageChunk(
            content=content, tool_call_chunks=calls, usage_metadata=usage, response_metadata=metadata, chunk_position="last"
        )
        return ChatGenerationChunk(message=message)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply as it is decoded: a chunk per step's text, other calls decoding beside it; the last
        chunk carries the usage, the token ids and any tool calls."""
        arrivals: queue.Queue[list[int] | None] = queue.Queue()
        call = self._submit(messages, stop, kwargs, arrivals.put)
        call.future.add_done_callback(lambda _: arrivals.put(None))
        deltas = TextDeltas(self.engine.tokenizer, call.stop)
        try:
            while (ids := arrivals.get()) is not None:
                for chunk in self._chunks(call, deltas, ids):
                    if run_manager is not None:
                        run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk
            yield self._last_chunk(call, deltas, call.future.result())
        finally:
            call.future.cancel()  # a caller that stopped reading frees its row at the next step

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """Async twin of :meth:`_stream`: tokens reach the event loop as the engine decodes them."""
        loop = asyncio.get_running_loop()
        arrivals: asyncio.Queue[list[int] | None] = asyncio.Queue()

        def hand_over(ids: list[int] | None) -> None:
            loop.call_soon_threadsafe(arrivals.put_nowait, ids)

        call = await asyncio.to_thread(self._submit, messages, stop, kwargs, hand_over)
        call.future.add_done_callback(lambda _: hand_over(None))
        deltas = TextDeltas(self.engine.tokenizer, call.stop)
        try:
            while (ids := await arrivals.get()) is not None:
                for chunk in self._chunks(call, deltas, ids):
                    if run_manager is not None:
                        await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk
            yield await asyncio.to_thread(self._last_chunk, call, deltas, call.future.result())
        finally:
            call.future.cancel()
