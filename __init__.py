"""langgraph-memagent: MemAgent-style memory agents for very long inputs, as LangGraph graphs.

>>> from langgraph_memagent import build_memagent_graph, load_chat_model
"""

from .agents import LocalChatModel, load_chat_model
from .graphs import MemAgentConfig, build_memagent_graph

__all__ = ["LocalChatModel", "MemAgentConfig", "build_memagent_graph", "load_chat_model"]
