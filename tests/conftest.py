"""Shared fixtures: the real embedded model (converted once per session) and its tokenizer."""

from __future__ import annotations

import os

import pytest

# Nothing may be fetched from a model hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def embedded_model_dir():
    """The converted SmolLM2-135M-Instruct directory (converts on first use, ~30 s)."""
    from langgraph_memagent.agents.embedded import embedded_model_dir as converted_dir

    return converted_dir()


@pytest.fixture(scope="session")
def smollm2_codec(embedded_model_dir):
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer

    return resolve_tokenizer(str(embedded_model_dir))


@pytest.fixture(scope="session")
def greedy_model(embedded_model_dir):
    """The embedded model with greedy decoding, shared by every test of the session."""
    from langgraph_memagent.agents.local_model import LocalChatModel

    return LocalChatModel(model_path=str(embedded_model_dir), temperature=0.0)
