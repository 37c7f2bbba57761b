"""Baseline graphs to compare memory agents against: full context and RAG (SUMER and AgeMem: see the open issues).

>>> from langgraph_memagent.baselines import build_full_context_graph, build_rag_graph, load_embeddings
"""

from .embeddings import EmbeddingModelError, SentenceTransformerEmbeddings, default_embedding_model_dir, load_embeddings
from .full_context import ContextOverflowError, FittedPrompt, build_full_context_graph, fit_full_context_prompt
from .rag import build_rag_graph

__all__ = [
    "ContextOverflowError",
    "EmbeddingModelError",
    "FittedPrompt",
    "SentenceTransformerEmbeddings",
    "build_full_context_graph",
    "build_rag_graph",
    "default_embedding_model_dir",
    "fit_full_context_prompt",
    "load_embeddings",
]
