import random

import pytest
import tiktoken

from langgraph_memagent.agents.tokenizers import (
    TiktokenCodec,
    chunk_text,
    encode_long,
    resolve_tokenizer,
    split_segments,
)

WORDS = "The grass is green. don't 1234567 x\tyz über 漢字 naïve  spaces\n\nnew-lines: (a) [b] {c}".split(" ")


def _text(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _byte_level_codec() -> TiktokenCodec:
    encoding = tiktoken.Encoding(
        "gpt2-like",
        pat_str=r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={},
    )
    return TiktokenCodec(encoding)


def test_segments_rejoin_to_the_text():
    text = _text(20_000)
    segments = split_segments(text, segment_chars=1000)
    assert len(segments) > 10 and "".join(segments) == text


def test_segmented_encoding_equals_whole_encoding_hf(smollm2_codec):
    text = _text(60_000, seed=1)
    assert encode_long(text, smollm2_codec) == smollm2_codec.encode_batch([text])[0]


def test_segmented_encoding_equals_whole_encoding_tiktoken():
    codec = _byte_level_codec()
    text = _text(60_000, seed=2)
    assert encode_long(text, codec) == codec.encode_batch([text])[0]


def test_chunks_respect_the_token_budget(smollm2_codec):
    text = _text(5_000, seed=3)
    chunks = chunk_text(text, smollm2_codec, 300)
    sizes = [len(smollm2_codec.encode_batch([c])[0]) for c in chunks]
    total = len(encode_long(text, smollm2_codec))
    assert len(chunks) == -(-total // 300)
    # Re-encoding a decoded slice may merge differently at its edges by a token or two.
    assert all(size <= 302 for size in sizes)
    assert "".join(chunks) == text


def test_bad_chunk_size_names_the_value(smollm2_codec):
    with pytest.raises(ValueError, match="chunk_tokens must be a positive number of tokens, got 0"):
        chunk_text("abc", smollm2_codec, 0)


def test_no_tokenizer_for_a_hosted_model_says_how_to_pass_one():
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="EMPTY")
    with pytest.raises(ValueError, match="pass tokenizer=.*tiktoken:"):
        resolve_tokenizer(None, model)


def test_tokenizer_forms(embedded_model_dir, greedy_model):
    from transformers import AutoTokenizer

    by_dir = resolve_tokenizer(str(embedded_model_dir))
    by_object = resolve_tokenizer(AutoTokenizer.from_pretrained(embedded_model_dir))
    from_model = resolve_tokenizer(None, greedy_model)
    ids = [codec.encode_batch(["hello world"]) for codec in (by_dir, by_object, from_model)]
    assert ids[0] == ids[1] == ids[2]
    with pytest.raises(ValueError, match="tokenizer directory '/no/such/dir' does not exist"):
        resolve_tokenizer("/no/such/dir")
    with pytest.raises(TypeError, match="unsupported tokenizer 42"):
        resolve_tokenizer(42)


def _reference_chunks(text: str, codec, chunk_tokens: int) -> list[str]:
    """The non-streaming algorithm: encode everything, cut every chunk_tokens ids (moved
    back where a cut would split a multi-byte character), decode each slice."""
    ids = codec.encode_batch([text])[0]
    pieces, start = [], 0
    while start < len(ids):
        end = min(start + chunk_tokens, len(ids))
        if end < len(ids):
            tails = codec.decode_batch([ids[max(start, end - back - 4) : end - back] for back in range(3)])
            back = next((b for b, tail in enumerate(tails) if not tail.endswith("\ufffd")), 0)
            end -= back if end - back > start else 0
        pieces.append(ids[start:end])
        start = end
    return codec.decode_batch(pieces)


@pytest.mark.parametrize("codec_name", ["smollm2", "byte_level"])
def test_streaming_chunks_equal_the_whole_document_algorithm(codec_name, smollm2_codec, monkeypatch):
    from langgraph_memagent.agents import tokenizers

    # Tiny segment batches, so chunks straddle many encode batches.
    monkeypatch.setattr(tokenizers, "_SEGMENTS_PER_BATCH", 2)
    codec = smollm2_codec if codec_name == "smollm2" else _byte_level_codec()
    text = _text(120_000, seed=4)  # ~600K characters: ~18 segments, ~9 batches
    streamed = list(tokenizers.iter_chunks(text, codec, 997))
    assert len(tokenizers.split_segments(text)) > 10
    assert streamed == _reference_chunks(text, codec, 997)
    assert "".join(streamed) == text
