"""The one registry of graphs: each graph's builder, its options and its input mapping.

Everything that builds a graph by name reads this module: ``memagent run`` and
``memagent compare`` (whose graph flags are made from each graph's options class, :mod:`.options`), the
comparison harness, the trainer's rollouts and the graphs ``langgraph dev`` serves. Adding a
graph is its own module, one :func:`register_graph` line and its tests.

>>> sorted(GRAPHS)
['agemem', 'full_context', 'infmem', 'langmem', 'memagent', 'rag', 'sumer']
>>> build_graph("memagent", load_chat_model("vllm:m", base_url="http://127.0.0.1:8000/v1"),
...             GraphOptions(chunk_tokens=2000), "tiktoken:gpt2").memagent_config.chunk_tokens  # doctest: +SKIP
2000
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping

from langchain_core.language_models import BaseChatModel

from ..baselines.agemem import build_agemem_qa_graph
from ..baselines.full_context import build_full_context_graph
from ..baselines.langmem_graph import build_langmem_graph
from ..baselines.rag import build_rag_graph
from ..baselines.sumer import build_sumer_graph
from .infmem import build_infmem_graph
from .memagent import build_memagent_graph
from .options import (
    AgeMemOptions,
    FullContextOptions,
    GraphOptions,
    InfMemOptions,
    LangMemOptions,
    MemAgentOptions,
    RAGOptions,
    SumerOptions,
    default_graph_options,
    options_for,
)


GraphBuilder = Callable[..., Any]
"""``builder(model, options, tokenizer, **graph_kwargs)`` -> a compiled graph taking ``{"question", "document"}``;
``graph_kwargs`` (``checkpointer``, ``store``, ``name``) go to the graph's own ``build_*_graph``."""


def question_input(sample: Any) -> dict[str, Any]:
    """A graph's input from a :class:`~langgraph_memagent.evals.records.Sample` or a dataset row:
    question and document, plus a conversation's raw turns (LoCoMo) for graphs that store messages.

    >>> question_input({"question": "q?", "document": "Ann: hi", "turns": [{"speaker": "Ann", "text": "hi", "img": None}]})
    {'question': 'q?', 'document': 'Ann: hi', 'turns': [{'speaker': 'Ann', 'text': 'hi'}]}
    """
    row = sample if isinstance(sample, Mapping) else {"question": sample.question, "document": sample.document, "meta": sample.meta}
    inputs = {"question": row["question"], "document": row["document"]}
    turns = row.get("turns") or (row.get("meta") or {}).get("turns")
    if turns:
        if not isinstance(turns, list) or not all(isinstance(turn, Mapping) for turn in turns):
            raise ValueError(f"field 'turns' must be a list of message dicts (LoCoMo turns), got {turns!r:.80}")
        # A datasets.Dataset gives every turn every key seen in any turn, None where absent.
        inputs["turns"] = [{key: value for key, value in turn.items() if value is not None} for turn in turns]
    return inputs


@dataclass(frozen=True)
class PaperDefault:
    """A training setting's default for one graph, and where it comes from."""

    value: Any  # what the trainer uses when the option is not given
    source: str  # the paper (or "ours") the value is taken from


@dataclass(frozen=True)
class RegisteredGraph:
    """One graph of the registry."""

    builder: GraphBuilder  # builder(model, options, tokenizer, **graph_kwargs), options an instance of `options`
    graph_input: Callable[[Any], dict[str, Any]] = question_input  # sample or dataset row -> graph input
    # Trainer options (MultiConvGRPOConfig fields) this graph's paper sets; others take MemAgent's.
    training_defaults: Mapping[str, PaperDefault] = field(default_factory=dict)
    options: type | None = None  # the graph's options dataclass (graphs.options); None: it takes every graph's, GraphOptions


GRAPHS: dict[str, RegisteredGraph] = {}


def register_graph(
    name: str,
    builder: GraphBuilder,
    graph_input: Callable[[Any], dict[str, Any]] = question_input,
    training_defaults: Mapping[str, PaperDefault] | None = None,
    options: type | None = None,
) -> None:
    """Make ``name`` a graph of ``memagent compare --graphs``, the trainer's ``--graph`` and the registry.

    The graph must take ``{"question", "document"}`` and return ``answer``, ``response``
    and ``usage``, like :func:`~langgraph_memagent.build_memagent_graph`. ``builder`` gets an
    instance of ``options``, a frozen dataclass such as :class:`~.options.MemAgentOptions` whose
    fields ``compare`` fills from the flags of the same names, or, without ``options``, the whole
    :class:`~.options.GraphOptions`.

    >>> from dataclasses import replace
    >>> register_graph("memagent_small", lambda model, options, tokenizer, **kw: GRAPHS["memagent"].builder(
    ...     model, replace(options, chunk_tokens=500), tokenizer, **kw), options=MemAgentOptions)
    >>> "memagent_small" in GRAPHS
    True
    >>> del GRAPHS["memagent_small"]
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"graph name {name!r} must be letters, digits, '_', '.' or '-' (it is a CSV column and a file name part)")
    GRAPHS[name] = RegisteredGraph(builder, graph_input, dict(training_defaults or {}), options)


def graphs_reading(option: str) -> list[str]:
    """The registered graphs whose options class declares ``option`` (a graph without one reads every option).

    >>> graphs_reading("prethink_tokens")
    ['infmem']
    """
    return [name for name, entry in GRAPHS.items() if entry.options is None or option in {f.name for f in fields(entry.options)}]


def build_graph(graph: str, model: BaseChatModel, options: Any = None, tokenizer: Any = None, /, **graph_kwargs: Any) -> Any:
    """The registered graph ``graph`` built for ``model`` with ``options`` (its own options class, a
    :class:`~.options.GraphOptions` or ``None`` for its defaults; ``graph_kwargs``: ``checkpointer``, ``store``, ``name``).

    >>> build_graph("rag", load_chat_model("smollm2-135m"), RAGOptions(rag_top_k=2))  # doctest: +SKIP
    """
    if graph not in GRAPHS:
        raise ValueError(f"unknown graph {graph!r}; known graphs: {', '.join(GRAPHS)}")
    spec = GRAPHS[graph]
    return spec.builder(model, options_for(graph, options, spec.options), tokenizer, **graph_kwargs)


def _embeddings(options: Any) -> Any:
    """The memory search's embeddings (``None``: the baselines' embedded default)."""
    if options.embeddings_model is None:
        return None
    from ..baselines.embeddings import load_embeddings

    return load_embeddings(options.embeddings_model)


def _memagent(model: BaseChatModel, options: MemAgentOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_memagent_graph(
        model, chunk_tokens=options.chunk_tokens, memory_tokens=options.memory_tokens, answer_tokens=options.answer_tokens,
        tokenizer=tokenizer, final_prompt=options.final_prompt, **graph_kwargs,
    )


def _infmem(model: BaseChatModel, options: InfMemOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_infmem_graph(
        model, chunk_tokens=options.chunk_tokens, memory_tokens=options.memory_tokens, answer_tokens=options.answer_tokens,
        prethink_tokens=options.prethink_tokens, unit_tokens=options.infmem_unit_tokens, max_top_k=options.infmem_top_k,
        early_stop_after=options.infmem_early_stop, embeddings=_embeddings(options), tokenizer=tokenizer,
        final_prompt=options.final_prompt, **graph_kwargs,
    )


def _full_context(model: BaseChatModel, options: FullContextOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_full_context_graph(
        model, max_input_tokens=options.max_input_tokens, answer_tokens=options.answer_tokens, tokenizer=tokenizer,
        final_prompt=options.final_prompt, **graph_kwargs,
    )


def _rag(model: BaseChatModel, options: RAGOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_rag_graph(
        model, chunk_tokens=options.rag_chunk_tokens, top_k=options.rag_top_k, answer_tokens=options.answer_tokens,
        tokenizer=tokenizer, final_prompt=options.final_prompt, **graph_kwargs,
    )


def _sumer(model: BaseChatModel, options: SumerOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_sumer_graph(
        model, embeddings=_embeddings(options), max_parallel_calls=options.max_parallel_calls, answer_tokens=options.answer_tokens,
        tokenizer=tokenizer, final_prompt=options.final_prompt, tool_choice=options.tool_choice,
        forced_answer_call=options.forced_answer_call, search_reply=options.search_reply, query_style=options.query_style,
        answer_rule=options.answer_rule, max_turns=options.max_turns, turn_tokens=options.turn_tokens,
        max_context_tokens=options.max_input_tokens, chunk_tokens=options.memory_item_tokens, search_context=options.search_context,
        **graph_kwargs,
    )


def _agemem(model: BaseChatModel, options: AgeMemOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_agemem_qa_graph(
        model, embeddings=_embeddings(options), tokenizer=tokenizer, distractor_messages=options.agemem_distractor_messages,
        max_turns_per_message=options.agemem_turns_per_message, first_turn_tool_choice=options.tool_choice,
        write_mode=options.agemem_write_mode, answer_mode=options.agemem_answer_mode,
        retrieve_reply=options.agemem_retrieve_reply, max_stage_turns=options.max_turns, turn_tokens=options.turn_tokens,
        max_context_tokens=options.max_input_tokens, chunk_tokens=options.memory_item_tokens,
        **graph_kwargs,
    )


def _langmem(model: BaseChatModel, options: LangMemOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    if graph_kwargs.get("store") is None:
        graph_kwargs["embeddings"] = _embeddings(options)
    return build_langmem_graph(
        model, tokenizer=tokenizer, answer_tokens=options.answer_tokens, final_prompt=options.final_prompt,
        chunk_tokens=options.memory_item_tokens, **graph_kwargs,
    )


def document_input(sample: Any) -> dict[str, Any]:
    """Question and document only, for graphs that read the document as text (MemAgent).

    >>> document_input({"question": "q?", "document": "text", "turns": [{"text": "hi"}]})
    {'question': 'q?', 'document': 'text'}
    """
    inputs = question_input(sample)
    inputs.pop("turns", None)
    return inputs


_MEMAGENT = "MemAgent paper (arXiv 2507.02259)"
_SUMER = "SUMER paper"
register_graph("memagent", _memagent, document_input, options=MemAgentOptions, training_defaults={
    "chunk_tokens": PaperDefault(5000, f"{_MEMAGENT}: 5000-token chunks"),
    "reward_metric": PaperDefault("strict_boxed", f"{_MEMAGENT}: its strict training verifier"),
    "num_generations": PaperDefault(16, f"{_MEMAGENT}: G = 16"),
    "beta": PaperDefault(1e-3, f"{_MEMAGENT}: KL coefficient 1e-3"),
    "epsilon_high": PaperDefault(0.2, "MemAgent's released scripts: clip 0.2 on both sides"),
    "scale_rewards": PaperDefault("none", f"{_MEMAGENT}: A = R - group mean, no std division (Dr. GRPO)"),
    "loss_aggregation": PaperDefault("token", f"{_MEMAGENT}: token-level mean over group x conversation x token"),
})
register_graph("full_context", _full_context, options=FullContextOptions)
register_graph("rag", _rag, options=RAGOptions)
register_graph("sumer", _sumer, options=SumerOptions, training_defaults={
    "max_turns": PaperDefault(20, f"{_SUMER}: 20 assistant turns per episode"),
    "chunk_tokens": PaperDefault(200, "ours: a document piece per memory item (SUMER stores one message per item)"),
    "turn_tokens": PaperDefault(1024, "ours: the SUMER graph's turn limit"),
    "num_generations": PaperDefault(8, f"{_SUMER}: G = 8"),
    "beta": PaperDefault(0.0, f"{_SUMER}: no KL term"),
    "epsilon_high": PaperDefault(0.28, f"{_SUMER}: clip-high 0.28"),
    "scale_rewards": PaperDefault("group", f"{_SUMER}: GRPO advantage normalised by the group's standard deviation"),
    "loss_aggregation": PaperDefault("rollout_sum", f"{_SUMER}: each trajectory's token sum, averaged over the group"),
})  # SUMER's temperature 1.0 and learning rate 1e-6 are everyone's defaults already
register_graph("agemem", _agemem, options=AgeMemOptions, training_defaults={
    "chunk_tokens": PaperDefault(512, "ours: the AgeMem graph's stage-1 message size"),
    "turn_tokens": PaperDefault(256, "ours: the AgeMem graph's turn limit"),
    "max_turns": PaperDefault(32, "ours: the AgeMem graph's turns per stage"),
    "reward_metric": PaperDefault("f1", "ours: token F1 stands in for AgeMem's LLM judge of the task reward"),
    "scale_rewards": PaperDefault("group", "AgeMem paper (arXiv 2601.01885): step-wise GRPO, group-normalised advantage"),
})
register_graph("langmem", _langmem, options=LangMemOptions)
_INFMEM = "InfMem reference code (UCMP13753/InfMem, recurrent/impls/infmem.py and its RL script)"
register_graph("infmem", _infmem, document_input, options=InfMemOptions, training_defaults={
    "reward_metric": PaperDefault("strict_boxed", f"{_INFMEM}: exact match of the last \\boxed{{}} answer"),
    "num_generations": PaperDefault(4, f"{_INFMEM}: 4 rollouts per question"),
    "beta": PaperDefault(1e-3, f"{_INFMEM}: KL loss 0.001"),
    "epsilon_high": PaperDefault(0.2, f"{_INFMEM}: clip 0.2 on both sides"),
    "scale_rewards": PaperDefault("none", f"{_INFMEM}: A = R - group mean, no std division"),
    "loss_aggregation": PaperDefault("token", f"{_INFMEM}: verl's token-level mean"),
})


__all__ = [
    "GRAPHS",
    "GraphBuilder",
    "GraphOptions",  # from .options, still importable from here
    "PaperDefault",
    "RegisteredGraph",
    "build_graph",
    "graphs_reading",
    "default_graph_options",  # from .options, still importable from here
    "question_input",
    "register_graph",
]
