"""LangGraph state machines built by this package."""

from .calls import ModelCallError, TokenUsage
from .memagent import MemAgentConfig, MemAgentGraph, MemAgentInput, MemAgentOutput, build_memagent_graph

__all__ = [
    "MemAgentConfig",
    "MemAgentGraph",
    "MemAgentInput",
    "MemAgentOutput",
    "ModelCallError",
    "TokenUsage",
    "build_memagent_graph",
]
