"""Baseline graphs to compare memory agents against: full context, RAG, SUMER-style search over
raw memory, and AgeMem-style memory tools.

>>> from langgraph_memagent.baselines import build_full_context_graph, build_rag_graph, build_sumer_graph, build_agemem_qa_graph
>>> from langgraph_memagent.baselines import build_langmem_graph
"""

from .agemem import (
    AgeMemProtocolResult,
    arun_agemem_protocol,
    build_agemem_graph,
    build_agemem_qa_graph,
    run_agemem_protocol,
)
from .embeddings import EmbeddingModelError, SentenceTransformerEmbeddings, default_embedding_model_dir, load_embeddings
from .full_context import ContextOverflowError, FittedPrompt, build_full_context_graph, fit_full_context_prompt
from .langmem_graph import build_langmem_graph
from .memory_bank import MemoryBank
from .memory_index import MemoryGroup, MemoryHit, MemoryItem
from .rag import build_rag_graph
from .sumer import build_sumer_graph


__all__ = [
    "AgeMemProtocolResult",
    "ContextOverflowError",
    "EmbeddingModelError",
    "FittedPrompt",
    "MemoryBank",
    "MemoryGroup",
    "MemoryHit",
    "MemoryItem",
    "SentenceTransformerEmbeddings",
    "arun_agemem_protocol",
    "build_agemem_graph",
    "build_agemem_qa_graph",
    "build_full_context_graph",
    "build_langmem_graph",
    "build_rag_graph",
    "build_sumer_graph",
    "default_embedding_model_dir",
    "fit_full_context_prompt",
    "load_embeddings",
    "run_agemem_protocol",
]
