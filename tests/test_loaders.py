"""Loaders: round trips through our writers, official RULER records, MemAgent, HotpotQA, SQuAD, LoCoMo, bad files."""

import json
import re

import pytest

from langgraph_memagent.evals import (
    generate_task,
    load_hotpotqa,
    load_locomo,
    load_memagent_eval,
    load_records,
    load_ruler_jsonl,
    load_squad,
    write_memagent_eval,
    write_ruler_jsonl,
)
from langgraph_memagent.evals.loaders import DataFileError, load_memagent_train_parquet
from langgraph_memagent.evals.ruler import render_ruler_input
from helpers import BYTES, LOCOMO_FILE

ROUND_TRIP_TASKS = ["niah_single_1", "niah_multikey_3", "niah_multiquery", "vt", "fwe", "qa"]


def same_content(loaded, generated):
    assert [(s.question, s.document, s.answers, s.task, s.metric) for s in loaded] == [
        (s.question, s.document, s.answers, s.task, s.metric) for s in generated
    ]


@pytest.mark.parametrize("task", ROUND_TRIP_TASKS)
def test_ruler_files_round_trip_in_both_layouts(tmp_path, task):
    samples = generate_task(task, 2500, codec=BYTES, num_samples=2, seed=9)
    official = write_ruler_jsonl(samples, tmp_path / task / "validation.jsonl")
    loaded = load_ruler_jsonl(official)  # task from the directory name, haystack split out of input
    same_content(loaded, samples)
    assert render_ruler_input(loaded[0]) == json.loads(official.read_text().splitlines()[0])["input"]
    variant = write_ruler_jsonl(samples, tmp_path / f"{task}.jsonl", layout="memagent")
    same_content(load_ruler_jsonl(variant), samples)


def test_ruler_task_is_inferred_from_the_template_when_the_path_does_not_say(tmp_path):
    samples = generate_task("vt", 2000, codec=BYTES, seed=1)
    loaded, = load_ruler_jsonl(write_ruler_jsonl(samples, tmp_path / "data.jsonl"))
    assert (loaded.task, loaded.document, loaded.answers, loaded.scoring_metric) == ("vt", samples[0].document, samples[0].answers, "string_match_all")


# Two records exactly as RULER's prepare.py writes them with the meta-llama3 model template
# (input ends with the assistant header; the answer prefix is cut off into its own field).
LLAMA3_USER = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
LLAMA3_ASSISTANT = "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
OFFICIAL_NIAH = [
    {
        "index": 0,
        "input": LLAMA3_USER + "Some special magic numbers are hidden within the following text. Make sure to memorize it. I will quiz you about the numbers afterwards.\n"
        "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\nOne of the special magic numbers for wistful-sunrise is: 4812273.\n"
        "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\nOne of the special magic numbers for wistful-sunrise is: 9902112.\n"
        "What are all the special magic numbers for wistful-sunrise mentioned in the provided text?" + LLAMA3_ASSISTANT,
        "outputs": ["4812273", "9902112"],
        "length": 187,
        "length_w_model_temp": 203,
        "answer_prefix": " The special magic numbers for wistful-sunrise mentioned in the provided text are",
        "token_position_answer": 58,
    },
    {
        "index": 1,
        "input": LLAMA3_USER + "A special magic number is hidden within the following text. Make sure to memorize it. I will quiz you about the number afterwards.\n"
        "One of the special magic numbers for brave-otter is: 1234567.\nThe grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"
        "What is the special magic number for brave-otter mentioned in the provided text?" + LLAMA3_ASSISTANT,
        "outputs": ["1234567"],
        "length": 150,
        "length_w_model_temp": 166,
        "answer_prefix": " The special magic number for brave-otter mentioned in the provided text is",
        "token_position_answer": 40,
    },
]


def test_official_generator_records_are_split_by_the_template(tmp_path):
    path = tmp_path / "niah_multivalue" / "validation.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(record) + "\n" for record in OFFICIAL_NIAH))
    first, second = load_ruler_jsonl(path)
    assert first.task == "niah_multivalue" and first.scoring_metric == "string_match_all"
    assert first.question == "What are all the special magic numbers for wistful-sunrise mentioned in the provided text?"
    assert first.document.startswith("The grass is green.") and first.document.endswith("is: 9902112.")
    assert second.document == "One of the special magic numbers for brave-otter is: 1234567.\nThe grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
    assert [render_ruler_input(sample) for sample in (first, second)] == [record["input"] for record in OFFICIAL_NIAH]
    assert first.meta["answer_prefix"] == OFFICIAL_NIAH[0]["answer_prefix"] and second.meta["token_position_answer"] == 40


def test_official_qa_record_keeps_only_the_question(tmp_path):
    text = ("Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\n"
            "The following are given documents.\n\nDocument 1:\nParis\nParis is the capital of France.\n\n"
            "Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\n"
            "Question: What is the capital of France?")
    path = tmp_path / "qa_2.jsonl"
    path.write_text(json.dumps({"index": 0, "input": LLAMA3_USER + text + LLAMA3_ASSISTANT, "outputs": ["Paris"], "length": 80,
                                "length_w_model_temp": 96, "answer_prefix": " Answer:"}) + "\n")
    sample, = load_ruler_jsonl(path)
    assert (sample.task, sample.question, sample.document) == ("qa_2", "What is the capital of France?", "Document 1:\nParis\nParis is the capital of France.")
    assert sample.scoring_metric == "sub_exact_match"


def test_memagent_eval_round_trips_and_resolves_document_indices(tmp_path):
    samples = generate_task("qa_hotpotqa_synthetic", None, codec=BYTES, num_samples=2, seed=2, num_docs=50)
    loaded = load_memagent_eval(write_memagent_eval(samples, tmp_path / "eval_50.json"))
    assert [(s.question, s.document, s.answers) for s in loaded] == [(s.question, s.document, s.answers) for s in samples]
    assert loaded[0].meta["num_docs"] == 50 and loaded[0].task == "qa_hotpotqa"
    pool = ["Alpha\nfirst doc", "Beta\nsecond doc", "Gamma\nthird doc"]
    indexed = tmp_path / "eval_25600.json"
    indexed.write_text(json.dumps([{"context": [2, 0], "input": "Which?", "answers": ["Gamma"], "num_docs": 2, "index": 0}]))
    sample, = load_memagent_eval(indexed, pool=pool)
    assert sample.document == "Document 1:\nGamma\nthird doc\n\nDocument 2:\nAlpha\nfirst doc"
    with pytest.raises(DataFileError, match="record 0 field 'context' is a list of document indices; pass pool="):
        load_memagent_eval(indexed)
    with pytest.raises(DataFileError, match="outside the pool of 2 documents: \\[2\\]"):
        load_memagent_eval(indexed, pool=pool[:2])


def hotpot_item(number: int) -> dict:
    context = [[f"Title {number}-{k}", [f"Sentence {number}.{k}.", f" More {number}.{k}."]] for k in range(10)]
    return {"_id": f"q{number}", "question": f"Question {number}?", "answer": f"Answer {number}", "type": "bridge", "level": "hard",
            "supporting_facts": [[f"Title {number}-3", 0], [f"Title {number}-7", 1]], "context": context}


def test_hotpotqa_recipe_keeps_the_own_paragraphs_and_pads_from_the_pool(tmp_path):
    path = tmp_path / "hotpot_dev_distractor.json"
    path.write_text(json.dumps([hotpot_item(number) for number in range(6)]))
    samples = load_hotpotqa(path, num_docs=25, seed=1)
    assert len(samples) == 6
    sample = samples[4]
    blocks = sample.document.split("\n\n")
    assert [block.split("\n")[0] for block in blocks] == [f"Document {i}:" for i in range(1, 26)]
    assert all(f"Title 4-{k}\nSentence 4.{k}. More 4.{k}." in sample.document for k in range(10))
    assert (sample.question, sample.answers, sample.task, sample.scoring_metric) == ("Question 4?", ["Answer 4"], "qa_hotpotqa", "sub_exact_match")
    assert [s.document for s in load_hotpotqa(path, num_docs=25, seed=1)] == [s.document for s in samples]
    assert load_hotpotqa(path, num_docs=25, seed=2)[4].document != sample.document
    small, = load_hotpotqa(path, num_docs=2, seed=0, num_questions=1)
    assert re.findall(r"Title \d-\d", small.document) == sorted(small.meta["supporting_titles"], key=small.document.index)
    with pytest.raises(ValueError, match="num_docs=61 exceeds the 60 distinct documents"):
        load_hotpotqa(path, num_docs=61)
    # The paper's indexed eval files point into this same pool.
    indexed = tmp_path / "eval_idx.json"
    indexed.write_text(json.dumps([{"context": sample.meta["doc_indices"], "input": sample.question, "answers": sample.answers}]))
    assert load_memagent_eval(indexed, pool=path)[0].document == sample.document


def test_squad_recipe_adds_same_article_paragraphs_first(tmp_path):
    articles = [{"title": f"A{a}", "paragraphs": [{"context": f"Paragraph {a}.{p}.", "qas": [
        {"id": f"{a}{p}", "question": f"Q {a}.{p}?", "answers": [{"text": f"ans {a}.{p}", "answer_start": 0}] * 2, "is_impossible": False},
        {"id": f"{a}{p}x", "question": "Unanswerable?", "answers": [], "is_impossible": True}]} for p in range(4)]} for a in range(3)]
    path = tmp_path / "squad_dev.json"
    path.write_text(json.dumps({"version": "v2.0", "data": articles}))
    samples = load_squad(path, num_docs=4, seed=0)
    assert len(samples) == 12 and samples[5].answers == ["ans 1.1"]
    assert sorted(re.findall(r"Paragraph (\d)\.\d", samples[5].document)) == ["1"] * 4  # own article only
    wide = load_squad(path, num_docs=6, seed=0)[5]
    assert "Paragraph 1.1." in wide.document and len(re.findall(r"^Document \d+:", wide.document, flags=re.M)) == 6


def test_locomo_real_conversation():
    samples = load_locomo(LOCOMO_FILE)
    raw = json.loads(LOCOMO_FILE.read_text())
    assert len(raw["qa"]) == 105 and len(samples) == 81  # 24 adversarial questions left out
    assert len(load_locomo(LOCOMO_FILE, include_adversarial=True)) == 105
    first = samples[0]
    assert (first.question, first.answers, first.task, first.scoring_metric) == ("When Jon has lost his job as a banker?", ["19 January, 2023"], "locomo", "sub_exact_match")
    assert first.meta["category"] == 2 and first.meta["category_name"] == "temporal"
    assert first.meta["evidence"] == ["D1:2"] and first.meta["evidence_sessions"] == [1]
    assert first.meta["evidence_speakers"] == ["Jon"] and first.meta["evidence_dates"] == ["4:04 pm on 20 January, 2023"]
    assert (first.meta["speaker_a"], first.meta["speaker_b"]) == ("Jon", "Gina")
    assert len(first.meta["turns"]) == 369 and first.document.count("\nJon: ") + first.document.count("\nGina: ") == 369
    assert first.document.startswith("Session 1 (4:04 pm on 20 January, 2023):\nGina: Hey Jon!")
    assert "\n\nSession 19 (6:46 pm on 23 July, 2023):\nJon: Hey Gina!" in first.document
    shared = next(turn for turn in first.meta["turns"] if turn["dia_id"] == "D2:1")
    assert shared["blip_caption"] in first.document and shared["session"] == 2


def test_locomo_standard_release_layout_gives_the_same_records(tmp_path):
    raw = json.loads(LOCOMO_FILE.read_text())
    conversation = {key: value for key, value in raw.items() if key.startswith(("speaker_", "session_")) and not key.endswith(("_observation", "_summary"))}
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "conv-30", "conversation": conversation, "qa": raw["qa"]}]))
    standard = load_locomo(path, include_adversarial=True)
    per_conversation = load_locomo(LOCOMO_FILE, include_adversarial=True)
    assert [(s.question, s.document, s.answers) for s in standard] == [(s.question, s.document, s.answers) for s in per_conversation]
    assert standard[0].meta["sample_id"] == "conv-30"
    adversarial = next(s for s in standard if s.meta["category"] == 5)
    assert adversarial.answers == ["not mentioned", "no information available"] and "adversarial_answer" in adversarial.meta


def test_locomo_numeric_answers_become_strings(tmp_path):
    raw = json.loads(LOCOMO_FILE.read_text())
    raw["qa"] = [{"question": "How many sessions?", "answer": 19, "evidence": ["D19:1"], "category": 4}]
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(raw))
    assert load_locomo(path)[0].answers == ["19"]


def test_training_parquet_rows(tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    rows = [{"data_source": "hotpotqa", "prompt": [{"role": "user", "content": f"Question {i}?"}], "context": f"Document 1:\nDoc {i}",
             "reward_model": {"ground_truth": [f"gold {i}"], "style": "rule"}, "extra_info": {"index": i}} for i in range(2)]
    path = tmp_path / "hotpotqa_train.parquet"
    parquet.write_table(pyarrow.Table.from_pylist(rows), path)
    samples = load_memagent_train_parquet(path)
    assert [(s.question, s.document, s.answers) for s in samples] == [(f"Question {i}?", f"Document 1:\nDoc {i}", [f"gold {i}"]) for i in range(2)]
    assert load_records(path)[1].meta["data_source"] == "hotpotqa"


def test_load_records_sniffs_every_format(tmp_path):
    niah = generate_task("niah_single_2", 1500, codec=BYTES, seed=1)
    assert load_records(write_ruler_jsonl(niah, tmp_path / "niah_single_2" / "validation.jsonl"))[0].task == "niah_single_2"
    qa = generate_task("qa_hotpotqa_synthetic", None, codec=BYTES, seed=1, num_docs=50)
    assert load_records(write_memagent_eval(qa, tmp_path / "eval_50.json"))[0].document == qa[0].document
    assert load_records(LOCOMO_FILE)[0].task == "locomo"
    hotpot = tmp_path / "hotpot.json"
    hotpot.write_text(json.dumps([hotpot_item(1), hotpot_item(2)]))
    assert load_records(hotpot, num_docs=12)[0].task == "qa_hotpotqa"
    with pytest.raises(ValueError, match="HotpotQA file: pass num_docs="):
        load_records(hotpot)
    saved = tmp_path / "saved.jsonl"
    saved.write_text("".join(json.dumps(sample.to_dict()) + "\n" for sample in niah))
    assert load_records(saved)[0].to_dict() == niah[0].to_dict()


def test_bad_files_name_the_file_record_and_field(tmp_path):
    missing = tmp_path / "eval_50.json"
    missing.write_text(json.dumps([{"context": "d", "input": "q", "answers": ["a"]}, {"context": "d", "answers": ["a"]}]))
    with pytest.raises(DataFileError, match=re.escape(f"{missing}: record 1 has no field 'input'")):
        load_memagent_eval(missing)
    ruler = tmp_path / "niah_single_1.jsonl"
    ruler.write_text(json.dumps({"index": 0, "input": "x"}) + "\n")
    with pytest.raises(DataFileError, match="record 0 has no field 'outputs'"):
        load_ruler_jsonl(ruler)
    ruler.write_text(json.dumps({"index": 0, "input": "no template here", "outputs": ["1"]}) + "\n")
    with pytest.raises(DataFileError, match="record 0 field 'input': the input does not contain the niah template's opening"):
        load_ruler_jsonl(ruler)
    not_json = tmp_path / "broken.json"
    not_json.write_text("{not json")
    with pytest.raises(DataFileError, match="broken.json: not valid JSON"):
        load_records(not_json)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataFileError, match="empty.jsonl: the file is empty"):
        load_ruler_jsonl(empty)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps("just a string"))
    with pytest.raises(DataFileError, match="expected a JSON list of records or a JSON object \\(SQuAD, LoCoMo\\), got a JSON string"):
        load_records(wrong)
    bad_line = tmp_path / "bad_line.jsonl"
    bad_line.write_text('{"input": "q", "outputs": ["a"]}\n{oops\n')
    with pytest.raises(DataFileError, match="line 2 is not valid JSON"):
        load_ruler_jsonl(bad_line)
    locomo = json.loads(LOCOMO_FILE.read_text())
    del locomo["qa"][3]["answer"]
    broken_locomo = tmp_path / "conv.json"
    broken_locomo.write_text(json.dumps(locomo))
    with pytest.raises(DataFileError, match="conversation conv qa: record 3 has no field 'answer'"):
        load_locomo(broken_locomo)
    with pytest.raises(DataFileError, match="no such file"):
        load_records(tmp_path / "absent.json")
