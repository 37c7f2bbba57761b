"""MemAgent on the real embedded model, in process and behind a real OpenAI-compatible server.

The server path is exactly what a ``vllm serve`` user takes: ``load_chat_model("vllm:...",
base_url=...)`` plus an explicit tokenizer directory for exact chunking; the server is
``transformers serve`` on the converted SmolLM2 directory, on loopback.
"""

import pytest
from servers import ServerUnavailable, openai_compatible_server

from langgraph_memagent import build_memagent_graph, load_chat_model
from langgraph_memagent.evals.ruler import niah_single_1
from langgraph_memagent.evals.scoring import score

# Seeds whose ~3K-token haystacks the 135M model answers under greedy decoding
# (measured: 5 of seeds 0-5; seed 0's needle at depth 4% sends it into a loop). The single-document
# tests (in process, served) read seed 1: its memory updates are short (94 output
# tokens in all, against 294 for seed 2; on seed 2 a served run took 185 s, on seed 1 59 s). Seed 2 is
# still read, in the batch below.
SEED = 1
# A padded batch's float32 sums differ slightly from a lone request's, which can flip a
# near-tie greedy token: seed 1 once lost its needle in a batched run of the full suite
# (fresh clone, 2026-11-24) though it never did alone. Seeds 2 and 3 held it alone and in
# every batch order tried (2+3, 3+2, 2+4, 4+2, 3+4, 1+2), and again with the batch's 64-token memory
# (2+3, 3+2, 1+2, 3+4; 2026-12-04), which halves its decoding: 34 s instead of 50.
BATCH_SEEDS = (2, 3)
BUDGET = {"chunk_tokens": 1000, "memory_tokens": 128, "answer_tokens": 64}
# Seconds one request to the served model may take: a memory update took ~30 s on an AVX2-only
# host sharing its 2 cores, and 120 s timed out there once when three processes shared them.
REQUEST_TIMEOUT_S = 300


def _sample(codec, seed):
    return niah_single_1(codec, 3000, seed=seed)


def _assert_found(sample, result):
    assert result["chunks_read"] == result["num_chunks"] == 3
    # SmolLM2 never writes \boxed{} (environment.md), so the RULER metric on the reply is the check.
    assert score(result["response"], sample.answers, "string_match_all") == 1.0, result["response"]
    assert sample.answers[0] in result["memory"]


@pytest.mark.embedded
def test_embedded_model_finds_the_needle(greedy_model, smollm2_codec):
    graph = build_memagent_graph(greedy_model, **BUDGET)
    sample = _sample(smollm2_codec, SEED)
    _assert_found(sample, graph.invoke({"question": sample.question, "document": sample.document}))


@pytest.mark.embedded
def test_embedded_model_batch_answers_every_document(greedy_model, smollm2_codec):
    graph = build_memagent_graph(greedy_model, **{**BUDGET, "memory_tokens": 64})
    samples = [_sample(smollm2_codec, seed) for seed in BATCH_SEEDS]
    before = greedy_model.engine.batches_run
    results = graph.batch([{"question": s.question, "document": s.document} for s in samples], {"max_concurrency": 2})
    for sample, result in zip(samples, results):
        _assert_found(sample, result)
    # 2 documents x 4 calls each: overlapping calls share decode steps, so at most 4
    # busy spells instead of the 8 a one-at-a-time backend would need.
    assert greedy_model.engine.batches_run - before <= 4


@pytest.fixture(scope="module")
def served_model(embedded_model_dir):
    try:
        with openai_compatible_server(embedded_model_dir) as base_url:
            yield base_url
    except ServerUnavailable as reason:
        pytest.skip(str(reason))


@pytest.mark.server
def test_memagent_through_an_openai_compatible_server(served_model, embedded_model_dir, smollm2_codec):
    model = load_chat_model(f"vllm:{embedded_model_dir}", base_url=served_model, temperature=0, max_retries=1, timeout=REQUEST_TIMEOUT_S)
    graph = build_memagent_graph(model, tokenizer=str(embedded_model_dir), **BUDGET)
    sample = _sample(smollm2_codec, SEED)
    result = graph.invoke({"question": sample.question, "document": sample.document})
    _assert_found(sample, result)
    assert result["usage"]["llm_calls"] == 4 and result["usage"]["input_tokens"] > 3000


@pytest.mark.server
async def test_memagent_async_through_the_server(served_model, embedded_model_dir, smollm2_codec):
    """The async client path, on a short document with a small budget: the sync test above shows the
    server's answers find the needle; this one that every call of ainvoke reached the server."""
    model = load_chat_model(f"vllm:{embedded_model_dir}", base_url=served_model, temperature=0, max_retries=1, timeout=REQUEST_TIMEOUT_S)
    graph = build_memagent_graph(model, tokenizer=str(embedded_model_dir), chunk_tokens=200, memory_tokens=32, answer_tokens=16)
    sample = niah_single_1(smollm2_codec, 350, seed=SEED)
    result = await graph.ainvoke({"question": sample.question, "document": sample.document})
    assert result["chunks_read"] == result["num_chunks"] == 2
    assert result["usage"]["llm_calls"] == 3 and result["usage"]["input_tokens"] > 350 and result["response"]


@pytest.mark.server
def test_a_server_400_is_one_clear_error_never_an_empty_memory(served_model, embedded_model_dir, capsys, tmp_path):
    """A server that refuses a request (vLLM answers 400 to a prompt beyond its window; this
    ``transformers serve`` answers 400 to a model name it does not serve) stops the run with
    one line naming the step, the endpoint and the server's reason: no memory is made up."""
    from langgraph_memagent.cli import main

    document = tmp_path / "doc.txt"
    document.write_text("The grass is green. " * 50, encoding="utf-8")
    argv = ["run", "--question", "What color is the grass?", "--document", str(document), "--model", "vllm:not-served",
            "--base-url", served_model, "--tokenizer", str(embedded_model_dir), "--max-retries", "1"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    (line,) = [line for line in err.splitlines() if line.startswith("memagent: error:")]
    assert "Traceback" not in err
    for needle in ("memory update for chunk 0", served_model, "Error code: 400", "server said: Server is pinned"):
        assert needle in line, line
    assert "answer:" not in out and "memory" not in out
