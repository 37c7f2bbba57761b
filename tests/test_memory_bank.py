"""The raw-message memory bank: real MiniLM search over the LoCoMo file, keyword/BM25 rules,
idempotent batched ingestion, any BaseStore."""

from __future__ import annotations

import asyncio
import math
import re
import threading

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langgraph.store.memory import InMemoryStore
from langgraph_memagent.baselines.memory_bank import MemoryBank
from langgraph_memagent.baselines.memory_index import BM25_B, BM25_K1
from langgraph_memagent.evals.loaders import load_locomo
from helpers import LOCOMO_FILE

CONVERSATION = "conv-30"
BATCH = 16


class CountingEmbeddings(Embeddings):
    """Wraps an Embeddings and counts the calls and texts that reach it."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.document_calls = 0
        self.documents = 0
        self.query_calls = 0
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.document_calls += 1
            self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.query_calls += 1
        return self.inner.embed_query(text)


def fake_counter() -> CountingEmbeddings:
    return CountingEmbeddings(DeterministicFakeEmbedding(size=16))


def stored_keys(store, namespace) -> list[str]:
    return sorted(item.key for item in store.search(namespace, limit=10_000))


@pytest.fixture(scope="module")
def locomo_turns() -> list[dict]:
    """Sessions 1-3 (58 turns) of the real LoCoMo conversation: enough for every rule, cheap to embed."""
    turns = load_locomo(LOCOMO_FILE)[0].meta["turns"]
    return [turn for turn in turns if turn["session"] <= 3]


@pytest.fixture(scope="module")
def locomo_bank(locomo_turns):
    """A default-store bank with real MiniLM embeddings, ingested once, and its call counter."""
    from langgraph_memagent.baselines.embeddings import load_embeddings

    counter = CountingEmbeddings(load_embeddings())
    bank = MemoryBank(embeddings=counter, batch_size=BATCH)
    written = bank.ingest(locomo_turns, conversation_id=CONVERSATION)
    return bank, counter, written


# -- real MiniLM on LoCoMo -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, evidence",
    [
        ("When did Gina launch an ad campaign for her store?", "D2:1"),
        ("What kind of flooring is Jon looking for in his dance studio?", "D2:8"),
    ],
)
def test_semantic_search_puts_the_evidence_turn_first(locomo_bank, question, evidence):
    bank, _, _ = locomo_bank
    groups = bank.semantic_search(question, conversation_id=CONVERSATION, k=3)
    assert groups[0].hit.key == evidence
    scores = [group.hit.score for group in groups]
    assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= scores[0] <= 1.0
    hit_line = next(line for line in groups[0].render().splitlines() if line.startswith("> "))
    assert hit_line.startswith(f"> [{evidence} | session 2 | ")


def test_ingestion_embeds_batch_size_texts_per_call_and_feeds_the_store_index(locomo_bank, locomo_turns):
    bank, counter, written = locomo_bank
    assert written == len(locomo_turns) == 58
    assert counter.document_calls == math.ceil(58 / BATCH) and counter.documents == 58
    # The store's own index got the bank's vectors: searching it embeds only the query.
    hits = bank.store.search(("memory_bank", CONVERSATION), query="ad campaign for my clothing store", limit=2)
    assert [hit.score is not None for hit in hits] == [True, True]
    assert counter.document_calls == math.ceil(58 / BATCH)


def test_reingesting_the_conversation_writes_nothing(locomo_bank, locomo_turns):
    bank, counter, _ = locomo_bank
    calls = counter.document_calls
    assert bank.ingest(locomo_turns, conversation_id=CONVERSATION) == 0
    assert counter.document_calls == calls
    assert len(stored_keys(bank.store, ("memory_bank", CONVERSATION))) == 58
    items = bank.items(CONVERSATION)
    assert [item["position"] for item in items] == list(range(58))
    assert [item["message_id"] for item in items] == [turn["dia_id"] for turn in locomo_turns]


def test_filters_restrict_hits_to_a_speaker_and_a_session(locomo_bank):
    bank, _, _ = locomo_bank
    by_jon = bank.semantic_search("opening a dance studio", conversation_id=CONVERSATION, k=5, speaker="jon")
    assert len(by_jon) == 5 and {group.hit.item["speaker"] for group in by_jon} == {"Jon"}
    in_session_2 = bank.semantic_search("opening a dance studio", conversation_id=CONVERSATION, k=5, session=2)
    assert len(in_session_2) == 5 and {group.hit.item["session"] for group in in_session_2} == {2}
    both = bank.keyword_search("store", conversation_id=CONVERSATION, k=50, speaker="Gina", session=3)
    assert both and {(g.hit.item["speaker"], g.hit.item["session"]) for g in both} == {("Gina", 3)}
    with pytest.raises(ValueError, match=r"speaker 'Bob' does not occur.*speakers: Gina, Jon"):
        bank.semantic_search("dance", conversation_id=CONVERSATION, speaker="Bob")
    with pytest.raises(ValueError, match=r"session 9 does not occur.*sessions: 1-3"):
        bank.keyword_search("dance", conversation_id=CONVERSATION, session=9)


def test_groups_hold_two_messages_each_side_in_conversation_order_and_stop_at_the_edges(locomo_bank, locomo_turns):
    bank, _, _ = locomo_bank
    ids = [turn["dia_id"] for turn in locomo_turns]

    def group_ids(message_id: str) -> list[str]:
        [group] = bank.keyword_search([message_id], conversation_id=CONVERSATION, k=1)
        assert group.hit.key == message_id
        return [item["message_id"] for item in group.messages]

    assert group_ids("D1:1") == ["D1:1", "D1:2", "D1:3"]
    assert group_ids(ids[-1]) == ids[-3:]
    assert group_ids("D2:1") == ["D1:27", "D1:28", "D2:1", "D2:2", "D2:3"]  # across the session boundary
    assert group_ids("D2:5") == ["D2:3", "D2:4", "D2:5", "D2:6", "D2:7"]


def test_keyword_search_returns_exactly_the_items_holding_every_keyword(locomo_bank):
    bank, _, _ = locomo_bank
    items = bank.items(CONVERSATION)

    def brute_force(*words: str) -> set[str]:
        def holds(item, word):
            text = " ".join(str(item[f] or "") for f in ("content", "speaker", "date_time", "message_id"))
            return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None

        return {item["message_id"] for item in items if all(holds(item, word) for word in words)}

    def found(keywords) -> set[str]:
        return {g.hit.key for g in bank.keyword_search(keywords, conversation_id=CONVERSATION, k=1000)}

    expected = brute_force("dance", "studio")
    assert len(expected) >= 3
    assert found(["dance", "studio"]) == expected == found("DANCE  Studio")
    assert found(["dance studio"]) <= expected  # a list entry of two words is a phrase
    assert found(["Gina", "store"]) == brute_force("Gina", "store")  # the speaker is searchable
    assert found(["20 January"]) == {item["message_id"] for item in items if item["session"] == 1}  # so is the date
    assert found(["dance", "zebra"]) == set() and found(["danc"]) == set()  # all must match, whole words


# -- ranking and storage rules (deterministic fake embeddings) -------------------------------------


def test_bm25_ranks_a_hand_made_case_and_position_ranking_keeps_conversation_order():
    bank = MemoryBank(embeddings=DeterministicFakeEmbedding(size=8), context=0)
    contents = ["apple banana", "apple apple apple cherry cherry cherry cherry cherry", "banana cherry", "apple"]
    bank.ingest([{"message_id": mid, "text": text} for mid, text in zip("abcd", contents)], conversation_id="fruit")
    # Each item's words: its content plus its one-word message id.
    lengths = {mid: len(text.split()) + 1 for mid, text in zip("abcd", contents)}
    average = sum(lengths.values()) / 4
    idf = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))  # "apple" is in 3 of 4 items

    def bm25(tf: int, length: int) -> float:
        return idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))

    groups = bank.keyword_search("apple", conversation_id="fruit", k=10)
    assert [g.hit.key for g in groups] == ["d", "b", "a"]  # short "d" edges out tf=3 in long "b"
    assert [g.hit.score for g in groups] == pytest.approx([bm25(1, lengths["d"]), bm25(3, lengths["b"]), bm25(1, lengths["a"])])
    assert [g.messages for g in groups] == [[g.hit.item] for g in groups]  # context=0
    by_position = bank.keyword_search("apple", conversation_id="fruit", k=2, ranking="position")
    assert [g.hit.key for g in by_position] == ["a", "b"]


def test_any_store_works_and_a_new_bank_rebuilds_its_index_from_the_store():
    store = InMemoryStore()  # no embedding index: the bank embeds itself
    messages = [{"dia_id": f"D1:{i}", "speaker": "Ann" if i % 2 else "Ben", "session": 1, "text": f"note number {i} about topic {i % 3}"}
                for i in range(1, 11)]
    first = MemoryBank(store, embeddings=fake_counter(), batch_size=4)
    assert first.ingest(messages, conversation_id="notes") == 10
    assert stored_keys(store, ("memory_bank", "notes")) == sorted(m["dia_id"] for m in messages)

    counter = fake_counter()
    second = MemoryBank(store, embeddings=counter, batch_size=4)
    assert second.items("notes") == first.items("notes")
    assert counter.document_calls == 3  # vectors are not readable through BaseStore: re-embedded once
    query = "note number 7 about topic 1"
    assert [g.hit.key for g in second.semantic_search(query, conversation_id="notes", k=3)] == [
        g.hit.key for g in first.semantic_search(query, conversation_id="notes", k=3)
    ]
    assert second.semantic_search(query, conversation_id="notes", k=1)[0].hit.key == "D1:7"  # identical text
    assert second.ingest(messages, conversation_id="notes") == 0 and counter.document_calls == 3
    assert second.ingest([{"dia_id": "D2:1", "text": "a new note"}], conversation_id="notes") == 1
    assert second.items("notes")[-1]["position"] == 10


def test_identical_texts_in_one_batch_are_all_stored_and_indexed():
    bank = MemoryBank(embeddings=fake_counter())
    assert bank.ingest([{"dia_id": "D1:1", "text": "Thanks!"}, {"dia_id": "D1:2", "text": "Thanks!"}], conversation_id="c") == 2
    hits = bank.store.search(("memory_bank", "c"), query="Thanks!", limit=5)
    assert sorted(hit.key for hit in hits) == ["D1:1", "D1:2"] and all(hit.score is not None for hit in hits)


def test_messages_without_ids_get_stable_keys_and_conflicting_content_is_an_error():
    bank = MemoryBank(embeddings=fake_counter())
    messages = [{"text": "Hi"}, {"text": "Hi"}, {"text": "Bye"}]
    assert bank.ingest(messages, conversation_id="c") == 3  # a repeated message is kept twice
    assert bank.ingest(messages, conversation_id="c") == 0
    bank.ingest([{"dia_id": "D1:1", "text": "Alice's PIN is 4242."}], conversation_id="d")
    with pytest.raises(ValueError, match=r"id 'D1:1' of conversation 'd' is already stored with different content") as refused:
        bank.ingest([{"dia_id": "D1:1", "text": "Notes of Bob."}], conversation_id="d")
    # Lengths, never the stored text (it may be another caller's): it leaked "Alice's PIN is 4242".
    assert "(20 characters stored, 13 given)" in str(refused.value) and "4242" not in str(refused.value)
    # Another owner's conversation of the same id is another conversation.
    assert bank.ingest([{"dia_id": "D1:1", "text": "Notes of Bob."}], conversation_id="d", owner="bob") == 1


def test_precomputed_vectors_skip_the_embedding_model():
    texts = ["the cat sat on the mat", "stock markets fell", "a dog chased the cat"]
    counter = fake_counter()
    bank = MemoryBank(embeddings=counter)
    vectors = DeterministicFakeEmbedding(size=16).embed_documents(texts)
    assert bank.ingest([{"text": t} for t in texts], conversation_id="c", vectors=vectors) == 3
    assert counter.document_calls == 0
    assert bank.semantic_search("stock markets fell", conversation_id="c", k=1)[0].hit.item["content"] == "stock markets fell"
    with pytest.raises(ValueError, match=r"one vector per message \(3\)"):
        bank.ingest([{"text": t} for t in texts], conversation_id="e", vectors=vectors[:2])


def test_large_banks_shortlist_in_float16_and_return_exactly_the_float32_top_k(monkeypatch):
    import numpy as np
    from langgraph_memagent.baselines import memory_index

    rng = np.random.default_rng(7)
    centre = rng.standard_normal(32)
    # Near-duplicates of one direction (scores closer together than float16 can tell apart),
    # exact duplicates (ties: earlier row first), and random others.
    vectors = np.concatenate(
        [centre + 1e-3 * rng.standard_normal((300, 32)), np.repeat(centre[None], 5, axis=0), rng.standard_normal((1200, 32))]
    )
    messages = [{"text": f"message {i}", "speaker": ("Ann", "Ben")[i % 2], "session": 1 + i % 3} for i in range(len(vectors))]
    bank = MemoryBank(embeddings=fake_counter())
    bank.ingest(messages, conversation_id="c", vectors=vectors)
    index = bank._index(bank.conversation_namespace("c"))
    queries = [centre, centre + 0.01 * rng.standard_normal(32), *rng.standard_normal((5, 32))]
    for speaker, session in [(None, None), ("Ben", None), (None, 2)]:
        mask = index.filter_mask(speaker, session)
        for query in queries:
            query = query.astype(np.float32)
            monkeypatch.setattr(memory_index, "_SHORTLIST_MIN_ROWS", 10**9)
            exact = index.nearest(query, 10, mask)
            monkeypatch.setattr(memory_index, "_SHORTLIST_MIN_ROWS", 0)
            assert index.nearest(query, 10, mask) == exact
            assert len(index._shortlist(query / np.linalg.norm(query), np.arange(len(vectors)), 10)) < len(vectors)


def test_ingest_document_splits_into_chunks_with_a_tokenizer_or_by_paragraphs():
    import tiktoken
    from langgraph_memagent.agents.tokenizers import TiktokenCodec

    byte_level = tiktoken.Encoding("bytes", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
    document = "The grass is green. The sky is blue.\n\nThe magic number is 4711."
    bank = MemoryBank(embeddings=fake_counter())
    written = bank.ingest_document(document, conversation_id="doc", chunk_tokens=20, tokenizer=TiktokenCodec(byte_level))
    items = bank.items("doc")
    assert written == len(items) == math.ceil(len(document.encode()) / 20)
    assert [item["message_id"] for item in items] == [f"chunk-{i}" for i in range(written)]
    assert "".join(item["content"] for item in items) == document
    assert bank.ingest_document(document, conversation_id="doc", chunk_tokens=20, tokenizer=TiktokenCodec(byte_level)) == 0
    with pytest.raises(ValueError, match="already stored with different content"):
        bank.ingest_document("Another document.", conversation_id="doc")

    assert bank.ingest_document(document, conversation_id="paragraphs", chunk_tokens=5) == 3
    assert [item["content"] for item in bank.items("paragraphs")] == ["The grass is green. The", "sky is blue.", "The magic number is 4711."]


def test_concurrent_ingests_of_one_conversation_embed_it_once():
    counter = fake_counter()
    bank = MemoryBank(embeddings=counter, batch_size=8)
    messages = [{"text": f"message {i}"} for i in range(20)]
    written: list[int] = []
    threads = [threading.Thread(target=lambda: written.append(bank.ingest(messages, conversation_id="c"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(written) == [0, 0, 0, 20] and counter.document_calls == 3


def test_async_twins_return_what_the_sync_methods_return():
    bank = MemoryBank(embeddings=fake_counter())

    async def run():
        await bank.aingest([{"text": "alpha beta"}, {"text": "gamma"}], conversation_id="c")
        return (await bank.asemantic_search("gamma", conversation_id="c", k=1),
                await bank.akeyword_search("beta", conversation_id="c"))

    semantic, keyword = asyncio.run(run())
    assert semantic == bank.semantic_search("gamma", conversation_id="c", k=1)
    assert [g.hit.item["content"] for g in keyword] == ["alpha beta"]


def test_an_empty_conversation_has_no_hits():
    bank = MemoryBank(embeddings=fake_counter())
    assert bank.semantic_search("anything", conversation_id="nobody") == []
    assert bank.keyword_search("anything", conversation_id="nobody") == []
    assert bank.items("nobody") == []


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda b: b.semantic_search("q", conversation_id="conv.30"), r"conversation_id must be .* without '\.'.*'conv\.30'"),
        (lambda b: b.semantic_search("q", conversation_id="c", k=0), r"k must be a positive integer, got 0"),
        (lambda b: b.semantic_search("  ", conversation_id="c"), r"query must be a non-empty string, got '  '"),
        (lambda b: b.semantic_search("q", conversation_id="c", session="2"), r"session must be an integer .* got '2'"),
        (lambda b: b.keyword_search("a", conversation_id="c", ranking="tfidf"), r"ranking must be one of bm25, position, got 'tfidf'"),
        (lambda b: b.keyword_search([], conversation_id="c"), r"keywords must name at least one word, got \[\]"),
        (lambda b: b.keyword_search(["ok", "?!"], conversation_id="c"), r"keyword '\?!' has no letters or digits"),
        (lambda b: b.ingest([{"speaker": "Jon"}], conversation_id="c"), r"message 0 needs a non-empty string 'text'"),
        (lambda b: b.ingest([{"text": "x", "session": "one"}], conversation_id="c"), r"message 0: session must be an integer, got 'one'"),
        (lambda b: b.ingest_document("", conversation_id="c"), r"document must be a non-empty string"),
        (lambda b: MemoryBank(namespace=("memory.bank",)), r"namespace label .* got 'memory\.bank'"),
        (lambda b: MemoryBank(batch_size=0), r"batch_size must be a positive integer, got 0"),
        (lambda b: MemoryBank(context=-1), r"context must be an integer >= 0, got -1"),
    ],
)
def test_bad_arguments_get_errors_naming_the_value(call, message):
    bank = MemoryBank(embeddings=fake_counter())
    bank.ingest([{"text": "one"}], conversation_id="c")
    with pytest.raises(ValueError, match=message):
        call(bank)


def test_wrong_types_of_store_and_embeddings_are_rejected():
    with pytest.raises(TypeError, match="store must be a LangGraph BaseStore or None, got dict"):
        MemoryBank({})
    with pytest.raises(TypeError, match="embeddings must be a LangChain Embeddings or None, got str"):
        MemoryBank(embeddings="minilm")
