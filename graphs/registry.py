"""The one registry of graphs: each graph's builder, its options and its input mapping.

Everything that builds a graph by name reads this module: ``memagent run`` and
``memagent compare`` (whose graph flags are made from :class:`GraphOptions`' fields), the
comparison harness, the trainer's rollouts and the graphs ``langgraph dev`` serves. Adding a
graph is its own module, one :func:`register_graph` line and its tests.

>>> sorted(GRAPHS)
['agemem', 'full_context', 'langmem', 'memagent', 'rag', 'sumer']
>>> build_graph("memagent", load_chat_model("vllm:m", base_url="http://127.0.0.1:8000/v1"),
...             GraphOptions(chunk_tokens=2000), "tiktoken:gpt2").memagent_config.chunk_tokens  # doctest: +SKIP
2000
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping, get_args

from langchain_core.language_models import BaseChatModel

from ..agents.loading import EMBEDDED_MODELS
from ..agents.prompts import FinalPromptStyle
from ..baselines.agemem import build_agemem_qa_graph
from ..baselines.agemem.tools import ANSWER_MODES, RETRIEVE_REPLIES, WRITE_MODES
from ..baselines.full_context import build_full_context_graph
from ..baselines.langmem_graph import build_langmem_graph
from ..baselines.rag import build_rag_graph
from ..baselines.sumer import AnswerRule, ForcedAnswerCall, QueryStyle, SearchReply, ToolChoice, build_sumer_graph
from .memagent import build_memagent_graph


@dataclass(frozen=True)
class GraphOptions:
    """Builder options of every registered graph; each builder reads the ones it needs."""

    chunk_tokens: int = field(default=5000, metadata={"help": "MemAgent: document tokens per memory update (MemAgent paper: 5000)."})
    memory_tokens: int = field(default=1024, metadata={"help": "MemAgent: memory size limit in tokens (MemAgent paper: 1024)."})
    answer_tokens: int = field(default=1024, metadata={"help": "Every graph: answer length limit in tokens (MemAgent paper: 1024)."})
    final_prompt: str = field(
        default="boxed", metadata={"help": "Final answer format: 'boxed' (MemAgent paper) or 'answer_is'.", "choices": get_args(FinalPromptStyle)}
    )
    max_input_tokens: int | None = field(
        default=None,
        metadata={"help": "Full context: prompt budget before center truncation; SUMER and AgeMem: context budget "
                  "(default: from the model's window)."},
    )
    rag_chunk_tokens: int = field(default=500, metadata={"help": "RAG: tokens per retrieved chunk (SUMER paper's RAG baseline: 500)."})
    rag_top_k: int = field(default=1, metadata={"help": "RAG: chunks retrieved per question (SUMER paper's RAG baseline: 1)."})
    max_turns: int | None = field(
        default=None, metadata={"help": "SUMER: assistant turns per episode (SUMER paper: 20); AgeMem: turns per stage (default 32)."}
    )
    turn_tokens: int | None = field(
        default=None, metadata={"help": "SUMER and AgeMem: generation limit of one tool-calling turn (default: SUMER 1024, AgeMem 256)."}
    )
    memory_item_tokens: int | None = field(
        default=None, metadata={"help": "SUMER, AgeMem and LangMem: tokens per stored document piece (default: SUMER 200, AgeMem and LangMem 512)."}
    )
    search_context: int | None = field(
        default=None, metadata={"help": "SUMER: messages shown before and after each search hit (SUMER paper: 2)."}
    )
    max_parallel_calls: int = field(default=5, metadata={"help": "SUMER: tool calls run per turn (SUMER paper: 5)."})
    search_reply: str = field(
        default="echo",
        metadata={"help": "SUMER: a search reply's first line: 'echo' names the mode and the query (ours; the paper does not say), "
                  "'plain' the number of matches alone (a small policy copies an echoed query into its answer).",
                  "choices": get_args(SearchReply)},
    )
    query_style: str = field(
        default="free",
        metadata={"help": "SUMER: what the prompts ask a query to be: 'free' (SUMER paper) or 'question' (ours: the question's own "
                  "words; a small policy left free queries with a guessed answer or the tool's name).",
                  "choices": get_args(QueryStyle)},
    )
    tool_choice: str = field(
        default="auto",
        metadata={"help": "SUMER: 'auto' (SUMER paper: a turn without a call ends the episode) or 'required' (every turn calls a tool); "
                  "AgeMem: the same for the first turn after each message.",
                  "choices": get_args(ToolChoice)},
    )
    forced_answer_call: str = field(
        default="text",
        metadata={"help": "SUMER: how the call at the turn cap asks for the answer: 'text' (a boxed reply) or 'submit' "
                  "(a required submit_answer call, whose argument is the answer).",
                  "choices": get_args(ForcedAnswerCall)},
    )
    answer_rule: str = field(
        default="none",
        metadata={"help": "SUMER: a rule the forced answer's prompt adds: 'none' or 'yes-no' (ours: answer a yes/no question Yes or No; "
                  "untrained, the 135M policy said 'no' in 9 of 136 sampled answers to 'no' questions, 25 with it).",
                  "choices": get_args(AnswerRule)},
    )
    agemem_turns_per_message: int = field(
        default=2, metadata={"help": "AgeMem: assistant turns after each arriving message (graph default 2; the paper sets none)."}
    )
    agemem_distractor_messages: int = field(default=2, metadata={"help": "AgeMem: stage-2 distractor messages of essay prose (graph default 2)."})
    agemem_write_mode: str = field(
        default="free",
        metadata={"help": "AgeMem: 'free' (AgeMem paper: the model writes what it stores) or 'line' (ours, for small models: stage 1's "
                  "first turn after each message is a forced add_memory of one of that message's lines, verbatim).",
                  "choices": WRITE_MODES},
    )
    agemem_answer_mode: str = field(
        default="free",
        metadata={"help": "AgeMem: 'free' (AgeMem paper: the model decides how to answer), 'retrieve' (ours, for small models: "
                  "stage 3's first turn after the question is a forced retrieve_memory call whose query the model writes), "
                  "'retrieve-submit' (ours: that call, then the answer as a forced submit_answer call, SUMER's short-answer tool) or "
                  "'retrieve-extract' (ours: as 'retrieve-submit', the answer a span of the retrieval's reply, or yes or no).",
                  "choices": ANSWER_MODES},
    )
    agemem_retrieve_reply: str = field(
        default="scored",
        metadata={"help": "AgeMem: what retrieve_memory returns: 'scored' (up to the call's k items, each with its id and score) or "
                  "'best' (ours, for small models: the best item's text alone).",
                  "choices": RETRIEVE_REPLIES},
    )
    embeddings_model: str | None = field(
        default=None,
        metadata={"help": "SUMER, AgeMem and LangMem: sentence-transformers directory for memory search (default: embedded MiniLM)."},
    )


def graph_option(name: str) -> Any:
    """A dataclass field with :class:`GraphOptions`' default and help for ``name``, so another
    config (the trainer's) declares the same option from the same place.

    >>> graph_option("memory_tokens").metadata["help"]
    'MemAgent: memory size limit in tokens (MemAgent paper: 1024).'
    """
    option = GraphOptions.__dataclass_fields__[name]
    return field(default=option.default, metadata=dict(option.metadata))


# The demo's budget for the embedded model's 8K window: small chunks keep each CPU call short and
# a 128-token memory is plenty for a needle; the answer needs only a few tokens. Left to choose,
# the embedded model answered SUMER in text in 16 of 16 LoCoMo questions and AgeMem never stored a
# memory: their turns must call a tool.
EMBEDDED_GRAPH_DEFAULTS: Mapping[str, Any] = {
    "chunk_tokens": 1000, "memory_tokens": 128, "answer_tokens": 64, "max_turns": 6, "turn_tokens": 128, "tool_choice": "required",
}


def default_graph_options(model: str) -> GraphOptions:
    """The demo's budget for the embedded model (8K window, CPU), the papers' otherwise.

    >>> default_graph_options("smollm2-135m").chunk_tokens, default_graph_options("vllm:Qwen/Qwen2.5-14B").chunk_tokens
    (1000, 5000)
    """
    return GraphOptions(**EMBEDDED_GRAPH_DEFAULTS) if model in EMBEDDED_MODELS else GraphOptions()


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

    builder: GraphBuilder  # builder(model, options, tokenizer, **graph_kwargs)
    graph_input: Callable[[Any], dict[str, Any]] = question_input  # sample or dataset row -> graph input
    # Trainer options (MultiConvGRPOConfig fields) this graph's paper sets; others take MemAgent's.
    training_defaults: Mapping[str, PaperDefault] = field(default_factory=dict)


GRAPHS: dict[str, RegisteredGraph] = {}


def register_graph(
    name: str,
    builder: GraphBuilder,
    graph_input: Callable[[Any], dict[str, Any]] = question_input,
    training_defaults: Mapping[str, PaperDefault] | None = None,
) -> None:
    """Make ``name`` a graph of ``memagent compare --graphs``, the trainer's ``--graph`` and the registry.

    The graph must take ``{"question", "document"}`` and return ``answer``, ``response``
    and ``usage``, like :func:`~langgraph_memagent.build_memagent_graph`.

    >>> from dataclasses import replace
    >>> register_graph("memagent_small", lambda model, options, tokenizer, **kw: GRAPHS["memagent"].builder(
    ...     model, replace(options, chunk_tokens=500), tokenizer, **kw))
    >>> "memagent_small" in GRAPHS
    True
    >>> del GRAPHS["memagent_small"]
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"graph name {name!r} must be letters, digits, '_', '.' or '-' (it is a CSV column and a file name part)")
    GRAPHS[name] = RegisteredGraph(builder, graph_input, dict(training_defaults or {}))


def build_graph(graph: str, model: BaseChatModel, options: GraphOptions, tokenizer: Any = None, /, **graph_kwargs: Any) -> Any:
    """The registered graph ``graph`` built for ``model`` with ``options`` (``graph_kwargs``: ``checkpointer``, ``store``, ``name``)."""
    if graph not in GRAPHS:
        raise ValueError(f"unknown graph {graph!r}; known graphs: {', '.join(GRAPHS)}")
    return GRAPHS[graph].builder(model, options, tokenizer, **graph_kwargs)


def _embeddings(options: GraphOptions) -> Any:
    """The memory search's embeddings (``None``: the baselines' embedded default)."""
    if options.embeddings_model is None:
        return None
    from ..baselines.embeddings import load_embeddings

    return load_embeddings(options.embeddings_model)


def _given(**values: Any) -> dict[str, Any]:
    """The options that are set; unset ones keep the builder's own (paper) default."""
    return {name: value for name, value in values.items() if value is not None}


def _memagent(model: BaseChatModel, options: GraphOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_memagent_graph(
        model, chunk_tokens=options.chunk_tokens, memory_tokens=options.memory_tokens, answer_tokens=options.answer_tokens,
        tokenizer=tokenizer, final_prompt=options.final_prompt, **graph_kwargs,
    )


def _full_context(model: BaseChatModel, options: GraphOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_full_context_graph(
        model, max_input_tokens=options.max_input_tokens, answer_tokens=options.answer_tokens, tokenizer=tokenizer,
        final_prompt=options.final_prompt, **graph_kwargs,
    )


def _rag(model: BaseChatModel, options: GraphOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_rag_graph(
        model, chunk_tokens=options.rag_chunk_tokens, top_k=options.rag_top_k, answer_tokens=options.answer_tokens,
        tokenizer=tokenizer, final_prompt=options.final_prompt, **graph_kwargs,
    )


def _sumer(model: BaseChatModel, options: GraphOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_sumer_graph(
        model, embeddings=_embeddings(options), max_parallel_calls=options.max_parallel_calls, answer_tokens=options.answer_tokens,
        tokenizer=tokenizer, final_prompt=options.final_prompt, tool_choice=options.tool_choice,
        forced_answer_call=options.forced_answer_call, search_reply=options.search_reply, query_style=options.query_style,
        answer_rule=options.answer_rule, **_given(max_turns=options.max_turns, turn_tokens=options.turn_tokens, max_context_tokens=options.max_input_tokens,
                 chunk_tokens=options.memory_item_tokens, search_context=options.search_context),
        **graph_kwargs,
    )


def _agemem(model: BaseChatModel, options: GraphOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    return build_agemem_qa_graph(
        model, embeddings=_embeddings(options), tokenizer=tokenizer, distractor_messages=options.agemem_distractor_messages,
        max_turns_per_message=options.agemem_turns_per_message, first_turn_tool_choice=options.tool_choice,
        write_mode=options.agemem_write_mode, answer_mode=options.agemem_answer_mode,
        retrieve_reply=options.agemem_retrieve_reply,
        **_given(max_stage_turns=options.max_turns, turn_tokens=options.turn_tokens, max_context_tokens=options.max_input_tokens,
                 chunk_tokens=options.memory_item_tokens),
        **graph_kwargs,
    )


def _langmem(model: BaseChatModel, options: GraphOptions, tokenizer: Any, **graph_kwargs: Any) -> Any:
    if graph_kwargs.get("store") is None:
        graph_kwargs["embeddings"] = _embeddings(options)
    return build_langmem_graph(
        model, tokenizer=tokenizer, answer_tokens=options.answer_tokens, final_prompt=options.final_prompt,
        **_given(chunk_tokens=options.memory_item_tokens), **graph_kwargs,
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
register_graph("memagent", _memagent, document_input, {
    "chunk_tokens": PaperDefault(5000, f"{_MEMAGENT}: 5000-token chunks"),
    "reward_metric": PaperDefault("strict_boxed", f"{_MEMAGENT}: its strict training verifier"),
    "num_generations": PaperDefault(16, f"{_MEMAGENT}: G = 16"),
    "beta": PaperDefault(1e-3, f"{_MEMAGENT}: KL coefficient 1e-3"),
    "epsilon_high": PaperDefault(0.2, "MemAgent's released scripts: clip 0.2 on both sides"),
    "scale_rewards": PaperDefault("none", f"{_MEMAGENT}: A = R - group mean, no std division (Dr. GRPO)"),
})
register_graph("full_context", _full_context)
register_graph("rag", _rag)
register_graph("sumer", _sumer, training_defaults={
    "chunk_tokens": PaperDefault(200, "ours: a document piece per memory item (SUMER stores one message per item)"),
    "turn_tokens": PaperDefault(1024, "ours: the SUMER graph's turn limit"),
    "num_generations": PaperDefault(8, f"{_SUMER}: G = 8"),
    "beta": PaperDefault(0.0, f"{_SUMER}: no KL term"),
    "epsilon_high": PaperDefault(0.28, f"{_SUMER}: clip-high 0.28"),
    "scale_rewards": PaperDefault("group", f"{_SUMER}: GRPO advantage normalised by the group's standard deviation"),
})  # SUMER's temperature 1.0 and learning rate 1e-6 are everyone's defaults already
register_graph("agemem", _agemem, training_defaults={
    "chunk_tokens": PaperDefault(512, "ours: the AgeMem graph's stage-1 message size"),
    "turn_tokens": PaperDefault(256, "ours: the AgeMem graph's turn limit"),
    "reward_metric": PaperDefault("f1", "ours: token F1 stands in for AgeMem's LLM judge of the task reward"),
    "scale_rewards": PaperDefault("group", "AgeMem paper (arXiv 2601.01885): step-wise GRPO, group-normalised advantage"),
})
register_graph("langmem", _langmem)


def option_flags() -> list[tuple[str, dict[str, Any]]]:
    """``(--flag, argparse keywords)`` for every :class:`GraphOptions` field, from its type and help.

    >>> option_flags()[0]
    ('--chunk-tokens', {'type': <class 'int'>, 'help': 'MemAgent: document tokens per memory update (MemAgent paper: 5000).'})
    """
    flags = []
    for option in fields(GraphOptions):
        keywords: dict[str, Any] = {"help": option.metadata["help"]}
        if "choices" in option.metadata:
            keywords = {"choices": option.metadata["choices"], **keywords}
        else:
            keywords = {"type": str if "str" in str(option.type) else int, **keywords}
        flags.append((f"--{option.name.replace('_', '-')}", keywords))
    return flags


__all__ = [
    "EMBEDDED_GRAPH_DEFAULTS",
    "GRAPHS",
    "GraphBuilder",
    "GraphOptions",
    "RegisteredGraph",
    "build_graph",
    "default_graph_options",
    "graph_option",
    "option_flags",
    "question_input",
    "register_graph",
]
