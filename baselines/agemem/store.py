"""Long-term memory: a LangGraph ``BaseStore`` namespace per user (``(user, "agemem")``), items with short ids (``m1``, ``m2``, ...)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from ...agents.users import ANONYMOUS, check_user_label, field_of, memory_user
from ..embeddings import load_embeddings


DEFAULT_NAMESPACE_ROOT = "agemem"


# all-MiniLM-L6-v2, the default embedding model, returns 384-dimensional vectors.
DEFAULT_EMBEDDING_DIMS = 384


_LIST_PAGE = 1000


_MEMORY_ID = re.compile(r"^\[?\s*m?(\d+)\s*\]?$", re.IGNORECASE)


def agemem_namespace(runtime: Any, root: str = DEFAULT_NAMESPACE_ROOT) -> tuple[str, ...]:
    """Where the run's long-term memory lives: ``(user, root)``, or ``(user, root, episode)`` for one episode's memory.

    The user is :func:`~langgraph_memagent.agents.users.memory_user`'s (the signed-in user of
    a served run, else ``context["user_id"]``); a run with an ``episode`` and no user is the
    anonymous user's. With neither, AgeMem cannot know whose memory to use.

    >>> from types import SimpleNamespace as Runtime
    >>> agemem_namespace(Runtime(context={"user_id": "alice"}, server_info=None))
    ('alice', 'agemem')
    >>> agemem_namespace(Runtime(context={"episode": "qa-1"}, server_info=None))
    ('anonymous', 'agemem', 'qa-1')
    """
    context = runtime.context
    user = memory_user(runtime)
    episode = field_of(context, "episode")
    if user is None and episode is None:
        raise ValueError(
            "AgeMem needs the run's context to say whose memory to use: "
            f"graph.invoke(input, context={{'user_id': 'alice'}}); got context={context!r}"
        )
    namespace = (user or ANONYMOUS, root)
    return namespace if episode is None else (*namespace, check_user_label(episode, "context episode"))


# -- long-term memory -----------------------------------------------------------------------------


class _LazyEmbeddings(Embeddings):
    """The embedded all-MiniLM-L6-v2, loaded on first use so building a graph stays cheap."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return load_embeddings().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return load_embeddings().embed_query(text)


def default_agemem_store(embeddings: Embeddings | None = None) -> InMemoryStore:
    """An ``InMemoryStore`` whose items' ``content`` is embedded for semantic search.

    ``embeddings=None`` is the embedded all-MiniLM-L6-v2, loaded when first needed.

    >>> default_agemem_store().index_config["dims"]
    384
    """
    if embeddings is None:
        return InMemoryStore(index={"dims": DEFAULT_EMBEDDING_DIMS, "embed": _LazyEmbeddings(), "fields": ["content"]})
    dims = getattr(embeddings, "dimensions", None) or len(embeddings.embed_query("dimension probe"))
    return InMemoryStore(index={"dims": int(dims), "embed": embeddings, "fields": ["content"]})


class LongTermMemory:
    """The long-term memory of one namespace: items ``{"content", "tags"}`` under keys ``m1``, ``m2``, ...

    Ids count up from the largest present, so an id is reused only if the newest item was
    deleted. Search is the store's semantic search; a store without an embedding index is
    ranked here by cosine with ``embeddings``.

    >>> memory = LongTermMemory(InMemoryStore(), ("agemem", "doc"))
    >>> memory.add("Ann lives in Oslo.", ["Ann"]), memory.add("Bo likes tea.")
    ('m1', 'm2')
    >>> memory.delete("m1"), [item.key for item in memory.items()]
    (True, ['m2'])
    """

    def __init__(self, store: BaseStore, namespace: tuple[str, ...], embeddings: Embeddings | None = None):
        self.store = store
        self.namespace = namespace
        self._embeddings = embeddings

    def items(self) -> list[Any]:
        """Every item of this namespace (not of namespaces below it), in id order."""
        found, offset = [], 0
        while True:
            page = self.store.search(self.namespace, limit=_LIST_PAGE, offset=offset)
            found.extend(item for item in page if tuple(item.namespace) == self.namespace)
            if len(page) < _LIST_PAGE:
                return sorted(found, key=lambda item: _memory_number(item.key))
            offset += _LIST_PAGE

    def add(self, content: str, tags: Sequence[str] = ()) -> str:
        return self.add_many([content], tags)[0]

    def add_many(self, contents: Sequence[str], tags: Sequence[str] = ()) -> list[str]:
        """Store each of ``contents`` as a new item, in one store batch (an indexed store embeds them together); their ids."""
        first = max((_memory_number(item.key) for item in self.items()), default=0) + 1
        ids = [f"m{first + offset}" for offset in range(len(contents))]
        ttl = (self.store.ttl_config or {}).get("default_ttl")  # what ``put`` would give each item
        self.store.batch([PutOp(self.namespace, memory_id, {"content": content, "tags": list(tags)}, ttl=ttl)
                          for memory_id, content in zip(ids, contents)])
        return ids

    def get(self, memory_id: str) -> dict[str, Any] | None:
        item = self.store.get(self.namespace, memory_id)
        return None if item is None else dict(item.value)

    def update(self, memory_id: str, content: str) -> bool:
        value = self.get(memory_id)
        if value is None:
            return False
        self.store.put(self.namespace, memory_id, {**value, "content": content})
        return True

    def delete(self, memory_id: str) -> bool:
        if self.get(memory_id) is None:
            return False
        self.store.delete(self.namespace, memory_id)
        return True

    def clear(self) -> None:
        for item in self.items():
            self.store.delete(self.namespace, item.key)

    def search(self, query: str, k: int) -> list[tuple[str, dict[str, Any], float | None]]:
        """``(id, value, score)`` of the ``k`` items nearest ``query``, best first."""
        hits = [item for item in self.store.search(self.namespace, query=query, limit=k) if tuple(item.namespace) == self.namespace]
        if not hits or hits[0].score is not None:
            return [(item.key, dict(item.value), item.score) for item in hits]
        return self._rank_here(query, k)

    def _rank_here(self, query: str, k: int) -> list[tuple[str, dict[str, Any], float | None]]:
        import numpy as np

        embeddings = self._embeddings or load_embeddings()
        items = self.items()
        vectors = np.asarray(embeddings.embed_documents([str(item.value.get("content", "")) for item in items]), dtype=np.float64)
        query_vector = np.asarray(embeddings.embed_query(query), dtype=np.float64)
        cosines = vectors @ query_vector / np.maximum(np.linalg.norm(vectors, axis=1) * np.linalg.norm(query_vector), 1e-12)
        best = np.argsort(-cosines, kind="stable")[:k]
        return [(items[i].key, dict(items[i].value), round(float(cosines[i]), 4)) for i in best]


def _memory_number(key: str) -> int:
    match = _MEMORY_ID.match(key)
    return int(match.group(1)) if match else 0


def parse_memory_id(text: str) -> str | None:
    """``"m7"``, ``"M7"``, ``"7"`` or ``"[m7]"`` as the key ``"m7"``; ``None`` if it is no id."""
    match = _MEMORY_ID.match(str(text).strip())
    return f"m{int(match.group(1))}" if match else None
