"""Tests for langgraph_memagent.evals.locomo_scoring: F1 (Mem0 and LoCoMo), BLEU-1, the LLM
judge and its parsing, and the per-category summary. Expected values are computed by hand."""

from __future__ import annotations

import math

import pytest

from langgraph_memagent.evals.loaders import load_locomo
from langgraph_memagent.evals.locomo_scoring import (
    JudgeVerdict,
    LLMJudge,
    bleu1,
    bleu1_single,
    f1,
    locomo_f1,
    locomo_markdown_table,
    mem0_f1,
    parse_judge_reply,
    porter_stem,
    summarize_locomo,
    word_tokens,
)

from scripted_model import ScriptedChatModel
from helpers import LOCOMO_FILE


# --- Porter stemmer: examples from Porter (1980), full algorithm outputs -----------------------

PORTER_EXAMPLES = {
    "caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
    "feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
    "sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
    "tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
    "filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
    "rational": "ration", "valenci": "valenc", "hesitanci": "hesit", "digitizer": "digit",
    "conformabli": "conform", "radicalli": "radic", "differentli": "differ", "vileli": "vile",
    "analogousli": "analog", "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
    "feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope", "callousness": "callous",
    "formaliti": "formal", "sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic",
    "formative": "form", "formalize": "formal", "electriciti": "electr", "electrical": "electr",
    "hopeful": "hope", "goodness": "good", "revival": "reviv", "allowance": "allow",
    "inference": "infer", "airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust",
    "defensible": "defens", "irritant": "irrit", "replacement": "replac", "adjustment": "adjust",
    "dependent": "depend", "adoption": "adopt", "homologou": "homolog", "communism": "commun",
    "activate": "activ", "angulariti": "angular", "homologous": "homolog", "effective": "effect",
    "bowdlerize": "bowdler", "probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control",
    "roll": "roll", "generate": "gener", "is": "is",
}


@pytest.mark.parametrize("word, stem", PORTER_EXAMPLES.items())
def test_porter_stemmer_matches_the_papers_examples(word, stem):
    assert porter_stem(word) == stem


# --- F1 ----------------------------------------------------------------------------------------


def test_mem0_f1_uses_token_sets_and_its_separators():
    # {'she', 'went', 'to', 'paris'} vs {'paris', 'france'}: 1 common, P=1/4, R=1/2 -> F1 = 1/3.
    assert mem0_f1("She went to Paris!", "Paris, France") == pytest.approx(1 / 3)
    # Repeats count once; ':' is not a separator in Mem0's tokenizer, so "2023:" != "2023".
    assert mem0_f1("cat cat cat", "cat") == 1.0
    assert mem0_f1("in 2023:", "2023") == 0.0
    assert mem0_f1("", "x") == 0.0 and mem0_f1("x", "") == 0.0


def test_locomo_f1_stems_counts_repeats_and_drops_and():
    # 'sunsets', 'and' -> stems {'sunset'}; gold 'sunset painting' -> {'sunset', 'paint'}: P=1, R=1/2.
    assert locomo_f1("Sunsets and the", "sunset painting") == pytest.approx(2 / 3)
    # Multisets: 'run run' vs 'running' -> common 1, P=1/2, R=1 -> 2/3.
    assert locomo_f1("run run", "running") == pytest.approx(2 / 3)


def test_locomo_f1_categories():
    # Category 1: gold parts 'pottery', 'camping', 'painting'; prediction parts 'painting', 'pottery'.
    assert locomo_f1("painting, pottery", "Pottery, camping, painting", category=1) == pytest.approx(2 / 3)
    # Category 3: only the text before ';' is gold.
    assert locomo_f1("likely yes", "Likely yes; she mentions it twice", category=3) == 1.0
    assert locomo_f1("likely yes", "Likely yes; she mentions it twice", category=2) < 1.0
    # Category 5: the reply must say the information is not there.
    assert locomo_f1("That was not mentioned.", "anything", category=5) == 1.0
    assert locomo_f1("Paris", "anything", category=5) == 0.0


def test_f1_takes_the_best_gold_accepts_numbers_and_rejects_bad_input():
    assert f1("2022", [2021, 2022]) == 1.0
    assert f1("7 May 2023", ["May 2023", "7 May 2023"]) == 1.0
    assert f1(None, ["x"]) == 0.0
    assert f1("x", []) == 0.0
    with pytest.raises(TypeError, match="bare string"):
        f1("x", "x")
    with pytest.raises(ValueError, match="unknown F1 variant 'bleu'"):
        f1("x", ["x"], variant="bleu")


# --- BLEU-1 ------------------------------------------------------------------------------------


def test_word_tokens_follow_treebank_rules():
    assert word_tokens("I'm sure it's Jon's, isn't it?") == ["i", "'m", "sure", "it", "'s", "jon", "'s", ",", "is", "n't", "it", "?"]
    assert word_tokens("A well-known 3.5 km walk...") == ["a", "well-known", "3.5", "km", "walk", "..."]


def test_bleu1_hand_computed():
    # Same length (6 tokens each): BP = 1; clipped matches the(2) cat on mat = 5 -> 5/6.
    assert bleu1_single("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)
    # Prediction longer than the gold: BP = 1; 'the' clipped to 1 -> 2 matches of 4 tokens.
    assert bleu1_single("the the the cat", "the cat") == pytest.approx(0.5)
    # Shorter: 2 tokens vs 4, all matching -> BP = exp(1 - 4/2).
    assert bleu1_single("shell necklace", "a shell necklace .") == pytest.approx(math.exp(-1))
    # No unigram match, or nothing predicted: 0 (NLTK returns 0 before smoothing matters).
    assert bleu1_single("rome", "paris") == 0.0 and bleu1_single("", "paris") == 0.0
    assert bleu1("Paris", ["London", "paris"]) == 1.0 and bleu1(None, ["x"]) == 0.0


# --- the judge: parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, label",
    [
        ('{"label": "CORRECT"}', "CORRECT"),
        ('The answer names the same city.\n{"label": "CORRECT"}', "CORRECT"),
        ('```json\n{"label": "WRONG"}\n```', "WRONG"),
        ("{'label': 'correct'}", "CORRECT"),
        ('{"reason": "different year", "label": "Wrong."}', "WRONG"),
        ('{"result": {"label": "WRONG"}}', "WRONG"),
        ("label: CORRECT", "CORRECT"),
        ('{"label": CORRECT}', "CORRECT"),  # broken JSON, unquoted value
        ("The years differ, so this is WRONG.", "WRONG"),
        ("correct", "CORRECT"),
    ],
)
def test_parse_judge_reply_reads_every_form(reply, label):
    verdict = parse_judge_reply(reply)
    assert verdict.label == label and verdict.correct is (label == "CORRECT")
    assert verdict.error is None and verdict.raw == reply


@pytest.mark.parametrize(
    "reply, error",
    [
        ("", "empty judge reply"),
        ("I am not sure about this one.", "no CORRECT/WRONG label"),
        ("CORRECT or WRONG, hard to say", "both CORRECT and WRONG"),
        ('{"label": "PARTIAL"}', "neither CORRECT nor WRONG"),
        ('{"label": "CORRECT"} {"label": "WRONG"}', "conflicting labels"),
        ("the answer is correct but the date is wrong", "no CORRECT/WRONG label"),
    ],
)
def test_parse_judge_reply_unreadable_is_recorded_not_raised(reply, error):
    verdict = parse_judge_reply(reply)
    assert verdict.correct is None and verdict.label is None and verdict.score is None
    assert error in verdict.error and verdict.raw == reply


# --- the judge: model calls --------------------------------------------------------------------


def _judge_by_gold(prompt: str) -> str:
    """Says CORRECT when the gold's text appears in the generated answer (scripted, not a claim)."""
    # rsplit: the prompt's worked example has a "Gold answer:" line of its own.
    gold = prompt.rsplit("Gold answer: ", 1)[1].split("\n")[0]
    generated = prompt.rsplit("Generated answer: ", 1)[1].split("\n")[0]
    if generated == "ramble":
        return "Hmm, let me think about sunsets."
    return 'Same topic. {"label": "%s"}' % ("CORRECT" if gold.lower() in generated.lower() else "WRONG")


def test_llm_judge_fills_the_prompt_and_batches_in_order():
    model = ScriptedChatModel(responder=_judge_by_gold)
    judge = LLMJudge(model, max_concurrency=2)
    verdicts = judge.batch(
        [
            ("Where did Mel go?", "the park", "She went to the park."),
            ("When?", 2022, "in 2021"),
            ("What?", ["a necklace", "jewelry"], "ramble"),
            ("Who?", "Caroline", None),
        ]
    )
    assert [v.label for v in verdicts] == ["CORRECT", "WRONG", None, "WRONG"]
    assert verdicts[2].error and verdicts[2].raw == "Hmm, let me think about sunsets."
    assert verdicts[3].raw == ""  # no answer: WRONG without a model call
    assert len(model.prompts) == 3
    prompt = next(p for p in model.prompts if "ramble" in p)  # concurrent calls arrive in any order
    assert "Question: What?\nGold answer: a necklace; jewelry\nGenerated answer: ramble\n" in prompt
    assert '{"label": "CORRECT"}' in prompt  # the JSON example survives substitution


class TemperatureScripted(ScriptedChatModel):
    """A scripted model that declares a temperature option, as ChatOpenAI and LocalChatModel do."""

    temperature: float = 0.7


def test_llm_judge_binds_temperature_zero_and_max_tokens_when_the_model_has_them():
    judge = LLMJudge(TemperatureScripted(responder=lambda prompt: "WRONG"), max_tokens=7)
    assert judge.runnable.kwargs == {"temperature": 0.0, "max_tokens": 7}
    scripted = LLMJudge(ScriptedChatModel(responder=lambda prompt: "CORRECT"))  # no temperature field
    assert scripted.runnable is scripted.model
    assert scripted.judge("q", "a", "a").correct is True
    with pytest.raises(ValueError, match="lacks placeholder"):
        LLMJudge(scripted.model, prompt="Question: {question}")


def test_llm_judge_records_a_failed_call():
    def broken(prompt: str) -> str:
        raise ConnectionError("judge endpoint down")

    verdict = LLMJudge(ScriptedChatModel(responder=broken)).judge("q", "gold", "answer")
    assert verdict.correct is None and "ConnectionError: judge endpoint down" in verdict.error


@pytest.mark.embedded
def test_llm_judge_on_the_embedded_model(greedy_model):
    judge = LLMJudge(greedy_model, max_tokens=24)
    assert judge.runnable.kwargs == {"temperature": 0.0, "max_tokens": 24}
    verdict = judge.judge("What did Melanie paint?", "a sunset", "She painted a sunset.")
    assert isinstance(verdict, JudgeVerdict) and isinstance(verdict.raw, str)
    # A 135M judge may or may not follow the format: either a verdict or a recorded error.
    assert (verdict.correct is not None) != (verdict.error is not None)


# --- summary -----------------------------------------------------------------------------------


def test_summary_per_category_on_real_locomo_records():
    samples = load_locomo(LOCOMO_FILE, include_adversarial=True)
    by_category = {}
    for sample in samples:
        by_category.setdefault(sample.meta["category"], sample)
    records = []
    for category, sample in sorted(by_category.items()):
        # Perfect answer on every category; a judge that was unreadable on category 2.
        judge = JudgeVerdict(None, None, "??", "no label") if category == 2 else JudgeVerdict(True, "CORRECT", "{}")
        records.append({"f1": f1(sample.answers[0], sample.answers), "bleu1": bleu1(sample.answers[0], sample.answers), "judge": judge, "meta": sample.meta})
    records.append({"f1": 0.0, "bleu1": 0.0, "judge": {"correct": False}, "meta": records[0]["meta"]})
    summary = summarize_locomo(records)
    included = [c for c in by_category if c != 5]
    assert [c.category for c in summary.categories] == sorted(included)
    assert summary.excluded == (1 if 5 in by_category else 0)
    first = summary.categories[0]
    assert first.count == 2 and first.f1 == 0.5 and first.judge == 0.5
    assert summary.overall.count == len(included) + 1
    assert summary.overall.unjudged == (1 if 2 in by_category else 0)
    assert summary.overall.judged == summary.overall.count - summary.overall.unjudged
    table = locomo_markdown_table(summary)
    assert table.splitlines()[2].startswith(f"| {first.category} {first.name} | 2 | 50.00 |")
    assert table.splitlines()[-1].startswith(f"| overall | {summary.overall.count} |")


def test_summary_rejects_records_without_category_or_scores():
    with pytest.raises(ValueError, match="record 0 has no category"):
        summarize_locomo([{"f1": 1.0, "bleu1": 1.0}])
    with pytest.raises(ValueError, match="record 0 lacks numeric bleu1"):
        summarize_locomo([{"f1": 1.0, "category": 1}])
    with pytest.raises(ValueError, match="judge value must be"):
        summarize_locomo([{"f1": 1.0, "bleu1": 1.0, "category": 1, "judge": "yes"}])
    assert summarize_locomo([{"f1": 1.0, "bleu1": 1.0, "category": 1}]).overall.judge is None
