"""RULER and synthetic multi-hop generators: length, golds, reproducibility, task semantics, writers."""

import json
import re
import time
import uuid
from collections import Counter

import pytest
import tiktoken

from langgraph_memagent.agents.tokenizers import TiktokenCodec, encode_long
from langgraph_memagent.evals import TASKS, Sample, generate_task, niah_single_1, write_memagent_eval, write_ruler_jsonl
from langgraph_memagent.evals.records import scoring_metric
from langgraph_memagent.evals.ruler import NOISE_LINE, render_ruler_input

BYTES = TiktokenCodec(
    tiktoken.Encoding("bytes", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
)
RULER_TASKS = [task for task in TASKS if not task.startswith("qa")]
NEEDLE = re.compile(r"One of the special magic (?:numbers|uuids) for (\S+) is: (\S+)\.")


def whole_prompt_tokens(sample: Sample, codec) -> int:
    """What must fit the target: RULER's prompt, its answer prefix and the expected answer."""
    text = f"{render_ruler_input(sample)}{sample.meta['answer_prefix']} {' '.join(sample.answers)}"
    return len(encode_long(text, codec))


@pytest.mark.parametrize("task", TASKS)
def test_every_task_fits_4k_tokens_and_holds_its_golds(task):
    sample, = generate_task(task, 4096, codec=BYTES, seed=5)
    tokens = whole_prompt_tokens(sample, BYTES)
    assert tokens == sample.meta["length"]
    # Byte tokens: one essay sentence or document is up to ~400 tokens, hence the 10% slack here.
    assert 0.9 * 4096 <= tokens <= 4096
    assert sample.task == task and sample.answers and sample.question
    assert sample.question not in sample.document
    haystack = sample.document
    if task.startswith("qa"):
        assert sample.metric == "any" and sample.scoring_metric == "sub_exact_match"
        assert sample.meta["gold_titles"][0] in haystack and sample.meta["gold_titles"][1] in haystack
    else:
        assert sample.metric == "all" and sample.scoring_metric == "string_match_all"
        assert all(answer in haystack for answer in sample.answers)


def test_real_tokenizer_lengths_are_within_two_percent_of_the_target(smollm2_codec):
    for task in TASKS:
        sample, = generate_task(task, 4096, codec=smollm2_codec, seed=2)
        assert 0.98 * 4096 <= whole_prompt_tokens(sample, smollm2_codec) <= 4096, task


def test_a_32k_sample_takes_about_a_second(smollm2_codec):
    start = time.perf_counter()
    sample, = generate_task("niah_multiquery", 32768, codec=smollm2_codec, seed=4)
    assert time.perf_counter() - start < 5.0
    assert 0.99 * 32768 <= sample.meta["length"] <= 32768


@pytest.mark.parametrize("task", ["niah_single_2", "niah_multikey_3", "vt", "fwe", "qa_hotpotqa_synthetic"])
def test_same_seed_same_bytes_and_each_sample_differs(task):
    first = generate_task(task, 3000, codec=BYTES, num_samples=3, seed=11)
    again = generate_task(task, 3000, codec=BYTES, num_samples=3, seed=11)
    assert [s.to_dict() for s in first] == [s.to_dict() for s in again]
    assert len({s.document for s in first}) == 3
    other, = generate_task(task, 3000, codec=BYTES, seed=12)
    assert other.document != first[0].document
    assert [s.meta["sample_index"] for s in first] == [0, 1, 2]


def test_niah_single_1_is_the_generated_task_and_honours_depth():
    sample = niah_single_1(BYTES, 3000, seed=3, depth=0.5)
    assert sample.to_dict() == generate_task("niah_single_1", 3000, codec=BYTES, seed=3, depth=0.5)[0].to_dict()
    lines = sample.document.split("\n")
    needle_line = next(index for index, line in enumerate(lines) if line != NOISE_LINE)
    assert abs(needle_line - 0.5 * (len(lines) - 1)) <= 1
    assert sample.question == f"What is the special magic number for {sample.meta['keys'][0]} mentioned in the provided text?"
    assert sample.meta["depth"] == 0.5
    assert render_ruler_input(sample).startswith("A special magic number is hidden within the following text.")


def needles(document: str) -> list[tuple[str, str]]:
    return NEEDLE.findall(document)


def test_multivalue_golds_are_the_four_values_of_the_queried_key():
    sample, = generate_task("niah_multivalue", 4000, codec=BYTES, seed=1)
    key, = sample.meta["keys"]
    assert sorted(value for found_key, value in needles(sample.document) if found_key == key) == sorted(sample.answers)
    assert len(set(sample.answers)) == 4 and key in sample.question and "are all" in sample.question


def test_multiquery_asks_for_four_keys_and_expects_each_value():
    sample, = generate_task("niah_multiquery", 4000, codec=BYTES, seed=1)
    found = dict(needles(sample.document))
    assert len(sample.meta["queries"]) == 4
    assert sample.answers == [found[key] for key in sample.meta["queries"]]
    assert all(key in sample.question for key in sample.meta["queries"]) and ", and " in sample.question


def test_balanced_gold_rank_takes_position_out_of_the_answer_and_key_pools_are_disjoint(smollm2_codec):
    # The trainer's short task (2 keyed needles in ~5 sentences): RULER's random depths put
    # the gold first in 19 of these 32 held-out samples, so copying the first needle paid 59%.
    random_depths = generate_task("niah_multikey_1", 240, codec=smollm2_codec, num_samples=32, seed=10000, num_keys=2)
    assert sum(sample.meta["gold_rank"] == 0 for sample in random_depths) == 19
    balanced = generate_task("niah_multikey_1", 240, codec=smollm2_codec, num_samples=32, seed=10000, num_keys=2, gold_rank="balanced")
    assert [sample.meta["gold_rank"] for sample in balanced] == [0, 1] * 16
    for sample in balanced:  # the recorded rank is where the gold's needle really is
        values = [value for _, value in needles(sample.document)]
        assert values[sample.meta["gold_rank"]] == sample.answers[0] and len(values) == 2
    adjectives = {
        pool: {key.split("-")[0] for sample in generate_task("niah_multikey_1", 600, codec=BYTES, num_samples=40, seed=1, key_pool=pool) for key in sample.meta["keys"]}
        for pool in ("train", "test")
    }
    assert adjectives["train"] and adjectives["test"] and not adjectives["train"] & adjectives["test"]
    with pytest.raises(ValueError, match=r"gold_rank for niah_multikey_1 must be an integer in \[0, 1\] .* got 2"):
        generate_task("niah_multikey_1", 600, codec=BYTES, num_keys=2, gold_rank=2)
    with pytest.raises(ValueError, match=r"key_pool must be one of \['train', 'test'\] or None, got 'dev'"):
        generate_task("niah_single_1", 600, codec=BYTES, key_pool="dev")


def test_multikey_tasks_hide_the_queried_key_among_distractor_keys():
    sample, = generate_task("niah_multikey_1", 4000, codec=BYTES, seed=2)
    found = needles(sample.document)
    assert len(found) == 4 and [value for key, value in found if key == sample.meta["queries"][0]] == sample.answers
    haystack_of_needles, = generate_task("niah_multikey_2", 4000, codec=BYTES, seed=2)
    lines = haystack_of_needles.document.split("\n")
    assert len(needles(haystack_of_needles.document)) == len(lines) > 50
    assert sum(key == haystack_of_needles.meta["queries"][0] for key, _ in needles(haystack_of_needles.document)) == 1
    one_distractor, = generate_task("niah_multikey_1", 4000, codec=BYTES, seed=2, num_keys=2)
    found = needles(one_distractor.document)
    assert len(found) == 2 and [value for key, value in found if key == one_distractor.meta["queries"][0]] == one_distractor.answers
    uuids, = generate_task("niah_multikey_3", 4000, codec=BYTES, seed=2)
    key = uuids.meta["queries"][0]
    assert uuid.UUID(key).version == 4 and uuid.UUID(uuids.answers[0]).version == 4


def test_variable_tracking_chain_resolves_to_the_golds():
    sample, = generate_task("vt", 4000, codec=BYTES, seed=8, num_chains=2, num_hops=4)
    value = re.search(r"assigned the value (\d{5})", sample.question).group(1)
    assignments = [re.fullmatch(r"VAR ([A-Z]{5}) = (VAR [A-Z]{5}|\d{5})", line) for line in sample.document.split("\n") if line.startswith("VAR")]
    resolved: dict[str, str] = {}
    for match in assignments:  # statements appear in chain order, so one pass resolves them
        target, source = match.groups()
        resolved[target] = resolved[source[4:]] if source.startswith("VAR ") else source
    assert len(assignments) == 10
    assert sorted(name for name, resolved_value in resolved.items() if resolved_value == value) == sorted(sample.answers)
    assert len(sample.answers) == 5


def test_frequent_words_golds_are_the_three_most_frequent_coded_words():
    sample, = generate_task("fwe", 4000, codec=BYTES, seed=6)
    counts = Counter(word for word in sample.document.split() if word != "...")
    assert [word for word, _ in counts.most_common(3)] == sample.answers
    assert Counter(sample.document.split()).most_common(1)[0][0] == "..."  # rank 0 is the noise token


def check_derivable(sample: Sample) -> None:
    """The answer follows from the two supporting sentences, each found in its gold paragraph."""
    paragraphs = {block.split("\n")[1]: block for block in sample.document.split("\n\n")}
    (first_title, first), (second_title, second) = sample.meta["supporting_facts"]
    assert first in paragraphs[first_title] and second in paragraphs[second_title]
    question, answer = sample.question, sample.answers[0]
    if sample.meta["kind"] == "bridge":
        assert sample.meta["bridge_entity"] in first and answer in second and sample.meta["bridge_entity"] == second_title
    elif question.startswith("Are "):
        nationality = [re.search(r"is an? (\w+) ", sentence).group(1) for sentence in (first, second)]
        assert answer == ("yes" if nationality[0] == nationality[1] else "no")
    elif question.startswith("Who was born first"):
        months = "January February March April May June July August September October November December".split()
        dates = []
        for sentence in (first, second):
            day, month, year = re.search(r"born (\d+) (\w+) (\d{4})", sentence).groups()
            dates.append((int(year), months.index(month), int(day)))
        assert answer == (first_title if dates[0] < dates[1] else second_title)
    else:
        years = [int(re.search(r"\b(1\d{3}|20\d{2})\b", sentence).group(1)) for sentence in (first, second)]
        assert answer == (first_title if years[0] < years[1] else second_title)


@pytest.mark.parametrize("kind", ["bridge", "comparison"])
def test_multihop_gold_paragraphs_are_present_and_the_answer_derivable(kind):
    for sample in generate_task("qa_hotpotqa_synthetic", None, codec=BYTES, num_samples=12, seed=3, num_docs=50, kind=kind):
        assert sample.meta["kind"] == kind
        assert len(re.findall(r"^Document \d+:$", sample.document, flags=re.M)) == sample.meta["num_docs"] == 50
        check_derivable(sample)


def test_multihop_distractors_resemble_the_gold_entities():
    sample, = generate_task("qa_hotpotqa_synthetic", None, codec=BYTES, seed=1, num_docs=50, kind="bridge")
    gold_titles = sample.meta["gold_titles"]
    name_parts = {part for title in gold_titles for part in title.split()} - {"The"}
    titles = [block.split("\n")[1] for block in sample.document.split("\n\n")]
    similar = [title for title in titles if title not in gold_titles and name_parts & set(title.split())]
    assert similar, "no distractor shares a name part with the gold entities"


class WordCodec:
    """One token per whitespace-separated word: cheap enough for a 3.5M-token document."""

    name = "words"

    def encode_batch(self, texts):
        return [[0] * len(text.split()) for text in texts]

    def decode_batch(self, token_ids):
        raise NotImplementedError("counting only")


def test_multihop_scales_to_25600_documents():
    sample, = generate_task("qa_hotpotqa_synthetic", None, codec=WordCodec(), seed=0, num_docs=25_600)
    assert sample.document.count("\n\nDocument ") == 25_599
    titles = [block.split("\n")[1] for block in sample.document.split("\n\n")]
    assert len(set(titles)) == 25_600  # every entity has one paragraph
    check_derivable(sample)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown task 'niah_single_9'"):
        generate_task("niah_single_9", 4000, codec=BYTES)
    with pytest.raises(TypeError, match="vt takes no option.*depth"):
        generate_task("vt", 4000, codec=BYTES, depth=0.5)
    with pytest.raises(ValueError, match="target_tokens=50 is too small"):
        generate_task("niah_single_1", 50, codec=BYTES)
    with pytest.raises(ValueError, match="exactly one of target_tokens and num_docs"):
        generate_task("qa", 4000, codec=BYTES, num_docs=50)
    with pytest.raises(ValueError, match="depth must be a fraction"):
        generate_task("niah_single_1", 4000, codec=BYTES, depth=50)
    with pytest.raises(ValueError, match="num_keys for niah_multiquery must be an integer >= 4.*got 2"):
        generate_task("niah_multiquery", 4000, codec=BYTES, num_keys=2)


def test_scoring_metric_mapping():
    assert scoring_metric("niah_single_1", "any") == "string_match_part"
    assert [scoring_metric(task, "any") for task in ("qa_squad", "hotpotqa", "multihop_x", "locomo")] == ["sub_exact_match"] * 4
    assert scoring_metric("qa", "all") == "string_match_all"
    with pytest.raises(ValueError, match="metric must be one of"):
        Sample(question="q", document="d", answers=["a"], task="t", metric="string_match_all")


def test_writers_write_ruler_and_memagent_layouts(tmp_path):
    samples = generate_task("niah_single_2", 2000, codec=BYTES, num_samples=2, seed=1)
    path = write_ruler_jsonl(samples, tmp_path / "niah_single_2" / "validation.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert list(records[0]) == ["index", "input", "outputs", "length", "length_w_model_temp", "answer_prefix", "token_position_answer"]
    assert records[1]["index"] == 1 and records[0]["input"] == render_ruler_input(samples[0])
    assert records[0]["length"] == samples[0].meta["length"] + 128  # RULER adds its generation budget
    assert records[0]["answer_prefix"] == f" The special magic number for {samples[0].meta['keys'][0]} mentioned in the provided text is"
    position = records[0]["token_position_answer"]
    assert BYTES.decode_batch([encode_long(records[0]["input"], BYTES)[position:]])[0].startswith(samples[0].answers[0])
    variant = write_ruler_jsonl(samples, tmp_path / "variant.jsonl", layout="memagent")
    first = json.loads(variant.read_text().splitlines()[0])
    assert (first["input"], first["context"]) == (samples[0].question, samples[0].document)
    qa = generate_task("qa_hotpotqa_synthetic", None, codec=BYTES, seed=1, num_docs=50)
    evaluation = json.loads(write_memagent_eval(qa, tmp_path / "eval_50.json").read_text())
    assert evaluation == [{"context": qa[0].document, "input": qa[0].question, "answers": qa[0].answers, "num_docs": 50, "index": 0}]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left behind
