"""langgraph-memagent: MemAgent-style memory agents for very long inputs, as LangGraph graphs.

>>> from langgraph_memagent import build_memagent_graph, load_chat_model
"""

from .agents import LocalChatModel, load_chat_model
from .graphs import MemAgentConfig, MemAgentMiddleware, build_memagent_graph, create_memagent_tool

__all__ = ["LocalChatModel", "MemAgentConfig", "MemAgentMiddleware", "build_memagent_graph", "create_memagent_tool", "load_chat_model"]
