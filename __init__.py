"""langgraph-memagent: MemAgent-style memory agents for very long inputs, as LangGraph graphs.

>>> from langgraph_memagent import build_memagent_graph, load_chat_model
>>> from langgraph_memagent import GraphOptions, build_graph, register_graph

The core install runs MemAgent with any LangChain chat model; the local engine, the baselines'
embeddings, the trainer, the figures and the servers' checkpointers come with extras
(``pip install 'langgraph-memagent[embedded]'``, ...), and what needs a missing one fails with a
line that names it (:class:`~langgraph_memagent.agents.extras.MissingExtraError`).
"""

from .agents import LocalChatModel, load_chat_model
from .agents.extras import MissingExtraError
from .graphs import (
    AgeMemOptions,
    FullContextOptions,
    GraphOptions,
    InfMemOptions,
    LangMemOptions,
    MemAgentOptions,
    RAGOptions,
    SumerOptions,
    MemAgentConfig,
    MemAgentMiddleware,
    build_graph,
    build_infmem_graph,
    build_memagent_graph,
    create_memagent_subagent,
    create_memagent_tool,
    default_graph_options,
    register_graph,
)

__all__ = [
    "AgeMemOptions",
    "FullContextOptions",
    "GraphOptions",
    "InfMemOptions",
    "LangMemOptions",
    "MemAgentOptions",
    "RAGOptions",
    "SumerOptions",
    "LocalChatModel",
    "MemAgentConfig",
    "MemAgentMiddleware",
    "MissingExtraError",
    "build_graph",
    "build_infmem_graph",
    "build_memagent_graph",
    "create_memagent_subagent",
    "create_memagent_tool",
    "default_graph_options",
    "load_chat_model",
    "register_graph",
]
