"""Training the SUMER and AgeMem tool loops: every LLM call of a rollout is one row with its rollout's advantage.

Two kinds of policy:

* a scripted engine behind the real ``LocalChatModel`` (the real tool rendering, the
  real tool-call parser, the real token ids of the SmolLM2 tokenizer; only the text
  each call generates is decided by a script), so a rollout can be steered through a
  valid tool call, a malformed one and the forced answer at the turn cap;
* the tiny random Llama of ``test_training.py``, served by the trainer itself, for
  real rollouts and one real optimizer step.
"""

from __future__ import annotations

import threading

import pytest
import torch
from langgraph_memagent.agents.local_model import LocalChatModel
from langgraph_memagent.training.rewards import JudgeFreeSumerReward, SubmittedAnswersOnly
from langgraph_memagent.graphs.registry import GRAPHS
from langgraph_memagent.training.config import MultiConvGRPOConfig
from langgraph_memagent.training.presets import PRESETS
from langgraph_memagent.training.data import load_training_file
from langgraph_memagent.training.grpo_multiconv import parse_config
from langgraph_memagent.training.rollout_graphs import context_budget, default_reward, rollout_graph
from langgraph_memagent.training.rows import group_advantages, rollout_group_ids, rollout_rows
from langgraph_memagent.training.agemem_reward import AgeMemReward
from langgraph_memagent.training.rewards import SumerReward
from langgraph_memagent.training.rollouts import run_rollouts
from scripted_model import ScriptedChatModel
from helpers import AGEMEM_FORCED, make_trainer, scripted_policy, tiny_config

SUMER_FORCED = "You cannot search any more"  # from SUMER_FORCED_ANSWER_TEMPLATE
MALFORMED_SEARCH = '<tool_call>\n{"name": "search_memory", "arguments": {"query": </tool_call>'


def decoded(tokenizer, ids) -> str:
    return tokenizer.decode(ids)


def rows_by_rollout(rollouts, advantages):
    """The advantages of each rollout's rows, split in rollout order."""
    rows = rollout_rows(rollouts, advantages)
    assert len(rows) == sum(len(r.calls) for r in rollouts)
    per_rollout, start = [], 0
    for rollout in rollouts:
        per_rollout.append(rows.advantages[start : start + len(rollout.calls)])
        assert rows.completion_ids[start : start + len(rollout.calls)] == [c.completion_ids for c in rollout.calls]
        start += len(rollout.calls)
    return per_rollout


# ---------------------------------------------------------------------------------------
# Scripted policy through the real LocalChatModel: tool turns, malformed calls, forced answers
# ---------------------------------------------------------------------------------------
def test_sumer_rollout_rows_include_malformed_call_and_forced_answer(tiny_tokenizer, tiny_dataset, tmp_path):
    sample = tiny_dataset[0]
    gold = sample["answers"][0]
    forced_answers = iter([gold, "17"])  # one rollout of the group is right, the other wrong
    lock = threading.Lock()

    def script(prompt: str) -> str:
        if SUMER_FORCED in prompt:
            with lock:
                return f"The number is \\boxed{{{next(forced_answers)}}}."
        if "<tool_response" not in prompt:
            return '<tool_call>\n{"name": "search_memory", "arguments": {"query": "special magic number"}}\n</tool_call>'
        return MALFORMED_SEARCH

    config = tiny_config(tmp_path, graph="sumer", reward_metric="f1", max_turns=2, turn_tokens=64, answer_tokens=32)
    graph = rollout_graph(scripted_policy(tiny_tokenizer, script), config, tiny_tokenizer)
    inputs = [GRAPHS["sumer"].graph_input(sample)] * 2
    rollouts = run_rollouts(graph, inputs, rollout_group_ids(2, 2))
    for rollout in rollouts:
        out = rollout.output
        assert (out["stop_reason"], out["forced_answer"], out["turns_used"], out["tool_calls"]) == ("turn_limit", True, 2, 1)
        assert len(rollout.calls) == out["usage"]["llm_calls"] == 3  # search turn, malformed turn, forced answer
        search, malformed, forced = rollout.calls
        # The malformed call is the policy's own completion, kept whole as a row.
        assert decoded(tiny_tokenizer, malformed.completion_ids).startswith(MALFORMED_SEARCH)
        # Earlier tool results are inside the next prompt (prompt tokens: no loss on them).
        assert "search 'special magic number'" in decoded(tiny_tokenizer, malformed.prompt_ids)
        assert len(malformed.prompt_ids) > len(search.prompt_ids)
        assert "<tools>" in decoded(tiny_tokenizer, search.prompt_ids)
        forced_prompt = decoded(tiny_tokenizer, forced.prompt_ids)
        assert SUMER_FORCED in forced_prompt and "<tools>" not in forced_prompt  # the forced call offers no tools
    # SUMER's own rule: forced answers were never submitted, so both rollouts score -1 ...
    assert default_reward(config).batch([r.output for r in rollouts], [sample] * 2) == [-1.0, -1.0]
    # ... and scoring the forced answers too gives the group a spread.
    reward = default_reward(tiny_config(tmp_path, graph="sumer", reward_metric="f1", sumer_require_submit=False))
    assert isinstance(reward, JudgeFreeSumerReward)
    rewards = torch.tensor([reward(r.output, sample) for r in rollouts])
    assert sorted(rewards.tolist()) == [0.0, 1.0]
    advantages = group_advantages(rewards, torch.tensor([r.group_id for r in rollouts]))
    for rollout, advantage, rows in zip(rollouts, advantages.tolist(), rows_by_rollout(rollouts, advantages.tolist())):
        expected = 0.5 if rollout.output["answer"] == gold else -0.5
        assert advantage == expected and rows == [expected] * 3


def test_agemem_rollout_rows_cover_all_stages_and_the_forced_answer(tiny_tokenizer, tiny_dataset, tmp_path):
    sample = tiny_dataset[0]

    def script(prompt: str) -> str:
        if AGEMEM_FORCED in prompt:
            return "\\boxed{4242}"
        if "Stage 1 of 3" in prompt:
            return '<tool_call>\n{"name": "add_memory", "arguments": {"content": "a magic number"}}\n</tool_call>'
        if "Stage 2 of 3" in prompt:
            return "Noted."
        return '<tool_call>\n{"name": "retrieve_memory", "arguments": {"query": </tool_call>'

    # 8-token stage-1 messages: the ~20-token document arrives in several pieces.
    config = tiny_config(tmp_path, graph="agemem", chunk_tokens=8, agemem_turns_per_message=1, max_turns=8,
                         agemem_distractor_messages=1, turn_tokens=64, max_context_tokens=1900)
    graph = rollout_graph(scripted_policy(tiny_tokenizer, script), config, tiny_tokenizer)
    (rollout,) = run_rollouts(graph, [GRAPHS["agemem"].graph_input(sample)], [0])
    out = rollout.output
    chunks = out["stage_turns"]["build"]
    assert chunks >= 2 and out["stage_turns"] == {"build": chunks, "distract": 1, "answer": 1}
    assert out["tool_calls"] == {"add_memory": chunks, "invalid": 1}
    assert out["answer"] == "4242" and out["memory_items"] == ["a magic number"] * chunks
    # Every call is a row: one per stage-1 chunk, the distractor, the malformed answer turn, the forced answer.
    assert len(rollout.calls) == out["usage"]["llm_calls"] == chunks + 3
    texts = [decoded(tiny_tokenizer, call.completion_ids) for call in rollout.calls]
    assert texts[-2].startswith('<tool_call>\n{"name": "retrieve_memory"') and texts[-1].startswith("\\boxed{4242}")
    assert "Stage 3 of 3" in decoded(tiny_tokenizer, rollout.calls[-2].prompt_ids)
    (rows,) = rows_by_rollout([rollout], [0.25])
    assert rows == [0.25] * (chunks + 3)
    reward = default_reward(config)
    assert isinstance(reward, AgeMemReward) and reward.context_limit == 1900
    assert reward(out, sample) == pytest.approx(reward.last_parts.total)


# ---------------------------------------------------------------------------------------
# The trainer with the tiny random Llama: real rollouts, one real step
# ---------------------------------------------------------------------------------------
def correct_judge() -> ScriptedChatModel:
    return ScriptedChatModel(responder=lambda prompt: '{"label": "CORRECT"}')


def check_rows_share_advantages(trainer, inputs):
    """Rollouts of ``inputs`` on the trainer's policy: rows == LLM calls, each rollout's rows share its advantage."""
    group_ids = rollout_group_ids(len(inputs), trainer.num_generations)
    rollouts = trainer._run_rollouts(inputs, group_ids, 0)
    rewards = trainer.rollout_reward.batch([r.output for r in rollouts], inputs) if hasattr(
        trainer.rollout_reward, "batch") else [trainer.rollout_reward(r.output, s) for r, s in zip(rollouts, inputs)]
    for rollout, reward in zip(rollouts, rewards):
        rollout.reward = reward
        assert len(rollout.calls) == rollout.output["usage"]["llm_calls"] >= 1
    calls = [len(r.calls) for r in rollouts]
    batch = trainer._batch_from_rollouts(rollouts, "train")
    assert trainer._metrics["train"]["rows"][-1] == sum(calls)
    advantages = group_advantages(torch.tensor(rewards), torch.tensor(group_ids)).tolist()
    start = 0
    for count, advantage in zip(calls, advantages):
        assert batch["advantages"][start : start + count].tolist() == pytest.approx([advantage] * count)
        assert (batch["completion_mask"][start : start + count].sum(dim=1) > 0).all()
        start += count
    assert batch["advantages"][start:].abs().sum() == 0  # padding rows only
    return rollouts


def test_sumer_trainer_rollouts_and_one_step_with_a_judge(tiny_model_dir, tiny_dataset, tmp_path):
    # The tiny model never calls a tool: score its tool-free replies, so the judge is asked.
    config = tiny_config(tmp_path, graph="sumer", reward_metric=None, turn_tokens=8, answer_tokens=4, max_turns=2,
                         sumer_require_submit=False)
    judge = correct_judge()
    reward = default_reward(config, judge=judge)
    assert isinstance(reward, SumerReward)
    trainer = make_trainer(tiny_model_dir, tiny_dataset, config, reward_fn=reward)
    assert config.max_context_tokens == 2048 - 8  # the tiny policy's window minus one turn
    inputs = [tiny_dataset[0], tiny_dataset[0], tiny_dataset[1], tiny_dataset[1]]
    rollouts = check_rows_share_advantages(trainer, inputs)
    answered = sum(bool(r.output["answer"]) for r in rollouts)
    assert len(judge.prompts) == answered  # every submitted answer was judged, in one batch
    trainer.train()
    logged = trainer.state.log_history[0]
    assert -1.0 <= logged["reward"] <= 1.0 and logged["rows"] >= 4
    assert "kl" not in logged and config.beta == 0.0  # SUMER's recipe has no KL term
    assert len(judge.prompts) > answered  # the training step judged its own rollouts


def test_agemem_trainer_rollouts_use_the_configured_limits(tiny_model_dir, tiny_dataset, tmp_path):
    # One group of two rollouts per step: the step only has to log, and its loss pass over the
    # vocabulary (TRL's chunked log-probs) is most of this test's time.
    config = tiny_config(tmp_path, graph="agemem", reward_metric=None, turn_tokens=8, agemem_turns_per_message=1,
                         max_turns=4, agemem_distractor_messages=1, per_device_train_batch_size=2)
    trainer = make_trainer(tiny_model_dir, tiny_dataset, config)
    assert config.max_context_tokens == 2048 - 8 and config.agemem_turn_limit == 4
    reward = trainer.rollout_reward
    assert isinstance(reward, AgeMemReward) and (reward.context_limit, reward.turn_limit) == (2040, 4)
    rollouts = check_rows_share_advantages(trainer, [tiny_dataset[0], tiny_dataset[0]])
    for rollout in rollouts:
        # At least one call per stage-1 chunk, per distractor and for the question.
        assert sum(rollout.output["stage_turns"].values()) >= 3
    # A training step logs AgeMem's tool use (its calls are counted by tool name) and each reward part.
    trainer.train()
    logged = trainer.state.log_history[0]
    assert {"tools/tool_calls", "tools/memory_items", "reward/task", "reward/context", "reward/memory", "reward/penalty"} <= set(logged)


def test_langmem_rollout_rows_are_its_extraction_calls_and_its_answer(tiny_tokenizer, tmp_path):
    """``--graph langmem``: every LangMem extraction call and the answer call are rows of one rollout, sharing its advantage."""
    from langgraph_memagent.training.data import conversation_records

    sample = conversation_records(1, seed=3, entities="train")[0]
    gold = sample["answers"][0]

    def script(prompt: str) -> str:
        if "<tools>" in prompt:  # LangMem's memory manager, with its memory tools bound
            return '<tool_call>\n{"name": "Memory", "arguments": {"content": "' + gold + '"}}\n</tool_call>'
        return f"\\boxed{{{gold}}}"

    config = tiny_config(tmp_path, graph="langmem", reward_metric="f1", answer_tokens=32)
    graph = rollout_graph(scripted_policy(tiny_tokenizer, script), config, tiny_tokenizer)
    rollouts = run_rollouts(graph, [GRAPHS["langmem"].graph_input(sample)] * 2, rollout_group_ids(2, 2))
    sessions = len({turn["session"] for turn in sample["turns"]})
    for rollout in rollouts:
        out = rollout.output
        assert out["extraction_calls"] >= sessions and out["memories"] >= 1 and out["answer"] == gold
        assert len(rollout.calls) == out["usage"]["llm_calls"] == out["extraction_calls"] + 1
        assert "<tools>" in decoded(tiny_tokenizer, rollout.calls[0].prompt_ids)
        assert "<tools>" not in decoded(tiny_tokenizer, rollout.calls[-1].prompt_ids)
    advantages = [0.5, -0.5]
    for rollout, rows in zip(rollouts, rows_by_rollout(rollouts, advantages)):
        assert rows == [advantages[rollouts.index(rollout)]] * len(rollout.calls)


# ---------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------
def test_sumer_without_a_judge_is_a_clear_error(tiny_model_dir, tiny_dataset, tmp_path):
    config = tiny_config(tmp_path, graph="sumer", reward_metric=None)
    with pytest.raises(ValueError, match="graph 'sumer' needs an LLM judge.*set judge_model.*reward_metric='f1'"):
        make_trainer(tiny_model_dir, tiny_dataset, config)
    with pytest.raises(ValueError, match="reward_metric for graph 'sumer' must be unset .* got 'string_match_all'"):
        tiny_config(tmp_path, graph="sumer")  # tiny_config's MemAgent metric is no SUMER reward
    with pytest.raises(ValueError, match="both judge_model='smollm2-135m' .* and reward_metric='f1'"):
        tiny_config(tmp_path, graph="sumer", reward_metric="f1", judge_model="smollm2-135m")
    judged = default_reward(tiny_config(tmp_path, graph="sumer", reward_metric=None, judge_model="smollm2-135m"))
    assert isinstance(judged, SubmittedAnswersOnly) and isinstance(judged.reward, SumerReward)
    assert isinstance(judged.reward.judge.model, LocalChatModel)  # built from the spec, weights not loaded yet
    fallback = default_reward(tiny_config(tmp_path, graph="sumer", reward_metric="f1"))
    assert isinstance(fallback.reward, JudgeFreeSumerReward)


def test_graph_defaults_command_line_and_help(capsys):
    memagent = MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False)
    assert (memagent.chunk_tokens, memagent.reward_metric, memagent.max_completion_length) == (5000, "strict_boxed", 1024)
    sumer = parse_config(["--preset", "cpu-smoke", "--graph", "sumer", "--judge_model", "smollm2-135m",
                          "--output_dir", "/tmp/x", "--max_turns", "6"])
    # The preset's MemAgent-only reward and chunk size are not applied to SUMER.
    assert (sumer.reward_metric, sumer.chunk_tokens, sumer.turn_tokens, sumer.max_turns) == (None, 200, 1024, 6)
    assert sumer.max_completion_length == 1024 and sumer.learning_rate == PRESETS["cpu-smoke"]["learning_rate"]
    # Each graph trains with its paper's recipe (SUMER: no KL, clip-high 0.28, std-normalised advantage, G = 8)
    # unless told otherwise; before, SUMER inherited MemAgent's.
    assert (sumer.beta, sumer.epsilon_high, sumer.scale_rewards, sumer.num_generations) == (0.0, 0.28, "group", 8)
    assert (memagent.beta, memagent.epsilon_high, memagent.scale_rewards, memagent.num_generations) == (1e-3, 0.2, "none", 16)
    overridden = parse_config(["--graph", "sumer", "--reward_metric", "f1", "--output_dir", "/tmp/x", "--beta", "0.01", "--scale_rewards", "none"])
    assert (overridden.beta, overridden.scale_rewards, overridden.num_generations) == (0.01, "none", 8)
    agemem = parse_config(["--graph", "agemem", "--output_dir", "/tmp/x", "--turn_tokens", "128"])
    assert (agemem.chunk_tokens, agemem.reward_metric, agemem.max_completion_length, agemem.agemem_turn_limit) == (512, "f1", 128, 32)
    assert context_budget(agemem, 8192) == 4096 and context_budget(agemem, 1024) == 1024 - 128
    with pytest.raises(ValueError, match="a 128-token turn leaves no room in the model's 100-token window"):
        context_budget(agemem, 100)
    # A given budget must leave the turn room in the window; before, a preset's 3072 ran a 2048-token model over.
    sumer_preset = parse_config(["--preset", "cpu-sumer", "--output_dir", "/tmp/x"])
    assert (sumer_preset.max_context_tokens, context_budget(sumer_preset, 8192)) == (3072, 3072)
    with pytest.raises(ValueError, match="max_context_tokens=3072 leaves no room for a 128-token turn in the model's 2048-token window: at most 1920"):
        context_budget(sumer_preset, 2048)
    with pytest.raises(ValueError, match="max_turns must be a positive integer, got 0"):
        MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="sumer", reward_metric="f1", max_turns=0)
    with pytest.raises(SystemExit):
        parse_config(["--help"])
    shown = capsys.readouterr().out
    for option in ("--judge_model", "--max_turns", "--turn_tokens", "--max_context_tokens"):
        assert option in shown, option
    assert "sumer 0.28 (SUMER paper: clip-high 0.28)" in " ".join(shown.split())


def test_an_option_of_another_graph_is_refused_in_one_line():
    # Before, --agemem_retrieve_reply best with --graph sumer was taken and changed nothing.
    with pytest.raises(ValueError, match="search_reply is an option of graph 'sumer' and does nothing with graph 'agemem', got 'plain': drop it"):
        parse_config(["--preset", "cpu-agemem", "--output_dir", "/tmp/x", "--search_reply", "plain"])
    with pytest.raises(ValueError, match="max_turns is an option of graphs 'sumer', 'agemem' and does nothing with graph 'memagent', got 8"):
        MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, max_turns=8)
    # An option at its default passes with any graph; AgeMem's turn limit is filled in for AgeMem alone.
    sumer = parse_config(["--preset", "cpu-sumer", "--output_dir", "/tmp/x", "--agemem_retrieve_reply", "scored"])
    assert (sumer.agemem_retrieve_reply, sumer.agemem_turn_limit) == ("scored", None)
    # A preset's own graph options stay with its graph when --graph names another; the options both graphs
    # read (turns, the tool choice) carry over.
    switched = parse_config(["--preset", "cpu-agemem", "--graph", "sumer", "--reward_metric", "f1", "--output_dir", "/tmp/x"])
    assert (switched.graph, switched.max_turns, switched.tool_choice, switched.agemem_turns_per_message) == ("sumer", 12, "required", 2)


def test_training_file_keeps_conversation_turns(tmp_path):
    path = tmp_path / "locomo.jsonl"
    path.write_text(
        '{"question": "Where?", "document": "Ann: Oslo", "answers": ["Oslo"],'
        ' "meta": {"turns": [{"speaker": "Ann", "text": "I live in Oslo", "session": 1}]}}\n'
    )
    (record,) = load_training_file(path)
    assert record["turns"] == [{"speaker": "Ann", "text": "I live in Oslo", "session": 1}]
    assert GRAPHS["agemem"].graph_input(record)["turns"] == record["turns"]
    assert "turns" not in GRAPHS["memagent"].graph_input(record)
