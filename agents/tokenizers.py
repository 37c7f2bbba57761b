"""Tokenizers for token-exact chunking, from a backend or given explicitly.

MemAgent counts chunk sizes with the serving model's own tokenizer: encode the whole
context once, slice the id list, decode each slice. Encoding one multi-million-token
string is slow in fast tokenizers (~3.5 us/token at 4M tokens, measured here), so the
text is cut into segments at word boundaries that do not change tokenization and the
segments are encoded in parallel batches. :func:`iter_chunks` cuts chunks while later
batches are still to be encoded, so the ids of a whole document are never held at once.
"""

from __future__ import annotations

import copy
import itertools
import re
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

from .extras import needs_extra


TIKTOKEN_PREFIX = "tiktoken:"
_SEGMENT_CHARS = 32_768
# Segments encoded per batch (~260K characters): enough to keep the cores busy; at 3.5M
# tokens chunking then peaks 23 MB above the document (64 per batch: 104 MB; all at once:
# 524 MB), measured here.
_SEGMENTS_PER_BATCH = 8
# A boundary right before " word" keeps byte-level BPE pre-tokenization intact: the
# space always attaches to the word after it.
_BOUNDARY = re.compile(r"(?<=[^\s]) (?=\w)")
HOW_TO_PASS_A_TOKENIZER = (
    "pass tokenizer=... to the graph builder: a transformers tokenizer object, a local "
    "tokenizer directory or name (e.g. the model directory your server loads), or "
    f"'{TIKTOKEN_PREFIX}<encoding>' (e.g. '{TIKTOKEN_PREFIX}o200k_base') for hosted APIs"
)


# Per tokenizer, a private copy for each way of reading special-token strings (see encode_text).
_MODE_COPIES: "weakref.WeakKeyDictionary[Any, dict[bool, Any]]" = weakref.WeakKeyDictionary()
_MODE_COPIES_LOCK = threading.Lock()


def encode_text(tokenizer: Any, texts: Sequence[str], *, plain: bool) -> list[list[int]]:
    """Token ids of ``texts`` (no special tokens added); with ``plain``, a special-token string
    such as ``<|im_start|>`` is read as its characters, else as the control token. Thread-safe.

    A fast tokenizer keeps ``split_special_tokens`` as one flag on its shared Rust object and
    sets it before each encode, so two threads encoding in different ways can each get the
    other's: a chat's markup read as characters, or a document's ``<|im_start|>`` as a control
    token (measured: 103 of 900 encodes wrong with 6 threads). Each way encodes on its own copy
    of the tokenizer, whose flag every call sets to the same value.

    >>> from transformers import AutoTokenizer
    >>> from langgraph_memagent.agents.embedded import embedded_model_dir
    >>> tokenizer = AutoTokenizer.from_pretrained(str(embedded_model_dir()))
    >>> len(encode_text(tokenizer, ["<|im_start|>"], plain=False)[0]), len(encode_text(tokenizer, ["<|im_start|>"], plain=True)[0])
    (1, 7)
    """
    if not texts:
        return []
    mine = _MODE_COPIES.get(tokenizer, {}).get(plain)
    if mine is None:  # the lock only to make a copy (once per tokenizer and way), not on every encode
        with _MODE_COPIES_LOCK:
            copies = _MODE_COPIES.setdefault(tokenizer, {})
            if plain not in copies:
                copies[plain] = copy.deepcopy(tokenizer)
            mine = copies[plain]
    # verbose=False: long documents exceed model_max_length by design.
    return mine(list(texts), add_special_tokens=False, split_special_tokens=plain, return_attention_mask=False, verbose=False)["input_ids"]


@runtime_checkable
class TokenCodec(Protocol):
    """What chunking needs from a tokenizer: batched encode and decode, no special tokens."""

    name: str

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...

    def decode_batch(self, token_ids: Sequence[Sequence[int]]) -> list[str]: ...


@dataclass
class HFTokenCodec:
    """A transformers tokenizer (fast tokenizers encode a batch on all cores)."""

    tokenizer: Any
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        # Special-token strings in a document are text, counted as the characters a prompt will hold.
        return encode_text(self.tokenizer, texts, plain=True)

    def decode_batch(self, token_ids: Sequence[Sequence[int]]) -> list[str]:
        return self.tokenizer.batch_decode(list(token_ids), skip_special_tokens=False)


@dataclass
class TiktokenCodec:
    """An OpenAI tiktoken encoding, for hosted APIs whose tokenizer is not public."""

    encoding: Any
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or f"{TIKTOKEN_PREFIX}{self.encoding.name}"

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.encoding.encode_ordinary_batch(list(texts))

    def decode_batch(self, token_ids: Sequence[Sequence[int]]) -> list[str]:
        return self.encoding.decode_batch([list(ids) for ids in token_ids])


def resolve_tokenizer(tokenizer: Any = None, model: Any = None) -> TokenCodec:
    """Turn what the user gave (or the model's own tokenizer) into a :class:`TokenCodec`.

    Accepts a ``TokenCodec``, a transformers tokenizer object, a tiktoken ``Encoding``,
    ``"tiktoken:<encoding>"``, or a local tokenizer directory / name. With nothing given,
    the model's ``tokenizer`` attribute is used (local backends have one). Never guesses:
    a hosted model without an explicit tokenizer is an error that says how to pass one.

    >>> codec = resolve_tokenizer(embedded_model_dir())   # doctest: +SKIP
    >>> codec.decode_batch(codec.encode_batch(["hello world"]))   # doctest: +SKIP
    ['hello world']
    """
    if tokenizer is None:
        tokenizer = getattr(model, "tokenizer", None)
        if tokenizer is None:
            raise ValueError(f"no tokenizer for exact chunking with model {type(model).__name__}: {HOW_TO_PASS_A_TOKENIZER}")
    if isinstance(tokenizer, TokenCodec):
        return tokenizer
    if isinstance(tokenizer, (str, Path)):
        return _load_tokenizer(str(tokenizer))
    if hasattr(tokenizer, "encode_ordinary_batch"):
        return TiktokenCodec(tokenizer)
    if callable(tokenizer) and hasattr(tokenizer, "batch_decode"):
        return HFTokenCodec(tokenizer)
    raise TypeError(f"unsupported tokenizer {tokenizer!r}: {HOW_TO_PASS_A_TOKENIZER}")


def optional_tokenizer(tokenizer: Any = None, model: Any = None) -> TokenCodec | None:
    """:func:`resolve_tokenizer`'s codec, or ``None`` for a server model when no tokenizer is given
    (for graphs that count tokens only when they can)."""
    if tokenizer is None and getattr(model, "tokenizer", None) is None:
        return None
    return resolve_tokenizer(tokenizer, model)


def _load_tokenizer(spec: str) -> TokenCodec:
    if spec.startswith(TIKTOKEN_PREFIX):
        import tiktoken

        encoding_name = spec[len(TIKTOKEN_PREFIX) :]
        try:
            return TiktokenCodec(tiktoken.get_encoding(encoding_name))
        except Exception as error:  # unknown name, or its BPE file is neither cached nor downloadable
            raise ValueError(
                f"cannot load tiktoken encoding {encoding_name!r} ({type(error).__name__}: {error}); tiktoken "
                "downloads its BPE files on first use, so offline set TIKTOKEN_CACHE_DIR to a directory that has them"
            ) from error
    with needs_extra("embedded", f"tokenizer {spec!r} (transformers; 'tiktoken:<encoding>' needs no extra)"):
        from transformers import AutoTokenizer

    if spec.startswith((".", "/", "~")) and not Path(spec).expanduser().is_dir():
        # A path, not a hub name: say so, instead of the hub's "Repo id must use alphanumeric chars".
        raise ValueError(f"tokenizer directory {spec!r} does not exist or is not a directory; {HOW_TO_PASS_A_TOKENIZER}")
    try:
        return HFTokenCodec(AutoTokenizer.from_pretrained(str(Path(spec).expanduser())), name=spec)
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot load tokenizer {spec!r} ({error}); {HOW_TO_PASS_A_TOKENIZER}") from error


def iter_segments(text: str, segment_chars: int = _SEGMENT_CHARS) -> Iterator[str]:
    """Pieces of ``text`` of about ``segment_chars``, cut at tokenization-neutral boundaries.

    Concatenating the pieces gives back ``text``; text with no such boundary (no spaces)
    stays in one piece rather than being cut mid-word.

    >>> list(iter_segments("aa bb cc dd", segment_chars=4))
    ['aa bb', ' cc dd']
    """
    start = 0
    while len(text) - start > segment_chars:
        match = _BOUNDARY.search(text, start + segment_chars)
        if match is None:
            break
        yield text[start : match.start()]
        start = match.start()
    yield text[start:]


def split_segments(text: str, segment_chars: int = _SEGMENT_CHARS) -> list[str]:
    """:func:`iter_segments` as a list."""
    return list(iter_segments(text, segment_chars))


def _encoded_groups(text: str, codec: TokenCodec) -> Iterator[list[int]]:
    """Token ids of ``text`` group by group: each group is a batch of segments encoded together."""
    segments = iter_segments(text)
    while group := list(itertools.islice(segments, _SEGMENTS_PER_BATCH)):
        yield [token for ids in codec.encode_batch(group) for token in ids]


def encode_long(text: str, codec: TokenCodec | Any) -> list[int]:
    """Token ids of ``text`` without special tokens, encoding segments in batches.

    ``codec`` is anything :func:`resolve_tokenizer` accepts (a transformers tokenizer too).
    """
    codec = resolve_tokenizer(codec)
    return [token for ids in _encoded_groups(text, codec) for token in ids]


def _cut(ids: list[int], codec: TokenCodec, chunk_tokens: int) -> int:
    """Where the next chunk ends: after ``chunk_tokens`` ids, moved back (by at most 3 tokens)
    where the cut would split a multi-byte character that byte-level BPE spread over tokens."""
    tails = codec.decode_batch([ids[max(0, chunk_tokens - back - 4) : chunk_tokens - back] for back in range(3)])
    back = next((b for b, tail in enumerate(tails) if not tail.endswith("\ufffd")), 0)
    return chunk_tokens - back if chunk_tokens - back > 0 else chunk_tokens


def iter_chunks(text: str, codec: TokenCodec | Any, chunk_tokens: int) -> Iterator[str]:
    """Chunks of at most ``chunk_tokens`` tokens, produced while the text is still being encoded.

    Same chunks as :func:`chunk_text`, but memory stays bounded by one batch of segments
    (~260K characters) beyond the chunks the caller keeps: the ids of the whole document
    (~140 bytes per token as Python ints) are never held at once. ``codec`` is anything
    :func:`resolve_tokenizer` accepts.
    """
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be a positive number of tokens, got {chunk_tokens!r}")
    codec = resolve_tokenizer(codec)
    pending: list[int] = []
    for group in _encoded_groups(text, codec):
        pending.extend(group)
        slices = []
        # Cut only while more ids follow the cut: the last chunk may be shorter and is never moved.
        while len(pending) > chunk_tokens:
            end = _cut(pending, codec, chunk_tokens)
            slices.append(pending[:end])
            del pending[:end]
        if slices:  # some tokenizers decode an empty batch to [""]
            yield from codec.decode_batch(slices)
    if pending:
        yield from codec.decode_batch([pending])


def chunk_text(text: str, codec: TokenCodec | Any, chunk_tokens: int) -> list[str]:
    """Split ``text`` into chunks of at most ``chunk_tokens`` tokens, MemAgent's way.

    Encode once, slice the ids, decode each slice. Unlike the reference, a cut never
    splits a multi-byte character (it moves back a token or two), so chunks join back
    to the text. Empty text gives no chunks.

    >>> import tiktoken
    >>> byte_level = tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
    >>> chunk_text("one ü", TiktokenCodec(byte_level), 5)
    ['one ', 'ü']
    """
    return list(iter_chunks(text, codec, chunk_tokens))
