"""One conversation's in-process search index: unit vectors, filter columns, and an inverted word index
ranked by BM25 (k1=1.2, b=0.75, the Robertson/Zaragoza defaults); and the item, hit and group types it returns."""

from __future__ import annotations

import array
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from typing_extensions import TypedDict

from ..agents.extras import needs_extra


KeywordRanking = Literal["bm25", "position"]


KEYWORD_RANKINGS: tuple[str, ...] = ("bm25", "position")


# BM25 parameters: the usual defaults (Robertson & Zaragoza, "The Probabilistic Relevance
# Framework: BM25 and Beyond", 2009), as the issue asks.
BM25_K1 = 1.2


BM25_B = 0.75


_SHORTLIST_MIN_ROWS = 16_384  # rows from which a search shortlists with float16 vectors (see ConversationIndex.nearest)


# Bound on |float16 score - float32 score| for unit vectors: two float16 roundings (2^-11
# relative each, and |v.q| <= 1) plus float32 accumulation. Measured: at most 2e-4 at 100K items.
_HALF_SCORE_ERROR = 2e-3


_WORD = re.compile(r"\w+")


class MemoryItem(TypedDict):
    """The value stored under each key in the ``BaseStore`` (one raw message or chunk)."""

    content: str
    speaker: str | None
    session: int | None
    date_time: str | None
    position: int  # 0-based order within the conversation
    message_id: str  # e.g. LoCoMo dia_id "D1:3", or "chunk-17"
    conversation_id: str


@dataclass(frozen=True)
class MemoryHit:
    """One search result: the item's store key, the item, and its score.

    Semantic scores are cosine similarities; keyword scores are BM25 scores (also for
    ``ranking="position"``, which only changes the order).
    """

    key: str
    item: MemoryItem
    score: float


def render_item(item: MemoryItem) -> str:
    """One message as a line: ``[id | session | date | speaker] content`` (missing fields left out).

    >>> render_item({"content": "Hi!", "speaker": "Jon", "session": 1, "date_time": "8 May 2023",
    ...              "position": 0, "message_id": "D1:1", "conversation_id": "c"})
    '[D1:1 | session 1 | 8 May 2023 | Jon] Hi!'
    """
    session = None if item.get("session") is None else f"session {item['session']}"
    fields = [field for field in (item.get("message_id"), session, item.get("date_time"), item.get("speaker")) if field]
    return f"[{' | '.join(fields)}] {item['content']}"


@dataclass(frozen=True)
class MemoryGroup:
    """One hit expanded with its neighbours, in conversation order (SUMER's memory group)."""

    hit: MemoryHit
    messages: list[MemoryItem]  # the hit's item with up to `context` items before and after

    def render(self) -> str:
        """The group as readable lines for a tool reply; the hit's line starts with ``"> "``."""
        hit_id = self.hit.item["message_id"]
        return "\n".join(("> " if item["message_id"] == hit_id else "  ") + render_item(item) for item in self.messages)


def keyword_phrases(keywords: str | Sequence[str]) -> list[list[str]]:
    """Keywords as lists of lowercase word tokens; a string is split at whitespace."""
    if isinstance(keywords, str):
        words = keywords.split()
    elif isinstance(keywords, Sequence) and all(isinstance(word, str) for word in keywords):
        words = list(keywords)
    else:
        raise ValueError(f"keywords must be a string or a list of strings, got {keywords!r}")
    if not words:
        raise ValueError(f"keywords must name at least one word, got {keywords!r}")
    phrases = []
    for word in words:
        tokens = _WORD.findall(word.lower())
        if not tokens:
            raise ValueError(f"keyword {word!r} has no letters or digits to search for")
        phrases.append(tokens)
    return phrases


# -- the in-process index of one conversation ------------------------------------------------------


def searchable_text(item: Mapping[str, Any]) -> str:
    """What keyword search looks in: the content and the speaker, date/time and message id."""
    return "\n".join(str(field) for field in (item["content"], item.get("speaker"), item.get("date_time"), item["message_id"]) if field)


def _kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of ``values`` (the smallest when there are fewer than k)."""
    return values.min() if k >= len(values) else np.partition(values, len(values) - k)[len(values) - k]


class ConversationIndex:
    """Vectors, filter columns and an inverted word index of one conversation, rows in conversation order.

    Columns grow by doubling so ingesting in batches costs amortized O(items).
    """

    def __init__(self) -> None:
        self.items: list[MemoryItem] = []
        self.row_of: dict[str, int] = {}  # store key (= message_id) -> row
        self.texts: list[str] = []  # lowercase searchable text, for phrase checks
        self.postings: dict[str, tuple[array.array, array.array]] = {}  # word -> (rows ascending, term frequencies)
        self.speaker_codes: dict[str, int] = {}  # casefolded speaker -> code (-1: no speaker)
        self.speaker_names: dict[str, str] = {}  # casefolded -> as written
        self.sessions_present: set[int] = set()
        self.total_words = 0
        self.next_position = 0
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._half_vectors = np.zeros((0, 0), dtype=np.float16)  # the same rows in float16, for shortlists
        self._speakers = np.zeros(0, dtype=np.int32)
        self._sessions = np.zeros(0, dtype=np.int64)
        self._lengths = np.zeros(0, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.items)

    def _reserve(self, rows: int, dims: int) -> None:
        if self._vectors.shape[1] not in (0, dims):
            raise ValueError(f"embedding has {dims} dimensions but this conversation's vectors have {self._vectors.shape[1]}")
        if rows <= len(self._speakers) and self._vectors.shape[1] == dims:
            return
        capacity = max(rows, 2 * len(self._speakers), 64)
        used = len(self.items)
        for name, dtype in (("_vectors", np.float32), ("_half_vectors", np.float16)):
            vectors = np.zeros((capacity, dims), dtype=dtype)
            if used:
                vectors[:used] = getattr(self, name)[:used]
            setattr(self, name, vectors)
        for name, dtype in (("_speakers", np.int32), ("_sessions", np.int64), ("_lengths", np.float32)):
            column = np.zeros(capacity, dtype=dtype)
            column[:used] = getattr(self, name)[:used]
            setattr(self, name, column)

    def add(self, items: Sequence[MemoryItem], vectors: np.ndarray) -> None:
        """Append items (already in conversation order, after every existing row) with their vectors."""
        start, end = len(self.items), len(self.items) + len(items)
        self._reserve(end, vectors.shape[1])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self._vectors[start:end] = vectors / np.where(norms > 0, norms, 1.0)
        self._half_vectors[start:end] = self._vectors[start:end]
        for row, item in enumerate(items, start):
            self.row_of[item["message_id"]] = row
            self.items.append(item)
            speaker = item["speaker"]
            if speaker is None:
                self._speakers[row] = -1
            else:
                folded = speaker.strip().casefold()
                self.speaker_names.setdefault(folded, speaker)
                self._speakers[row] = self.speaker_codes.setdefault(folded, len(self.speaker_codes))
            self._sessions[row] = -1 if item["session"] is None else item["session"]
            if item["session"] is not None:
                self.sessions_present.add(item["session"])
            text = searchable_text(item).lower()
            self.texts.append(text)
            words = _WORD.findall(text)
            for word, count in Counter(words).items():
                rows, counts = self.postings.setdefault(word, (array.array("i"), array.array("i")))
                rows.append(row)
                counts.append(count)
            self._lengths[row] = len(words)
            self.total_words += len(words)
            self.next_position = max(self.next_position, item["position"] + 1)

    def filter_mask(self, speaker: str | None, session: int | None) -> np.ndarray | None:
        """Rows allowed by the filters (None: all); an unknown speaker or session is an error naming the known ones."""
        rows = len(self.items)
        mask = None
        if speaker is not None:
            code = self.speaker_codes.get(speaker.strip().casefold())
            if code is None:
                known = ", ".join(sorted(self.speaker_names.values())) or "none"
                raise ValueError(f"speaker {speaker!r} does not occur in this conversation (speakers: {known})")
            mask = self._speakers[:rows] == code
        if session is not None:
            if session not in self.sessions_present:
                known = f"{min(self.sessions_present)}-{max(self.sessions_present)}" if self.sessions_present else "none"
                raise ValueError(f"session {session!r} does not occur in this conversation (sessions: {known})")
            in_session = self._sessions[:rows] == session
            mask = in_session if mask is None else mask & in_session
        return mask

    def nearest(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        """Top-k rows by cosine similarity (ties: earlier row first)."""
        rows = len(self.items)
        if query.shape[0] != self._vectors.shape[1]:
            raise ValueError(f"query embedding has {query.shape[0]} dimensions but the stored vectors have {self._vectors.shape[1]}")
        unit = query / norm if (norm := float(np.linalg.norm(query))) > 0 else query
        candidates = np.arange(rows) if mask is None else np.flatnonzero(mask)
        if min(k, len(candidates)) == 0:
            return []
        if rows >= _SHORTLIST_MIN_ROWS:
            candidates = self._shortlist(unit, candidates, k)
        vectors = self._vectors[:rows] if len(candidates) == rows else self._vectors[candidates]
        # einsum, in this thread: multithreaded products on a busy shared machine spin (BLAS
        # made a 5K-item search 20x slower at load 12 on 2 cores).
        scores = np.einsum("ij,j->i", vectors, unit)
        top = np.flatnonzero(scores >= _kth_largest(scores, k))  # every tie of the k-th, so the earliest rows win
        top = top[np.lexsort((top, -scores[top]))][:k]
        return [(int(candidates[i]), float(scores[i])) for i in top]

    def _shortlist(self, unit: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
        """Candidates that can be among the exact top ``k``, found with the float16 vectors.

        A large bank's product is memory-bound: float16 reads half the bytes (100K items:
        BENCHMARKS.md section 7). Scores within 2 x the float16 error bound of the k-th best
        are kept, so the exact rescoring that follows returns exactly the float32 top k.
        """
        with needs_extra("baselines", "a large memory bank's float16 shortlist"):
            import torch  # present with sentence-transformers; imported only by large banks

        with torch.inference_mode():
            half = torch.from_numpy(self._half_vectors[: len(self.items)])
            approx = torch.mv(half, torch.from_numpy(unit.astype(np.float16))).float().numpy()[candidates]
        return candidates[approx >= _kth_largest(approx, k) - 2 * _HALF_SCORE_ERROR]

    def matching(self, phrases: list[list[str]], mask: np.ndarray | None) -> np.ndarray:
        """Rows (ascending) that contain every keyword phrase and pass the filters."""
        words = list(dict.fromkeys(word for phrase in phrases for word in phrase))
        if any(word not in self.postings for word in words):
            return np.zeros(0, dtype=np.int64)
        rows = None
        for word in sorted(words, key=lambda word: len(self.postings[word][0])):  # rarest first: smallest sets
            posting = np.array(self.postings[word][0], dtype=np.int64)
            rows = posting if rows is None else np.intersect1d(rows, posting, assume_unique=True)
            if len(rows) == 0:
                return rows
        if mask is not None:
            rows = rows[mask[rows]]
        patterns = [re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, phrase)) + r"(?!\w)") for phrase in phrases if len(phrase) > 1]
        if patterns:
            rows = np.array([row for row in rows if all(pattern.search(self.texts[row]) for pattern in patterns)], dtype=np.int64)
        return rows

    def bm25(self, rows: np.ndarray, phrases: list[list[str]]) -> np.ndarray:
        """BM25 scores of ``rows`` (which contain every query word) over this conversation's statistics."""
        total = len(self.items)
        average_length = self.total_words / total if total else 1.0
        lengths = self._lengths[rows]
        scores = np.zeros(len(rows), dtype=np.float64)
        for word in dict.fromkeys(word for phrase in phrases for word in phrase):
            posting_rows, counts = self.postings[word]
            frequency = len(posting_rows)
            # The "+1" form of the IDF (Lucene's) stays positive for words in over half the items.
            idf = math.log(1.0 + (total - frequency + 0.5) / (frequency + 0.5))
            term = np.array(counts, dtype=np.float64)[np.searchsorted(np.array(posting_rows, dtype=np.int64), rows)]
            scores += idf * term * (BM25_K1 + 1) / (term + BM25_K1 * (1 - BM25_B + BM25_B * lengths / average_length))
        return scores

    def group(self, row: int, score: float, context: int) -> MemoryGroup:
        item = self.items[row]
        neighbours = self.items[max(0, row - context) : row + context + 1]
        return MemoryGroup(MemoryHit(key=item["message_id"], item=item, score=score), list(neighbours))
