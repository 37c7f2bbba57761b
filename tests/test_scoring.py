"""Tests for langgraph_memagent.evals.scoring (strict verifier, lenient and RULER metrics)."""

from __future__ import annotations

import pytest

from langgraph_memagent.evals import scoring
from langgraph_memagent.evals.scoring import (
    METRICS,
    best_over_answers,
    exact_match,
    normalize_answer,
    postprocess_prediction,
    score,
    strict_boxed_score,
    string_match_all,
    string_match_part,
    sub_exact_match,
    token_f1,
)

# --- strict (training) verifier -------------------------------------------------------------


def test_strict_nested_braces():
    assert strict_boxed_score(r"so \boxed{\frac{1}{2}}", [r"\frac{1}{2}"]) == 1.0
    assert strict_boxed_score(r"so \boxed{\frac{1}{2}}", ["1/2"]) == 0.0


def test_strict_last_box_wins():
    reply = r"maybe \boxed{Rome}, no: \boxed{Paris}"
    assert strict_boxed_score(reply, ["Paris"]) == 1.0
    assert strict_boxed_score(reply, ["Rome"]) == 0.0


def test_strict_box_outside_last_300_chars_scores_zero():
    reply = r"\boxed{Paris}" + " padding" * 50
    assert len(reply) > 300 + len(r"\boxed{Paris}")
    assert strict_boxed_score(reply, ["Paris"]) == 0.0
    assert strict_boxed_score(reply[-300:] + r" \boxed{Paris}", ["Paris"]) == 1.0


def test_strict_box_cut_by_tail_window_scores_zero():
    # The opening of the box falls just outside the window: no box is seen at all.
    reply = r"\boxed{Paris" + "x" * 295 + "}"
    assert strict_boxed_score(reply, ["Paris" + "x" * 295]) == 0.0


def test_strict_case_insensitive():
    assert strict_boxed_score(r"\boxed{PARIS}", ["paris"]) == 1.0
    assert strict_boxed_score(r"\boxed{paris}", ["Paris"]) == 1.0


def test_strict_whitespace_and_left_right():
    assert strict_boxed_score(r"\boxed{ \left( 1 ,  2 \right) }", ["(1,2)"]) == 1.0
    assert strict_boxed_score(r"\boxed{New York}", ["NewYork"]) == 1.0
    assert strict_boxed_score(r"\boxed{50\%}", ["50"]) == 1.0
    assert strict_boxed_score(r"\boxed{\$5}", ["5"]) == 1.0


def test_strict_dfrac_tfrac_equal_frac():
    assert strict_boxed_score(r"\boxed{\dfrac{3}{4}}", [r"\frac{3}{4}"]) == 1.0
    assert strict_boxed_score(r"\boxed{\frac{3}{4}}", [r"\tfrac{3}{4}"]) == 1.0


def test_strict_no_box_or_empty_box_scores_zero():
    assert strict_boxed_score("The answer is Paris", ["Paris"]) == 0.0
    assert strict_boxed_score(r"\boxed{Paris", ["Paris"]) == 0.0  # unclosed
    assert strict_boxed_score(r"\boxed{ }", [" "]) == 0.0


def test_strict_is_not_lenient_about_articles():
    assert strict_boxed_score(r"\boxed{The Beatles}", ["Beatles"]) == 0.0


def test_strict_any_gold_and_numeric_gold():
    assert strict_boxed_score(r"\boxed{NYC}", ["New York", "NYC"]) == 1.0
    assert strict_boxed_score(r"\boxed{1969}", [1969]) == 1.0


# --- lenient (test) metrics -----------------------------------------------------------------


def test_normalize_answer():
    assert normalize_answer("  The  Cat, a Dog and AN apple!  ") == "cat dog and apple"
    assert normalize_answer("theater") == "theater"  # only whole-word articles go
    assert normalize_answer("the.") == ""


def test_articles_and_punctuation_ignored():
    assert exact_match("The Beatles!", "beatles") == 1.0
    assert exact_match("U.S.A.", "USA") == 1.0
    assert exact_match("Beatles", "Rolling Stones") == 0.0


@pytest.mark.parametrize("metric", [exact_match, sub_exact_match, token_f1])
@pytest.mark.parametrize("prediction", ["", "   ", "the", "?!", "a an the ."])
def test_empty_prediction_scores_zero(metric, prediction):
    # The reference would give sub-EM credit: "" is a substring of every gold.
    assert metric(prediction, "Paris") == 0.0
    assert metric(prediction, "") == 0.0
    assert metric(prediction, "the") == 0.0


def test_empty_gold_gives_no_credit():
    assert sub_exact_match("Paris", "the") == 0.0
    assert exact_match("Paris", "") == 0.0
    assert token_f1("Paris", "") == 0.0


def test_sub_exact_match_both_directions():
    assert sub_exact_match("It was in Paris, France.", "Paris") == 1.0
    assert sub_exact_match("Paris", "Paris, France") == 1.0
    assert sub_exact_match("Lyon", "Paris") == 0.0


def test_token_f1_value():
    assert token_f1("Barack Obama Jr", "Barack Obama") == pytest.approx(0.8)
    assert token_f1("the Barack Obama", "Obama Barack") == 1.0
    assert token_f1("Lyon", "Paris") == 0.0


def test_token_f1_yes_no_rule():
    assert token_f1("yes", "yes") == 1.0
    assert token_f1("Yes.", "yes") == 1.0
    assert token_f1("yes", "no") == 0.0
    # Overlapping tokens would score 0.67 without the rule.
    assert token_f1("yes it is", "yes") == 0.0
    assert token_f1("no", "no way") == 0.0
    assert token_f1("noanswer", "noanswer") == 1.0


def test_max_over_several_golds():
    golds = ["New York City", "NYC", "Big Apple"]
    assert best_over_answers(exact_match, "nyc", golds) == 1.0
    assert best_over_answers(token_f1, "New York", golds) == pytest.approx(0.8)
    assert best_over_answers(exact_match, "Boston", golds) == 0.0
    assert best_over_answers(exact_match, "Boston", []) == 0.0


def test_numeric_golds():
    assert best_over_answers(exact_match, "1969", [1969]) == 1.0
    assert score("in 1969", [1969, 1970], "sub_exact_match") == 1.0
    assert score("3.5", [3.5], "f1") == 1.0
    assert score("answer 42", [42], "string_match_all") == 1.0


# --- RULER metrics --------------------------------------------------------------------------


def test_string_match_all_partial_fraction():
    assert string_match_all("1234 and 5678", ["1234", "5678", "0000", "9999"]) == 0.5
    assert string_match_all("1234 and 5678", ["1234", "5678"]) == 1.0
    assert string_match_all("nothing", ["1234"]) == 0.0
    assert string_match_all("anything", []) == 0.0


def test_string_match_all_case_insensitive():
    assert string_match_all("KEY-ALPHA and key-beta", ["key-alpha", "KEY-BETA"]) == 1.0


def test_postprocess_control_characters():
    assert postprocess_prediction("\n  abc\x00def\x1f  \t") == "abc\ndef"
    assert postprocess_prediction("\x07x\x07") == "x"
    # A control char between two halves of a gold splits it, as in RULER.
    assert string_match_all("12\x0034", ["1234"]) == 0.0
    assert string_match_all("12\x0034", ["12", "34"]) == 1.0


def test_string_match_part():
    assert string_match_part("The value is 42", ["42", "17"]) == 1.0
    assert string_match_part("The VALUE", ["value"]) == 1.0
    assert string_match_part("nothing", ["42", "17"]) == 0.0
    assert string_match_part("anything", []) == 0.0


# --- score() entry point --------------------------------------------------------------------


def test_metrics_tuple_matches_dispatch():
    assert METRICS == (
        "strict_boxed",
        "exact_match",
        "sub_exact_match",
        "f1",
        "string_match_all",
        "string_match_part",
    )
    assert set(METRICS) == set(scoring._SCORERS)


@pytest.mark.parametrize(
    ("prediction", "answers", "metric", "expected"),
    [
        (r"reasoning... \boxed{Paris}", ["paris"], "strict_boxed", 1.0),
        ("Paris", ["paris"], "strict_boxed", 0.0),  # strict needs a box
        ("the Paris", ["Paris"], "exact_match", 1.0),
        ("Paris, France", ["Paris"], "sub_exact_match", 1.0),
        ("Barack Obama Jr", ["Barack Obama"], "f1", pytest.approx(0.8)),
        ("a b", ["A", "B", "C", "D"], "string_match_all", 0.5),
        ("a", ["x", "A"], "string_match_part", 1.0),
    ],
)
def test_score_dispatch(prediction, answers, metric, expected):
    assert score(prediction, answers, metric) == expected


@pytest.mark.parametrize("metric", METRICS)
def test_none_prediction_scores_zero(metric):
    assert score(None, ["Paris"], metric) == 0.0


def test_unknown_metric_error_message():
    with pytest.raises(ValueError) as info:
        score("x", ["x"], "accuracy")
    message = str(info.value)
    assert "'accuracy'" in message
    assert all(name in message for name in METRICS)
    # Also raised when there is no prediction, so typos never pass silently.
    with pytest.raises(ValueError, match="accuracy"):
        score(None, ["x"], "accuracy")


@pytest.mark.parametrize("metric", METRICS)
def test_bare_string_answers_rejected(metric):
    with pytest.raises(TypeError, match="bare string"):
        score("Paris", "Paris", metric)
    with pytest.raises(TypeError, match="bare string"):
        score(None, "Paris", metric)


def test_bare_string_answers_rejected_by_direct_functions():
    for call in (
        lambda: strict_boxed_score(r"\boxed{a}", "a"),
        lambda: best_over_answers(exact_match, "a", "a"),
        lambda: string_match_all("a", "abc"),
        lambda: string_match_part("a", "abc"),
    ):
        with pytest.raises(TypeError):
            call()
