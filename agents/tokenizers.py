"""Tokenizers for token-exact chunking, from a backend or given explicitly.

MemAgent counts chunk sizes with the serving model's own tokenizer: encode the whole
context once, slice the id list, decode each slice. Encoding one multi-million-token
string is slow in fast tokenizers (~3.5 us/token at 4M tokens, measured here), so the
text is cut into segments at word boundaries that do not change tokenization and the
segments are encoded as one parallel batch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

TIKTOKEN_PREFIX = "tiktoken:"
_SEGMENT_CHARS = 32_768
# A boundary right before " word" keeps byte-level BPE pre-tokenization intact: the
# space always attaches to the word after it.
_BOUNDARY = re.compile(r"(?<=[^\s]) (?=\w)")
HOW_TO_PASS_A_TOKENIZER = (
    "pass tokenizer=... to the graph builder: a transformers tokenizer object, a local "
    "tokenizer directory or name (e.g. the model directory your server loads), or "
    f"'{TIKTOKEN_PREFIX}<encoding>' (e.g. '{TIKTOKEN_PREFIX}o200k_base') for hosted APIs"
)


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
        if not texts:
            return []
        # verbose=False: long documents exceed model_max_length by design.
        return self.tokenizer(list(texts), add_special_tokens=False, return_attention_mask=False, verbose=False)[
            "input_ids"
        ]

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
    from transformers import AutoTokenizer

    try:
        return HFTokenCodec(AutoTokenizer.from_pretrained(spec), name=spec)
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot load tokenizer {spec!r} ({error}); {HOW_TO_PASS_A_TOKENIZER}") from error


def split_segments(text: str, segment_chars: int = _SEGMENT_CHARS) -> list[str]:
    """Cut ``text`` into pieces of about ``segment_chars`` at tokenization-neutral boundaries.

    Concatenating the pieces gives back ``text``; text with no such boundary (no spaces)
    stays in one piece rather than being cut mid-word.

    >>> split_segments("aa bb cc dd", segment_chars=4)
    ['aa bb', ' cc dd']
    """
    segments, start = [], 0
    while len(text) - start > segment_chars:
        match = _BOUNDARY.search(text, start + segment_chars)
        if match is None:
            break
        segments.append(text[start : match.start()])
        start = match.start()
    segments.append(text[start:])
    return segments


def encode_long(text: str, codec: TokenCodec) -> list[int]:
    """Token ids of ``text`` without special tokens, encoding segments in one batch."""
    ids: list[int] = []
    for segment_ids in codec.encode_batch(split_segments(text)):
        ids.extend(segment_ids)
    return ids


def _chunk_bounds(ids: list[int], codec: TokenCodec, chunk_tokens: int) -> list[int]:
    """Cut positions every ``chunk_tokens`` ids, moved back (by at most 3 tokens) where a
    cut would split a multi-byte character that byte-level BPE spread over several tokens."""
    bounds, start = [], 0
    while start < len(ids):
        end = min(start + chunk_tokens, len(ids))
        if end < len(ids):
            tails = codec.decode_batch([ids[max(start, end - back - 4) : end - back] for back in range(3)])
            back = next((b for b, tail in enumerate(tails) if not tail.endswith("\ufffd")), 0)
            end -= back if end - back > start else 0
        bounds.append(end)
        start = end
    return bounds


def chunk_text(text: str, codec: TokenCodec, chunk_tokens: int) -> list[str]:
    """Split ``text`` into chunks of at most ``chunk_tokens`` tokens, MemAgent's way.

    Encode once, slice the ids, decode each slice. Unlike the reference, a cut never
    splits a multi-byte character (it moves back a token or two), so chunks join back
    to the text. Empty text gives no chunks.

    >>> import tiktoken
    >>> byte_level = tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
    >>> chunk_text("one ü", TiktokenCodec(byte_level), 5)
    ['one ', 'ü']
    """
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be a positive number of tokens, got {chunk_tokens!r}")
    ids = encode_long(text, codec)
    starts = [0, *_chunk_bounds(ids, codec, chunk_tokens)]
    return codec.decode_batch([ids[start:end] for start, end in zip(starts, starts[1:])])
