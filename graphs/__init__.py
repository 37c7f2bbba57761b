"""LangGraph state machines built by this package."""

from .memagent import MemAgentConfig, MemAgentGraph, MemAgentInput, MemAgentOutput, ModelCallError, build_memagent_graph

__all__ = ["MemAgentConfig", "MemAgentGraph", "MemAgentInput", "MemAgentOutput", "ModelCallError", "build_memagent_graph"]
