"""The varied wording of generated conversations: the same facts in other words, and its
held-out splits."""

from __future__ import annotations

import datetime
import hashlib
import json

import pytest

from langgraph_memagent.evals.conversations import generate_conversations
from langgraph_memagent.training import held_out
from langgraph_memagent.training.grpo_multiconv import parse_config, training_dataset
from helpers import turns_of


def test_varied_wording_rewords_the_same_facts_and_leaves_the_plain_splits_byte_for_byte():
    # The plain conversations every committed test2 result was measured on, pinned to their bytes.
    plain_test2 = json.dumps(generate_conversations(6, seed=30_000, entities="test")).encode()
    assert hashlib.sha256(plain_test2).hexdigest() == "e28d34658baf44d8b0f5085570d909ec5c9211ec9a26890d2a1f75c9197e8427"
    plain, varied = (generate_conversations(30, seed=10_000, entities="test", wording=wording) for wording in ("plain", "varied"))
    days_said = {"yesterday": 1, "two days ago": 2, "three days ago": 3}
    reworded_questions = reworded_turns = questions = 0
    for before, after in zip(plain, varied):
        assert [(qa["evidence"], qa["category"]) for qa in before["qa"]] == [(qa["evidence"], qa["category"]) for qa in after["qa"]]
        plain_turns, turns = turns_of(before), turns_of(after)
        assert {dia_id: turn["speaker"] for dia_id, turn in plain_turns.items()} == {dia_id: turn["speaker"] for dia_id, turn in turns.items()}
        for plain_qa, qa in zip(before["qa"], after["qa"]):
            said = [turns[dia_id] for dia_id in qa["evidence"]]
            assert all(turn["speaker"] in qa["question"] for turn in said), (qa, said)
            questions += 1
            reworded_questions += qa["question"] != plain_qa["question"]
            reworded_turns += any(turn["text"] != plain_turns[turn["dia_id"]]["text"] for turn in said)
            if qa["category"] == 2:  # the date the turn's own words give, counted back from its session
                (phrase, days), = [(phrase, days) for phrase, days in days_said.items() if phrase in said[0]["text"]]
                session_day = datetime.datetime.strptime(after["conversation"][f"{said[0]['session']}_date_time"].split(" on ")[1], "%d %B, %Y")
                assert datetime.datetime.strptime(qa["answer"], "%d %B, %Y") == session_day - datetime.timedelta(days=days), (qa, phrase)
            else:
                assert qa["answer"] == plain_qa["answer"]
                if qa["category"] in (1, 4):
                    assert any(qa["answer"] in turn["text"] for turn in said), (qa, said)
    # Each phrasing list starts with the plain one, so some questions stay as they were; a turn is also reworded by what wraps it.
    assert 0.5 < reworded_questions / questions < 0.9 and reworded_turns / questions > 0.8, (reworded_questions, reworded_turns, questions)
    with pytest.raises(ValueError, match="wording must be one of \\['plain', 'varied'\\], got 'loose'"):
        generate_conversations(1, seed=1, wording="loose")
    with pytest.raises(ValueError, match="conversation_wording must be one of \\['plain', 'varied'\\], got 'loose'"):
        parse_config(["--preset", "cpu-sumer", "--conversation_wording", "loose"])


def test_varied_splits_reword_held_out_conversations_and_refuse_other_tasks():
    dev, dev_varied = (held_out.held_out_conversations(split, 12) for split in ("dev", "dev-varied"))
    assert [row["evidence"] for row in dev] == [row["evidence"] for row in dev_varied]
    assert sum(a["document"] != b["document"] for a, b in zip(dev, dev_varied)) == 12
    config = parse_config(["--preset", "cpu-smoke", "--output_dir", "unused"])
    with pytest.raises(SystemExit, match="split 'dev-varied' rewords generated conversations; task 'niah_multikey_1' has no wording"):
        held_out.held_out_records(config, None, "dev-varied", 2)
    trained = training_dataset(parse_config(["--preset", "cpu-sumer", "--num_train_samples", "4", "--conversation_wording", "varied"]), None)
    assert trained[0]["document"] != training_dataset(parse_config(["--preset", "cpu-sumer", "--num_train_samples", "4"]), None)[0]["document"]

