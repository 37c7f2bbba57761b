"""Each graph's options: one frozen dataclass per graph, each field with one line of help and its paper default.

The naming rule: a field's flag is its name with dashes (``chunk_tokens`` -> ``--chunk-tokens``),
in ``memagent compare`` and ``memagent train`` alike (both also take the underscore spelling).
Graphs that declare the same name share that option, each keeping its own default when it is
not given (``--max-turns``: SUMER 20, AgeMem 32); a graph's own option whose plain name would read
as another graph's carries its graph's name (``rag_top_k``, ``agemem_write_mode``).

:class:`GraphOptions` is every graph's options in one record, made from these classes: it is what
``compare``'s flags fill and its result manifest records; :func:`options_for` gives one graph
its own options from it (an unset shared field, ``None``, takes that graph's default).

>>> options_for("sumer", GraphOptions(max_turns=None)).max_turns, options_for("agemem", GraphOptions()).max_turns
(20, 32)
>>> MemAgentOptions().chunk_tokens, RAGOptions().rag_chunk_tokens
(5000, 500)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, get_args

from ..agents.loading import EMBEDDED_MODELS
from ..agents.prompts import FinalPromptStyle
from ..baselines.agemem.tools import ANSWER_MODES, RETRIEVE_REPLIES, WRITE_MODES
from ..baselines.sumer import AnswerRule, ForcedAnswerCall, QueryStyle, SearchReply, ToolChoice


def option(default: Any, help: str, choices: tuple[str, ...] | None = None) -> Any:
    """A dataclass field with its one line of ``help`` (and ``choices``), which flags and ``--help`` show."""
    return field(default=default, metadata={"help": help, **({"choices": choices} if choices else {})})


@dataclass(frozen=True)
class AnswerOptions:
    """Options every graph reads: the answer's length and format."""

    answer_tokens: int = option(1024, "Answer length limit in tokens (MemAgent paper: 1024).")
    final_prompt: str = option("boxed", "Final answer format: 'boxed' (MemAgent paper) or 'answer_is'.", get_args(FinalPromptStyle))


@dataclass(frozen=True)
class MemAgentOptions(AnswerOptions):
    """MemAgent (arXiv 2507.02259): the chunk it reads and the memory it overwrites after each."""

    chunk_tokens: int = option(5000, "MemAgent: document tokens per memory update (MemAgent paper: 5000).")
    memory_tokens: int = option(1024, "MemAgent: memory size limit in tokens (MemAgent paper: 1024).")


@dataclass(frozen=True)
class InfMemOptions(MemAgentOptions):
    """InfMem (arXiv 2602.02704): MemAgent's loop with a PreThink decision, retrieval over the chunks read, an early stop."""

    prethink_tokens: int = option(1024, "InfMem: generation limit of a PreThink decision (InfMem paper's code: 1024).")
    infmem_unit_tokens: int = option(500, "InfMem: tokens per retrievable passage of the chunks read (InfMem paper's code: 500).")
    infmem_top_k: int = option(4, "InfMem: most passages one retrieval returns (InfMem paper's code at its release: 4).")
    infmem_early_stop: int = option(3, "InfMem: consecutive STOP decisions that end the reading (InfMem paper's code: 3).")
    embeddings_model: str | None = option(None, "Sentence-transformers directory for memory search (default: the embedded MiniLM).")


@dataclass(frozen=True)
class FullContextOptions(AnswerOptions):
    """The whole document in one prompt, center-truncated to fit."""

    max_input_tokens: int | None = option(None, "Full context: prompt budget before center truncation (default: from the model's window).")


@dataclass(frozen=True)
class RAGOptions(AnswerOptions):
    """Top-k retrieval over fixed-size chunks (the SUMER paper's RAG baseline)."""

    rag_chunk_tokens: int = option(500, "RAG: tokens per retrieved chunk (SUMER paper's RAG baseline: 500).")
    rag_top_k: int = option(1, "RAG: chunks retrieved per question (SUMER paper's RAG baseline: 1).")


@dataclass(frozen=True)
class MemoryStoreOptions(AnswerOptions):
    """Options of the graphs that store the document as memory items and search them."""

    memory_item_tokens: int = option(512, "AgeMem and LangMem: tokens per stored document piece (graph default 512).")
    embeddings_model: str | None = option(None, "Sentence-transformers directory for memory search (default: the embedded MiniLM).")


@dataclass(frozen=True)
class ToolTurnOptions(MemoryStoreOptions):
    """Options of the graphs whose model acts in tool-calling turns (SUMER, AgeMem)."""

    max_input_tokens: int | None = option(None, "SUMER and AgeMem: context budget in tokens (default: from the model's window).")
    turn_tokens: int = option(256, "AgeMem: generation limit of one tool-calling turn (graph default 256).")
    max_turns: int = option(32, "AgeMem: assistant turns per stage (graph default 32).")
    tool_choice: str = option(
        "auto", "'auto' (the papers': a turn may answer in text) or 'required' (SUMER: every turn calls a tool; AgeMem: the first "
        "turn after each message).", get_args(ToolChoice),
    )


@dataclass(frozen=True)
class SumerOptions(ToolTurnOptions):
    """SUMER: search over raw memory with tools (see docs/graphs/sumer.md)."""

    memory_item_tokens: int = option(200, "SUMER: tokens per stored document piece (ours: SUMER stores one message per item).")
    turn_tokens: int = option(1024, "SUMER: generation limit of one tool-calling turn (graph default 1024).")
    max_turns: int = option(20, "SUMER: assistant turns per episode (SUMER paper: 20).")
    search_context: int | None = option(None, "SUMER: messages shown before and after each search hit (default: SUMER paper's 2).")
    max_parallel_calls: int = option(5, "SUMER: tool calls run per turn (SUMER paper: 5).")
    search_reply: str = option(
        "echo", "SUMER: a search reply's first line: 'echo' names the mode and the query (ours; the paper does not say), 'plain' the "
        "number of matches alone (a small policy copies an echoed query into its answer).", get_args(SearchReply),
    )
    query_style: str = option(
        "free", "SUMER: what the prompts ask a query to be: 'free' (SUMER paper) or 'question' (ours: the question's own words; a "
        "small policy left free queries with a guessed answer or the tool's name).", get_args(QueryStyle),
    )
    forced_answer_call: str = option(
        "text", "SUMER: how the call at the turn cap asks for the answer: 'text' (graph default: a boxed reply) or 'submit' (ours: a "
        "required submit_answer call, whose argument is the answer).", get_args(ForcedAnswerCall),
    )
    answer_rule: str = option(
        "none", "SUMER: a rule the forced answer's prompt adds: 'none' or 'yes-no' (ours: answer a yes/no question Yes or No; "
        "untrained, the 135M policy said 'no' in 9 of 136 sampled answers to 'no' questions, 25 with it).", get_args(AnswerRule),
    )


@dataclass(frozen=True)
class AgeMemOptions(ToolTurnOptions):
    """AgeMem: memory tools over three stages (see docs/graphs/agemem.md)."""

    agemem_turns_per_message: int = option(2, "AgeMem: assistant turns after each arriving message (graph default 2; the paper sets none).")
    agemem_distractor_messages: int = option(2, "AgeMem: stage-2 distractor messages of essay prose (graph default 2).")
    agemem_write_mode: str = option(
        "free", "AgeMem: 'free' (AgeMem paper: the model writes what it stores) or 'line' (ours, for small models: stage 1's first "
        "turn after each message is a forced add_memory of one of that message's lines, verbatim).", WRITE_MODES,
    )
    agemem_answer_mode: str = option(
        "free", "AgeMem: 'free' (AgeMem paper: the model decides how to answer), 'retrieve' (ours, for small models: stage 3's first "
        "turn after the question is a forced retrieve_memory call whose query the model writes), 'retrieve-submit' (ours: that "
        "call, then the answer as a forced submit_answer call, SUMER's short-answer tool) or 'retrieve-extract' (ours: as "
        "'retrieve-submit', the answer a span of the retrieval's reply, or yes or no).", ANSWER_MODES,
    )
    agemem_retrieve_reply: str = option(
        "scored", "AgeMem: what retrieve_memory returns: 'scored' (up to the call's k items, each with its id and score) or 'best' "
        "(ours, for small models: the best item's text alone).", RETRIEVE_REPLIES,
    )


@dataclass(frozen=True)
class LangMemOptions(MemoryStoreOptions):
    """LangMem's memory manager and search tools (see docs/graphs/langmem.md)."""


# Each built-in graph's options class; register_graph adds others' (they get no command-line flags).
BUILT_IN_OPTIONS: dict[str, type[AnswerOptions]] = {
    "memagent": MemAgentOptions,
    "full_context": FullContextOptions,
    "rag": RAGOptions,
    "sumer": SumerOptions,
    "agemem": AgeMemOptions,
    "langmem": LangMemOptions,
    "infmem": InfMemOptions,
}


def _union_fields(classes: Mapping[str, type]) -> list[tuple[str, Any, Any]]:
    """One field per option name over ``classes``; a name whose graphs differ in default is ``None``
    there (each graph's own), and its help joins theirs."""
    by_name: dict[str, list[Any]] = {}
    for cls in classes.values():
        for spec in fields(cls):
            by_name.setdefault(spec.name, []).append(spec)
    union = []
    for name, specs in by_name.items():
        first = specs[0]
        default = first.default if len({spec.default for spec in specs}) == 1 else None
        kind = first.type if default is not None or "None" in first.type else f"{first.type} | None"
        helps = " ".join(dict.fromkeys(spec.metadata["help"] for spec in specs))  # each graph's line once, in order
        union.append((name, kind, field(default=default, metadata={**first.metadata, "help": helps})))
    return union


GraphOptions = make_dataclass("GraphOptions", _union_fields(BUILT_IN_OPTIONS), frozen=True)
GraphOptions.__module__ = __name__  # make_dataclass takes module= only from Python 3.12
GraphOptions.__doc__ = """Every built-in graph's options in one record: ``memagent compare``'s flags and its result manifest.

Its fields are the union of :class:`MemAgentOptions`, :class:`FullContextOptions`,
:class:`RAGOptions`, :class:`SumerOptions`, :class:`AgeMemOptions` and :class:`LangMemOptions`; a
shared field whose graphs differ in default is ``None`` here (each graph's own).
:func:`options_for` gives one graph its options.

>>> GraphOptions(chunk_tokens=2000).chunk_tokens, GraphOptions().turn_tokens
(2000, None)
"""


def options_for(graph: str, options: Any, options_class: type | None = None) -> Any:
    """``graph``'s own options (``options_class``, default: the built-in graph's class, else
    :class:`GraphOptions`) from ``options``: an instance of that class (returned as is), a
    :class:`GraphOptions` (the fields the class declares; ``None`` takes the class default) or ``None``.

    >>> options_for("rag", GraphOptions(rag_top_k=3, chunk_tokens=9))
    RAGOptions(answer_tokens=1024, final_prompt='boxed', rag_chunk_tokens=500, rag_top_k=3)
    """
    cls = options_class or BUILT_IN_OPTIONS.get(graph, GraphOptions)
    if options is None or isinstance(options, cls):
        return options if options is not None else cls()
    if not isinstance(options, GraphOptions):
        raise TypeError(f"options for graph {graph!r} must be a {cls.__name__} or a GraphOptions, got {type(options).__name__}")
    given = {spec.name: getattr(options, spec.name) for spec in fields(cls) if getattr(options, spec.name, None) is not None}
    return cls(**given)


def graph_option(name: str) -> Any:
    """A dataclass field with :class:`GraphOptions`' default and help for ``name``, so another
    config (the trainer's) declares the same option from the same place.

    >>> graph_option("memory_tokens").metadata["help"]
    'MemAgent: memory size limit in tokens (MemAgent paper: 1024).'
    """
    spec = GraphOptions.__dataclass_fields__[name]
    return field(default=spec.default, metadata=dict(spec.metadata))


def option_flags(names: tuple[str, ...] | None = None) -> list[tuple[list[str], dict[str, Any]]]:
    """``([--flag, --flag_alias], argparse keywords)`` for each :class:`GraphOptions` field (or ``names``), from its type and help.

    >>> option_flags(("chunk_tokens",))
    [(['--chunk-tokens', '--chunk_tokens'], {'type': <class 'int'>, 'help': 'MemAgent: document tokens per memory update (MemAgent paper: 5000).'})]
    """
    flags = []
    for spec in fields(GraphOptions):
        if names is not None and spec.name not in names:
            continue
        keywords: dict[str, Any] = {"help": spec.metadata["help"]}
        if "choices" in spec.metadata:
            keywords = {"choices": spec.metadata["choices"], **keywords}
        else:
            keywords = {"type": str if "str" in str(spec.type) else int, **keywords}
        spellings = [f"--{spec.name.replace('_', '-')}"] + ([f"--{spec.name}"] if "_" in spec.name else [])
        flags.append((spellings, keywords))
    return flags


def graph_sections() -> dict[str, tuple[str, ...]]:
    """``compare --help``'s sections: the options every graph reads, then each graph's own
    (a shared option is listed under the first graph that declares it).

    >>> graph_sections()["every graph"], graph_sections()["rag"]
    (('answer_tokens', 'final_prompt'), ('rag_chunk_tokens', 'rag_top_k'))
    """
    sections = {"every graph": tuple(spec.name for spec in fields(AnswerOptions))}
    seen = set(sections["every graph"])
    for graph, cls in BUILT_IN_OPTIONS.items():
        own = tuple(spec.name for spec in fields(cls) if spec.name not in seen)
        seen.update(own)
        if own:
            sections[graph] = own
    return sections


# The demo's budget for the embedded model's 8K window: small chunks keep each CPU call short and
# a 128-token memory is plenty for a needle; the answer needs only a few tokens. Left to choose,
# the embedded model answered SUMER in text in 16 of 16 LoCoMo questions and AgeMem never stored a
# memory: their turns must call a tool.
EMBEDDED_GRAPH_DEFAULTS: Mapping[str, Any] = {
    "chunk_tokens": 1000, "memory_tokens": 128, "answer_tokens": 64, "max_turns": 6, "turn_tokens": 128, "tool_choice": "required",
}


def default_graph_options(model: str) -> Any:
    """The demo's budget for the embedded model (8K window, CPU), the papers' otherwise.

    >>> default_graph_options("smollm2-135m").chunk_tokens, default_graph_options("vllm:Qwen/Qwen2.5-14B").chunk_tokens
    (1000, 5000)
    """
    return GraphOptions(**EMBEDDED_GRAPH_DEFAULTS) if model in EMBEDDED_MODELS else GraphOptions()


__all__ = [
    "BUILT_IN_OPTIONS",
    "EMBEDDED_GRAPH_DEFAULTS",
    "AgeMemOptions",
    "AnswerOptions",
    "FullContextOptions",
    "GraphOptions",
    "LangMemOptions",
    "MemAgentOptions",
    "MemoryStoreOptions",
    "RAGOptions",
    "SumerOptions",
    "ToolTurnOptions",
    "default_graph_options",
    "graph_option",
    "graph_sections",
    "option_flags",
    "options_for",
]
