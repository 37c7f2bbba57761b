"""The graphs: MemAgent, InfMem, and the one registry of every graph (MemAgent and the baselines) that the
CLI, the comparison harness, the trainer and ``langgraph dev`` build from."""

from ..agents.calls import ModelCallError, TokenUsage
from .in_agents import MemAgentMiddleware, create_memagent_tool
from .in_deepagents import create_memagent_subagent
from .infmem import InfMemGraph, build_infmem_graph
from .memagent import MemAgentConfig, MemAgentGraph, MemAgentInput, MemAgentOutput, build_memagent_graph
from .options import (
    AgeMemOptions,
    AnswerOptions,
    FullContextOptions,
    GraphOptions,
    InfMemOptions,
    LangMemOptions,
    MemAgentOptions,
    RAGOptions,
    SumerOptions,
    default_graph_options,
)
from .registry import GRAPHS, build_graph, register_graph


__all__ = [
    "GRAPHS",
    "AgeMemOptions",
    "AnswerOptions",
    "FullContextOptions",
    "GraphOptions",
    "InfMemGraph",
    "InfMemOptions",
    "LangMemOptions",
    "MemAgentOptions",
    "RAGOptions",
    "SumerOptions",
    "MemAgentConfig",
    "MemAgentGraph",
    "MemAgentMiddleware",
    "MemAgentInput",
    "MemAgentOutput",
    "ModelCallError",
    "TokenUsage",
    "build_graph",
    "build_infmem_graph",
    "build_memagent_graph",
    "create_memagent_subagent",
    "create_memagent_tool",
    "default_graph_options",
    "register_graph",
]
