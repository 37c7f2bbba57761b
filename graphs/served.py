"""Compiled graphs for a LangGraph server (``langgraph dev``): MemAgent, SUMER, AgeMem and LangMem.

``langgraph.json`` at the repository root points the server at the module-level graphs
here by module path (``langgraph_memagent.graphs.served:memagent``, ``...:sumer``,
``...:agemem``, ``...:langmem``), so they import like any other module of the installed package.

The server supplies persistence: a graph it loads must carry neither a checkpointer
nor a store (``langgraph dev`` refuses one that does), and each run gets the server's
own checkpointer and store. MemAgent keeps its chunks in that store for the run.

The model is one spec string, as in :func:`~langgraph_memagent.agents.loading.load_chat_model`,
read with its options from environment variables when the server imports this module:

- ``MEMAGENT_MODEL``: model spec (default ``smollm2-135m``, the embedded model).
- ``MEMAGENT_BASE_URL``: OpenAI-compatible endpoint for ``vllm:``/``openai:`` specs.
- ``MEMAGENT_API_KEY``: API key for ``openai:`` specs (``vllm:`` defaults to ``EMPTY``).
- ``MEMAGENT_ADAPTER``: a LoRA adapter directory for local specs (``memagent train``'s output_dir),
  merged into the weights at load.
- ``MEMAGENT_TEMPERATURE``, ``MEMAGENT_TOP_P``: sampling (``0`` is greedy; default: the model's own,
  greedy for the embedded model, the server's for ``vllm:``/``openai:``).
- ``MEMAGENT_TOKENIZER``: tokenizer for chunking and token counts, a local directory or
  ``tiktoken:<encoding>``; required for hosted models, local models use their own.
- ``MEMAGENT_CHUNK_TOKENS``, ``MEMAGENT_MEMORY_TOKENS``, ``MEMAGENT_ANSWER_TOKENS``:
  MemAgent budgets (default 5000, 1024, 1024: the MemAgent paper's), InfMem's too.
- ``MEMAGENT_PRETHINK_TOKENS``, ``MEMAGENT_INFMEM_UNIT_TOKENS``, ``MEMAGENT_INFMEM_TOP_K``: InfMem's
  decision, passage and retrieval budgets (default 64, 250, 2: ours, so that InfMem fits an 8K
  window beside MemAgent's paper budgets; the InfMem reference's 1024, 500, 4 need a longer one).

- ``MEMAGENT_STORE_URL``: a PostgreSQL URL (``postgresql://user@host:port/db``). SUMER's and
  AgeMem's memory banks and LangMem's memories are kept there (a ``PostgresStore``), so they
  survive a restart of the server. Unset: each graph keeps them in its own in-process store,
  lost on restart.

SUMER, AgeMem and LangMem run with their papers' defaults (see their builders).

Import stays cheap: the embedded model's weights load on its first call, and the
tokenizer is read from the model directory instead of through the model.

Example (a served graph behaves like any compiled graph):

    >>> from langgraph_memagent.graphs.served import memagent   # doctest: +SKIP
    >>> memagent.checkpointer is None and memagent.store is None  # doctest: +SKIP
    True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore

from ..agents.extras import needs_extra
from ..agents.loading import EMBEDDED_MODELS, load_chat_model, model_directory
from ..agents.tokenizers import TokenCodec, resolve_tokenizer
from .infmem import InfMemGraph
from .memagent import MemAgentConfig, MemAgentGraph
from .options import GraphOptions
from .registry import build_graph


DEFAULT_MODEL = "smollm2-135m"
_PAPER = MemAgentConfig()  # MemAgent paper budgets (arXiv 2507.02259), the defaults below
# InfMem's served budgets (ours): with MemAgent's paper budgets its write and PreThink prompts fit an 8K window.
_SERVED_INFMEM = {"prethink_tokens": 64, "infmem_unit_tokens": 250, "infmem_top_k": 2}


def _env_number(environ: Mapping[str, str], name: str, kind: type, default: Any = None) -> Any:
    """``environ[name]`` parsed as ``kind`` (int or float), or ``default`` when unset or empty."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be {'an integer' if kind is int else 'a number'}, got {raw!r}") from None


def served_model(environ: Mapping[str, str] = os.environ) -> BaseChatModel:
    """The chat model named by ``MEMAGENT_MODEL`` and its option variables.

    >>> served_model({"MEMAGENT_MODEL": "vllm:Qwen/Qwen2.5-7B-Instruct",
    ...               "MEMAGENT_BASE_URL": "http://127.0.0.1:8000/v1", "MEMAGENT_TEMPERATURE": "0"}).temperature
    0.0
    >>> served_model({"MEMAGENT_TEMPERATURE": "cold"})
    Traceback (most recent call last):
    ...
    ValueError: environment variable MEMAGENT_TEMPERATURE must be a number, got 'cold'
    """
    options: dict[str, Any] = {}
    for name, option in (("MEMAGENT_TEMPERATURE", "temperature"), ("MEMAGENT_TOP_P", "top_p")):
        value = _env_number(environ, name, float)
        if value is not None:
            options[option] = value
    for name, option in (("MEMAGENT_BASE_URL", "base_url"), ("MEMAGENT_API_KEY", "api_key"), ("MEMAGENT_ADAPTER", "adapter")):
        if environ.get(name):
            options[option] = environ[name]
    return load_chat_model(environ.get("MEMAGENT_MODEL") or DEFAULT_MODEL, **options)


def served_tokenizer(environ: Mapping[str, str] = os.environ) -> str | None:
    """The tokenizer spec: ``MEMAGENT_TOKENIZER``, else the local model's directory.

    Reading the tokenizer from the directory keeps the server's start from loading the
    model's weights (a local model's own ``tokenizer`` attribute would load them).
    ``None`` for a hosted model without ``MEMAGENT_TOKENIZER`` (:func:`served_codec`
    then refuses, saying what to set).

    >>> served_tokenizer({"MEMAGENT_MODEL": "hf:/models/qwen"})
    '/models/qwen'
    >>> served_tokenizer({"MEMAGENT_MODEL": "openai:gpt-4o-mini", "MEMAGENT_TOKENIZER": "tiktoken:o200k_base"})
    'tiktoken:o200k_base'
    """
    if environ.get("MEMAGENT_TOKENIZER"):
        return environ["MEMAGENT_TOKENIZER"]
    spec = environ.get("MEMAGENT_MODEL") or DEFAULT_MODEL
    if spec in EMBEDDED_MODELS:
        return model_directory(spec)
    provider, _, name = spec.partition(":")
    return name if provider == "hf" and name else None


def served_codec(environ: Mapping[str, str] = os.environ) -> TokenCodec:
    """The tokenizer every served graph chunks and counts with (see :func:`served_tokenizer`).

    >>> served_codec({"MEMAGENT_MODEL": "openai:gpt-4o-mini"})
    Traceback (most recent call last):
    ...
    ValueError: MEMAGENT_MODEL='openai:gpt-4o-mini' is a hosted model: set MEMAGENT_TOKENIZER to a local tokenizer directory or 'tiktoken:<encoding>' so documents are chunked by exact token counts
    """
    tokenizer = served_tokenizer(environ)
    if tokenizer is None:
        raise ValueError(
            f"MEMAGENT_MODEL={environ.get('MEMAGENT_MODEL')!r} is a hosted model: set MEMAGENT_TOKENIZER to a local "
            "tokenizer directory or 'tiktoken:<encoding>' so documents are chunked by exact token counts"
        )
    return resolve_tokenizer(tokenizer)


def served_options(environ: Mapping[str, str] = os.environ) -> GraphOptions:
    """The registry's graph options, MemAgent's budgets read from the environment (the papers' defaults otherwise).

    >>> served_options({"MEMAGENT_CHUNK_TOKENS": "2000"}).chunk_tokens, served_options({}).memory_tokens
    (2000, 1024)
    """
    return GraphOptions(
        chunk_tokens=_env_number(environ, "MEMAGENT_CHUNK_TOKENS", int, _PAPER.chunk_tokens),
        memory_tokens=_env_number(environ, "MEMAGENT_MEMORY_TOKENS", int, _PAPER.memory_tokens),
        answer_tokens=_env_number(environ, "MEMAGENT_ANSWER_TOKENS", int, _PAPER.answer_tokens),
        **{name: _env_number(environ, f"MEMAGENT_{name.upper()}", int, default) for name, default in _SERVED_INFMEM.items()},
    )


def served_store(environ: Mapping[str, str] = os.environ) -> BaseStore | None:
    """The ``PostgresStore`` at ``MEMAGENT_STORE_URL`` (tables created if missing), or ``None`` when unset.

    Without the pgvector extension the store has no vector index: SUMER's bank ranks with its
    own in-process index and AgeMem embeds its memories on each search, but LangMem's search
    returns memories unranked.

    >>> served_store({}) is None
    True
    """
    url = environ.get("MEMAGENT_STORE_URL", "").strip()
    if not url:
        return None
    with needs_extra("serve", "MEMAGENT_STORE_URL (a Postgres store)"):
        from langgraph.store.postgres import PostgresStore
        from psycopg import Connection
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

    try:
        Connection.connect(url, connect_timeout=15).close()  # a bad URL is named at start-up, with PostgreSQL's reason
    except Exception as error:  # noqa: BLE001 - the server's start-up log must say which variable is wrong
        raise ValueError(f"MEMAGENT_STORE_URL={url!r}: cannot connect to PostgreSQL ({type(error).__name__}: {error})") from None
    # A pool, not one connection: a connection that PostgreSQL closed (a restart) is checked
    # and replaced when next taken, so the runs after a restart work again.
    pool = ConnectionPool(url, min_size=1, max_size=8, open=True, check=ConnectionPool.check_connection, name="memagent-store",
                          kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    store = PostgresStore(pool)
    store.setup()
    return store


def build_served_memagent(model: BaseChatModel, tokenizer: Any, environ: Mapping[str, str] = os.environ) -> MemAgentGraph:
    """MemAgent for a LangGraph server: budgets from the environment, no checkpointer or store.

    >>> from langgraph_memagent.agents.loading import load_chat_model
    >>> graph = build_served_memagent(load_chat_model("vllm:m", base_url="http://127.0.0.1:8000/v1"),
    ...                               "tiktoken:gpt2", {"MEMAGENT_CHUNK_TOKENS": "2000"})  # doctest: +SKIP
    >>> graph.memagent_config.chunk_tokens, graph.store, graph.checkpointer  # doctest: +SKIP
    (2000, None, None)
    """
    return _without_store(build_graph("memagent", model, served_options(environ), tokenizer, name="memagent"))


def build_served_infmem(model: BaseChatModel, tokenizer: Any, environ: Mapping[str, str] = os.environ) -> InfMemGraph:
    """InfMem for a LangGraph server, like :func:`build_served_memagent`: its chunks and passages go to the server's store."""
    try:
        graph = build_graph("infmem", model, served_options(environ), tokenizer, name="infmem")
    except ValueError as error:  # the server's start-up log must say which variables to change
        raise ValueError(f"served InfMem: {error} (MEMAGENT_PRETHINK_TOKENS, MEMAGENT_INFMEM_UNIT_TOKENS, MEMAGENT_INFMEM_TOP_K)") from None
    return _without_store(graph)


def _without_store(graph: Any) -> Any:
    # The reading graphs always attach a store (an in-memory one by default); the server
    # brings its own and rejects graphs that carry one.
    return graph.copy(update={"store": None})


model = served_model()
# Resolved once and passed to every graph: a local model's own ``tokenizer`` would load its weights.
tokenizer = served_codec()
memagent = build_served_memagent(model, tokenizer)
infmem = build_served_infmem(model, tokenizer)
# The tool graphs keep their memories in MEMAGENT_STORE_URL's store, else in their own
# in-process stores; the store sits inside each graph's memory, never on the graph itself.
store = served_store()
sumer = build_graph("sumer", model, served_options(), tokenizer, store=store)
agemem = build_graph("agemem", model, served_options(), tokenizer, store=store, name="agemem")
langmem = build_graph("langmem", model, served_options(), tokenizer, store=store, name="langmem")
