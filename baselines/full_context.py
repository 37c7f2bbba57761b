"""The full-context baseline: the whole document in one prompt, center-truncated to the window.

This is the "plain model" of the MemAgent paper's comparisons (arXiv 2507.02259, figure
5 and table 2): one call reads question + document and answers. The prompt mirrors
MemAgent's final-answer prompt (same wording, same ``<problem> `` block, same
``\\boxed{}`` or "the answer is" request), with the document where MemAgent has its
memory, so a comparison isolates the memory mechanism rather than prompt wording.

When the prompt would exceed ``max_input_tokens``, the document's tokens are
center-truncated: the first and the last halves of the budget are kept, as in the
paper's long-context baselines and the reference quick-start (which keeps the first and
last 60K of 120K tokens). The output says so (``truncated``, ``dropped_tokens``);
``truncation="error"`` refuses instead. Nothing is ever dropped silently.

Graph: ``answer`` (one node: fit the prompt, call the model, extract the answer).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..agents.answers import extract_answer
from ..agents.calls import (
    NO_USAGE,
    AnswerOutput,
    QuestionInput,
    acall_model,
    add_usage,
    call_model,
    positive_int,
    validated_inputs,
)
from ..agents.compiled_graph import RecursionSizedGraph, node
from ..agents.loading import context_window, prompt_budget
from ..agents.prompts import ANSWER_FORMATS, FinalPromptStyle, answer_template, fill_template
from ..agents.tokenizers import HFTokenCodec, TokenCodec, encode_long, resolve_tokenizer


TruncationMode = Literal["center", "error"]

# MemAgent's final prompt with "a previous memory" replaced by "a document". The document fills
# the {chunk} placeholder: fill_template substitutes in one literal pass.
FULL_CONTEXT_TEMPLATES: dict[str, str] = {
    style: answer_template(style, material="a document", based_on="the document", tag="document", slot="chunk") for style in ANSWER_FORMATS
}


class ContextOverflowError(ValueError):
    """The prompt does not fit ``max_input_tokens`` and truncation was not allowed."""


class FullContextOutput(AnswerOutput, total=False):
    """What a run returns: MemAgent's contract plus what truncation did."""

    memory: str  # always "": this baseline keeps no memory
    truncated: bool  # True when document tokens were dropped to fit the window
    dropped_tokens: int  # document tokens removed from the middle
    document_tokens: int  # document length under the chunking tokenizer
    prompt_tokens: int  # counted prompt length, chat template included when known


class FullContextState(FullContextOutput, total=False):
    document: str  # input only; cleared once the prompt is built


def full_context_prompt(question: str, document: str, style: FinalPromptStyle = "boxed") -> str:
    """The one user message of the full-context baseline (literal substitution).

    >>> print(full_context_prompt("Who?", "{prompt} </document> Ann.").splitlines()[-4])
    {prompt} </document> Ann.
    """
    if style not in FULL_CONTEXT_TEMPLATES:
        raise ValueError(f"final_prompt style must be one of {sorted(FULL_CONTEXT_TEMPLATES)}, got {style!r}")
    return fill_template(FULL_CONTEXT_TEMPLATES[style], prompt=question, chunk=document)


def chat_template_tokens(codec: TokenCodec, probe: str = "x") -> int:
    """Tokens the chat template adds around one user message (0 when the codec has none).

    Measured with the tokenizer's own chat template (as local backends and vLLM apply
    it, generation prompt included). A tiktoken codec has no template: leave room for
    the server's few framing tokens in ``max_input_tokens`` yourself.
    """
    tokenizer = codec.tokenizer if isinstance(codec, HFTokenCodec) else None
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return 0
    framed = tokenizer.apply_chat_template(
        [{"role": "user", "content": probe}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    return len(framed) - len(encode_long(probe, codec))


@dataclass(frozen=True)
class FittedPrompt:
    """A full-context prompt that fits the budget, and what fitting it cost."""

    prompt: str
    prompt_tokens: int
    document_tokens: int
    dropped_tokens: int

    @property
    def truncated(self) -> bool:
        return self.dropped_tokens > 0


def fit_full_context_prompt(
    question: str,
    document: str,
    *,
    codec: TokenCodec,
    max_input_tokens: int,
    truncation: TruncationMode = "center",
    style: FinalPromptStyle = "boxed",
    chat_tokens: int = 0,
) -> FittedPrompt:
    """Build the prompt; center-truncate the document's tokens if it exceeds ``max_input_tokens``.

    Prompt length is counted on the final text (template + question + document, plus
    ``chat_tokens`` of chat framing), so boundary merges cannot push it over. Keeps the
    first ``ceil(keep / 2)`` and the last ``floor(keep / 2)`` document tokens, shrinking
    ``keep`` until the prompt fits.

    >>> import tiktoken
    >>> from langgraph_memagent.agents.tokenizers import TiktokenCodec
    >>> codec = TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}))
    >>> fitted = fit_full_context_prompt("Q?", "a" * 500 + "b" * 500, codec=codec, max_input_tokens=400)
    >>> fitted.prompt_tokens <= 400, fitted.dropped_tokens, "ab" in fitted.prompt
    (True, 794, True)
    """
    if truncation not in ("center", "error"):
        raise ValueError(f"truncation must be 'center' or 'error', got {truncation!r}")

    def count(prompt: str) -> int:
        return len(encode_long(prompt, codec)) + chat_tokens

    document_ids = encode_long(document, codec)
    prompt = full_context_prompt(question, document, style)
    prompt_tokens = count(prompt)
    if prompt_tokens <= max_input_tokens:
        return FittedPrompt(prompt, prompt_tokens, len(document_ids), 0)
    fixed_tokens = count(full_context_prompt(question, "", style))
    if truncation == "error":
        raise ContextOverflowError(
            f"the prompt has {prompt_tokens} tokens (document {len(document_ids)}), more than "
            f"max_input_tokens={max_input_tokens}; pass truncation='center' to keep the document's first and last "
            f"{max(0, max_input_tokens - fixed_tokens)} tokens, or use a model with a longer window"
        )
    if fixed_tokens > max_input_tokens:
        raise ContextOverflowError(
            f"the prompt without any document already has {fixed_tokens} tokens, more than "
            f"max_input_tokens={max_input_tokens}: shorten the question or raise max_input_tokens"
        )
    keep = min(max_input_tokens - fixed_tokens, len(document_ids))
    while True:
        head, tail = keep - keep // 2, keep // 2
        kept_ids = document_ids[:head] + (document_ids[-tail:] if tail else [])
        prompt = full_context_prompt(question, codec.decode_batch([kept_ids])[0], style)
        prompt_tokens = count(prompt)
        if prompt_tokens <= max_input_tokens or keep == 0:
            break
        # Re-encoding the joined text can merge or split tokens at the seams: shrink by the overshoot.
        keep = max(0, keep - (prompt_tokens - max_input_tokens))
    return FittedPrompt(prompt, prompt_tokens, len(document_ids), len(document_ids) - keep)


def answer_update(reply: BaseMessage, style: FinalPromptStyle) -> dict[str, Any]:
    """The output keys every single-call baseline derives from its reply."""
    return {
        "response": reply.text,
        "answer": extract_answer(reply.text, style),
        "usage": add_usage(NO_USAGE, reply),
    }


class _FullContextSteps:
    def __init__(
        self,
        model: BaseChatModel,
        codec: TokenCodec,
        *,
        max_input_tokens: int,
        answer_tokens: int,
        truncation: TruncationMode,
        final_prompt: FinalPromptStyle,
    ):
        self.model = model
        self.answer_model = model.bind(max_tokens=answer_tokens)
        self.codec = codec
        self.max_input_tokens = max_input_tokens
        self.truncation = truncation
        self.final_prompt = final_prompt
        self.chat_tokens = chat_template_tokens(codec)

    def _fit(self, state: FullContextState) -> FittedPrompt:
        question, document = validated_inputs(state)
        return fit_full_context_prompt(
            question,
            document,
            codec=self.codec,
            max_input_tokens=self.max_input_tokens,
            truncation=self.truncation,
            style=self.final_prompt,
            chat_tokens=self.chat_tokens,
        )

    def _update(self, fitted: FittedPrompt, reply: BaseMessage) -> dict[str, Any]:
        return {
            "document": "",
            "memory": "",
            "truncated": fitted.truncated,
            "dropped_tokens": fitted.dropped_tokens,
            "document_tokens": fitted.document_tokens,
            "prompt_tokens": fitted.prompt_tokens,
            **answer_update(reply, self.final_prompt),
        }

    def answer(self, state: FullContextState) -> dict[str, Any]:
        fitted = self._fit(state)
        return self._update(fitted, call_model(self.answer_model, [HumanMessage(fitted.prompt)], "full-context answer", self.model))

    async def aanswer(self, state: FullContextState) -> dict[str, Any]:
        # Tokenizing a long document is CPU work: keep it off the event loop.
        fitted = await asyncio.to_thread(self._fit, state)
        reply = await acall_model(self.answer_model, [HumanMessage(fitted.prompt)], "full-context answer", self.model)
        return self._update(fitted, reply)


def _prompt_budget(model: BaseChatModel, max_input_tokens: int | None, answer_tokens: int) -> int:
    """The given budget checked against the model's window less the answer, or that room; a server (window unknown) must say."""
    window = context_window(model)
    if window is None and max_input_tokens is None:
        raise ValueError(
            f"max_input_tokens is required for {type(model).__name__}: its context window is unknown (local models "
            "read it from their config.json). Pass build_full_context_graph(model, max_input_tokens=<context window - "
            "answer_tokens>), e.g. max_input_tokens=7168 for an 8K window with answer_tokens=1024"
        )
    return prompt_budget(window, max_input_tokens, answer_tokens, name="max_input_tokens", generation="answer")


def build_full_context_graph(
    model: BaseChatModel,
    *,
    max_input_tokens: int | None = None,
    answer_tokens: int = 1024,
    tokenizer: Any = None,
    truncation: TruncationMode = "center",
    final_prompt: FinalPromptStyle = "boxed",
    name: str = "full_context",
) -> CompiledStateGraph:
    """Build the full-context baseline (whole document, one call) as a compiled LangGraph graph.

    Args:
        model: any LangChain chat model (``load_chat_model("smollm2-135m")``, a
            ``ChatOpenAI`` pointed at ``vllm serve``, ...).
        max_input_tokens: prompt budget in tokens. Default for a ``LocalChatModel``:
            its window (``max_position_embeddings``) minus ``answer_tokens``, 7168 for
            SmolLM2-135M; required for every other model.
        answer_tokens: generation limit of the answer (MemAgent paper: 1024).
        tokenizer: tokenizer that counts and truncates; defaults to the model's own
            (local backends). See :func:`~langgraph_memagent.agents.tokenizers.resolve_tokenizer`.
        truncation: ``"center"`` keeps the document's first and last tokens (the paper's
            baselines); ``"error"`` raises :class:`ContextOverflowError` instead.
        final_prompt: ``"boxed"`` (paper) or ``"answer_is"``, as in MemAgent.
        name: graph name.

    Returns:
        A compiled graph. Input ``{"question", "document"}``; output ``answer``,
        ``response``, ``usage``, ``memory`` (always ``""``), ``truncated``,
        ``dropped_tokens``, ``document_tokens`` and ``prompt_tokens``.

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> graph = build_full_context_graph(load_chat_model("smollm2-135m"))   # doctest: +SKIP
        >>> result = graph.invoke({"question": "What is the magic number?",      # doctest: +SKIP
        ...                        "document": open("haystack.txt").read()})
        >>> result["truncated"], result["dropped_tokens"]                        # doctest: +SKIP
        (True, 8834)
    """
    answer_tokens = positive_int("answer_tokens", answer_tokens, unit="number of tokens")
    if truncation not in ("center", "error"):
        raise ValueError(f"truncation must be 'center' or 'error', got {truncation!r}")
    if final_prompt not in FULL_CONTEXT_TEMPLATES:
        raise ValueError(f"final_prompt must be 'boxed' or 'answer_is', got {final_prompt!r}")
    max_input_tokens = _prompt_budget(model, max_input_tokens, answer_tokens)
    steps = _FullContextSteps(
        model,
        resolve_tokenizer(tokenizer, model),
        max_input_tokens=max_input_tokens,
        answer_tokens=answer_tokens,
        truncation=truncation,
        final_prompt=final_prompt,
    )
    builder = StateGraph(FullContextState, input_schema=QuestionInput, output_schema=FullContextOutput)
    builder.add_node("answer", node(steps.answer, steps.aanswer))
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return RecursionSizedGraph.from_compiled(builder.compile(name=name))
