"""Baseline graphs (SUMER, AgeMem, full context, RAG): see the open issues."""
