"""Multi-conversation GRPO: advantages, rows, loss, grouping, padding, LoRA updates, a real 2-step run.

The trainer is TRL's real GRPOTrainer subclass on a tiny randomly initialised Llama
(2 layers, hidden 64) that uses the embedded SmolLM2 tokenizer, so every step runs
the real code paths (rollouts through the MemAgent graph on the policy module, TRL's
log-prob helper and loss) in seconds.
"""

from __future__ import annotations

import json
import math
import warnings

import pytest
import torch

from langgraph_memagent.training.config import MultiConvGRPOConfig
from langgraph_memagent.training.presets import PRESETS
from langgraph_memagent.training.data import generate_samples, load_training_file
from langgraph_memagent.training.grpo_multiconv import parse_config, training_dataset
from langgraph_memagent.training.rows import group_advantages, pad_rows, rollout_group_ids, rollout_rows, rows_to_tensors
from langgraph_memagent.training.trainer import MultiConvGRPOTrainer
from langgraph_memagent.training.rewards import AnswerReward
from langgraph_memagent.training.rollout_graphs import default_reward
from langgraph_memagent.training.prefix_packing import packed_length
from langgraph_memagent.training.rollouts import LLMCall, MissingTokenIdsError, Rollout, run_rollouts
from helpers import make_trainer, tiny_config


def rollout(rollout_id: int, group: int, lengths: list[int], reward: float) -> Rollout:
    """A rollout whose calls have the given completion lengths (token ids are arbitrary but valid)."""
    calls = [LLMCall([10 + i, 11, 12], [100 + j for j in range(n)], "x") for i, n in enumerate(lengths)]
    return Rollout(rollout_id, group, calls, {"response": ""}, reward)


# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------
def test_group_advantages_by_hand_including_all_equal_groups():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    # Groups are ids, not positions: group 7 is interleaved with group 3; group 5 is all zeros.
    groups = torch.tensor([7, 7, 7, 3, 3, 5, 5])
    expected = [2 / 3, -1 / 3, -1 / 3, 0.0, 0.0, 0.0, 0.0]
    assert group_advantages(rewards, groups).tolist() == pytest.approx(expected)
    interleaved = group_advantages(torch.tensor([1.0, 1.0, 0.0, 0.0]), torch.tensor([0, 1, 0, 1]))
    assert interleaved.tolist() == pytest.approx([0.5, 0.5, -0.5, -0.5])
    scaled = group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), torch.tensor([0, 0, 1, 1]), scale="group")
    std = math.sqrt(0.5)  # unbiased std of (1, 0)
    assert scaled.tolist() == pytest.approx([0.5 / (std + 1e-4), -0.5 / (std + 1e-4), 0.0, 0.0])


def test_groups_come_from_rollout_group_not_trajectory():
    # 2 processes x 4 rollouts, G = 4: the second process's rollouts continue group 1.
    assert rollout_group_ids(4, 4, first_rollout=4) == [1, 1, 1, 1]
    assert rollout_group_ids(6, 2) == [0, 0, 1, 1, 2, 2]
    rollouts = [rollout(i, group, [2] * (i + 1), reward) for i, (group, reward) in enumerate([(0, 1.0), (0, 0.0)])]
    groups = torch.tensor([r.group_id for r in rollouts])
    advantages = group_advantages(torch.tensor([r.reward for r in rollouts]), groups)
    # By trajectory each group would be a singleton and the advantage zero; by group it is +-0.5.
    assert advantages.tolist() == [0.5, -0.5]


def test_every_call_is_a_row_with_its_rollouts_advantage_and_own_mask():
    rollouts = [rollout(0, 0, [3, 1, 2], 1.0), rollout(1, 0, [2], 0.0)]
    rows = rollout_rows(rollouts, [0.5, -0.5])
    assert rows.advantages == [0.5, 0.5, 0.5, -0.5]
    assert rows.rollout_index == [0, 0, 0, 1]
    assert rows.token_weights == [1.0, 1.0, 1.0, 1.0]  # the token mean, the default
    batch = rows_to_tensors(rows, pad_token_id=0)
    assert batch["completion_mask"].sum(dim=1).tolist() == [3, 1, 2, 2]  # each row keeps its own length
    assert batch["prompt_mask"].sum(dim=1).tolist() == [3, 3, 3, 3]
    # Per-rollout mean: rollout 0 has 6 tokens, rollout 1 has 2; 8 tokens, 2 rollouts.
    weighted = rollout_rows(rollouts, [0.5, -0.5], loss_aggregation="rollout")
    assert weighted.token_weights == pytest.approx([8 / 12, 8 / 12, 8 / 12, 8 / 4])


def test_sumer_loss_defaults_to_its_papers_mean_of_trajectory_token_sums(tmp_path):
    # Rollout 0: 6 tokens, advantage 0.5; rollout 1: 2 tokens, advantage -0.5. At ratio 1 a token's
    # loss is -A, and TRL's dapo loss is sum(loss * mask * weight) / (all 8 tokens).
    rollouts = [rollout(0, 0, [3, 1, 2], 1.0), rollout(1, 0, [2], 0.0)]

    def dapo_loss(aggregation):
        batch = rows_to_tensors(rollout_rows(rollouts, [0.5, -0.5], loss_aggregation=aggregation), pad_token_id=0)
        mask = batch["completion_mask"]
        return ((-batch["advantages"][:, None]) * mask * batch["token_weights"]).sum().item() / mask.sum().item()

    assert rollout_rows(rollouts, [0.5, -0.5], loss_aggregation="rollout_sum").token_weights == [4.0] * 4  # 8 tokens / 2 rollouts
    assert dapo_loss("token") == pytest.approx((-0.5 * 6 + 0.5 * 2) / 8)  # token mean: -0.25
    assert dapo_loss("rollout_sum") == pytest.approx((-0.5 * 6 + 0.5 * 2) / 2)  # SUMER: mean of the token sums, -1.0
    assert dapo_loss("rollout") == pytest.approx((-0.5 + 0.5) / 2, abs=1e-6)  # each rollout's token mean: 0.0
    sumer = dict(output_dir=str(tmp_path), bf16=False, graph="sumer", reward_metric="f1")
    assert MultiConvGRPOConfig(**sumer).loss_aggregation == "rollout_sum"  # the SUMER paper's, by default
    assert MultiConvGRPOConfig(**sumer, loss_aggregation="token").loss_aggregation == "token"  # the token mean, on request
    assert MultiConvGRPOConfig(output_dir=str(tmp_path), bf16=False).loss_aggregation == "token"  # MemAgent's
    # The cpu-sumer preset keeps the token mean its learning rate was tuned with (every reported run used it).
    assert parse_config(["--preset", "cpu-sumer", "--output_dir", str(tmp_path)]).loss_aggregation == "token"
    # TRL's per-row and per-batch means divide by the weights' own sum, which would undo them: refused.
    with pytest.raises(ValueError, match="loss_aggregation 'rollout_sum' weights the tokens of a loss summed over tokens .* got loss_type 'grpo' and"):
        MultiConvGRPOConfig(**sumer, loss_type="grpo")


def test_padding_keeps_every_row_through_trls_split():
    from trl.trainer.utils import split_tensor_dict

    rows = rollout_rows([rollout(0, 0, [2, 3, 1], 1.0), rollout(1, 0, [4, 1, 1, 2], 0.0)], [0.5, -0.5])
    assert len(rows) == 7
    assert pad_rows(rows, 3, pad_token_id=0) == 2
    batch = rows_to_tensors(rows, pad_token_id=0)
    chunks = split_tensor_dict(batch, 3)
    assert sum(chunk["completion_mask"].sum().item() for chunk in chunks) == 14  # all real tokens survive
    assert sum(len(chunk["advantages"]) for chunk in chunks) == 9
    assert batch["advantages"][7:].tolist() == [0.0, 0.0] and batch["completion_mask"][7:].sum() == 0


def test_rewards_strict_by_default_and_errors_name_the_problem():
    assert AnswerReward()({"response": "The number is 42", "answer": None}, {"answers": ["42"]}) == 0.0
    assert AnswerReward()({"response": r"\boxed{42}", "answer": "42"}, {"answers": ["42"]}) == 1.0
    with pytest.raises(ValueError, match="unknown reward metric 'accuracy'"):
        AnswerReward("accuracy")
    with pytest.raises(ValueError, match="loss_aggregation must be one of"):
        MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, loss_aggregation="sample")


def test_strict_reward_gives_all_of_tasks_eq7_and_follows_the_answer_is_prompt(tiny_model_dir):
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.tokenizers import resolve_tokenizer

    codec = resolve_tokenizer(AutoTokenizer.from_pretrained(tiny_model_dir))
    (sample,) = generate_samples("niah_multivalue", codec, num_samples=1, target_tokens=400, seed=3)
    golds = sample["answers"]
    assert sample["metric"] == "all" and len(golds) == 4
    reward = AnswerReward()
    assert reward({"response": rf"\boxed{{{', '.join(golds)}}}"}, sample) == 1.0  # was 0.0: no single gold equals the box
    assert reward({"response": rf"\boxed{{{golds[0]} {golds[2]}}}"}, sample) == 0.5
    assert reward({"response": rf"\boxed{{{golds[0]}}}"}, {**sample, "metric": "any"}) == 1.0  # any-of: equality
    assert reward({"response": rf"\boxed{{{' '.join(golds)} 1234}}"}, {**sample, "distractors": ["1234"]}) == 0.0
    # One gold: equality (Eq. 6) though RULER marks the task all-of, so the needle inside a longer number earns nothing.
    (single,) = generate_samples("niah_single_1", codec, num_samples=1, target_tokens=400, seed=3)
    assert single["metric"] == "all" and len(single["answers"]) == 1
    assert reward({"response": rf"\boxed{{{single['answers'][0]}}}"}, single) == 1.0
    assert reward({"response": rf"\boxed{{1{single['answers'][0]}}}"}, single) == 0.0  # was 1.0: the box contained it
    # MemAgent's "the answer is" prompt: the strict reward reads that answer (was 0.0 on every reply).
    answer_is = AnswerReward(final_prompt="answer_is")
    assert answer_is({"response": "Therefore, the answer is **42**."}, {"answers": ["42"]}) == 1.0
    assert answer_is({"response": r"\boxed{42}"}, {"answers": ["42"]}) == 0.0
    config = MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, final_prompt="answer_is")
    assert default_reward(config)({"response": "the answer is 42"}, {"answers": ["42"]}) == 1.0


def test_trls_sampling_fields_reach_the_rollout_backends_or_are_refused():
    from langgraph_memagent.training.trainer import sampling_options

    config = MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, top_k=5, min_p=0.1, repetition_penalty=1.2)
    assert sampling_options(config) == {"top_k": 5, "min_p": 0.1, "repetition_penalty": 1.2}  # were silently dropped
    assert sampling_options(MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False)) == {"top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0}
    with pytest.raises(ValueError, match=r"generation_kwargs \{'num_beams': 2\} is not applied by the rollout backends"):
        MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, generation_kwargs={"num_beams": 2})


def test_generated_distractors_defeat_listing_every_number(tiny_model_dir):
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.tokenizers import resolve_tokenizer

    codec = resolve_tokenizer(AutoTokenizer.from_pretrained(tiny_model_dir))
    (sample,) = generate_samples("niah_multikey_1", codec, num_samples=1, target_tokens=400, seed=3)
    assert len(sample["distractors"]) == 3 and sample["answers"][0] not in sample["distractors"]
    assert all(value in sample["document"] for value in sample["distractors"] + sample["answers"])
    reward = AnswerReward("string_match_all")
    assert reward({"response": f"It is {sample['answers'][0]}.", "answer": None}, sample) == 1.0
    everything = " ".join(sample["answers"] + sample["distractors"])
    assert reward({"response": everything, "answer": None}, sample) == 0.0


def test_training_file_in_memagent_format(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(
        '[{"data_source": "hotpotqa", "prompt": [{"role": "user", "content": "Who?"}], "context": "Doc.",'
        ' "reward_model": {"ground_truth": ["Ann"]}, "extra_info": {}}]'
    )
    assert load_training_file(path) == [
        {"question": "Who?", "document": "Doc.", "answers": ["Ann"], "distractors": [], "task": "file", "metric": "any"}
    ]
    path.write_text('[{"prompt": "Who?", "reward_model": {"ground_truth": "Ann"}}]')
    with pytest.raises(ValueError, match="record 0 .* document string"):
        load_training_file(path)


def test_all_of_records_of_a_training_file_earn_eq7_through_the_trainers_path(tmp_path):
    golds = ["1234567", "7654321"]
    records = [
        {"question": "What are all the numbers?", "context": "Doc.", "answers": golds, "task": "niah_multivalue"},  # task: all-of
        {"question": "Which two?", "context": "Doc.", "answers": golds, "metric": "all"},  # said outright
        {"question": "Who?", "context": "Doc.", "reward_model": {"ground_truth": golds}},  # nothing said: aliases, any-of
        {"question": "Which?", "context": "Doc.", "answers": golds, "task": "niah_multivalue", "metric": "any"},  # metric wins
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    config = MultiConvGRPOConfig(output_dir=str(tmp_path / "run"), bf16=False, train_file=str(path))
    rows, reward = list(training_dataset(config, tokenizer=None)), default_reward(config)  # as MultiConvGRPOTrainer gets them
    one, both = {"response": rf"\boxed{{{golds[0]}}}"}, {"response": rf"\boxed{{{golds[0]}, {golds[1]}}}"}
    assert [reward(one, row) for row in rows] == [0.5, 0.5, 1.0, 1.0]  # Eq. 7: half the golds; Eq. 6: equals a gold
    assert [reward(both, row) for row in rows] == [1.0, 1.0, 0.0, 0.0]
    assert [row["metric"] for row in rows] == ["all", "all", "any", "any"]
    # A file named after an all-of RULER task makes its records all-of.
    (tmp_path / "vt").mkdir()
    (tmp_path / "vt" / "train.jsonl").write_text(json.dumps(records[2]) + "\n")
    assert load_training_file(tmp_path / "vt" / "train.jsonl")[0]["metric"] == "all"
    path.write_text(json.dumps(records[0]) + "\n" + json.dumps({**records[1], "metric": "every"}) + "\n")
    with pytest.raises(ValueError, match=r"^record 1 of .*train.jsonl': metric must be one of \['any', 'all'\], got 'every'$"):
        load_training_file(path)
    with pytest.raises(ValueError, match=r"sample metric must be one of \['any', 'all'\], got 'every'"):
        reward(one, {"answers": golds, "metric": "every"})


def test_presets_and_command_line():
    config = parse_config(["--preset", "cpu-smoke", "--output_dir", "/tmp/smoke", "--learning_rate", "3e-5"])
    assert config.learning_rate == 3e-5  # explicit options override the preset
    assert config.reward_metric == "string_match_all" and config.use_lora and config.bf16 is False
    assert set(PRESETS) == {"paper-7b", "cpu-smoke", "cpu-sumer", "cpu-agemem"}
    agemem = parse_config(["--preset", "cpu-agemem", "--output_dir", "/tmp/agemem"])
    assert (agemem.graph, agemem.tool_choice, agemem.agemem_turns_per_message, agemem.beta) == ("agemem", "required", 1, 0.0)
    assert PRESETS["paper-7b"]["reward_metric"] == "strict_boxed"
    with pytest.raises(ValueError, match="unknown --preset 'paper-70b'"):
        parse_config(["--preset", "paper-70b"])
    # The smoke preset's one-distractor setting belongs to its task: another --task drops it.
    assert config.num_keys == 2
    assert parse_config(["--preset", "cpu-smoke", "--output_dir", "/tmp/smoke", "--task", "niah_single_1"]).num_keys is None
    assert parse_config(["--preset", "cpu-smoke", "--output_dir", "/tmp/smoke", "--task", "niah_multiquery", "--num_keys", "6"]).num_keys == 6


def test_recorder_refuses_calls_without_token_ids(embedded_model_dir):
    from langchain_core.language_models import FakeListChatModel

    from langgraph_memagent.graphs.memagent import build_memagent_graph

    graph = build_memagent_graph(FakeListChatModel(responses=["m"]), chunk_tokens=50, tokenizer=str(embedded_model_dir))
    with pytest.raises(RuntimeError, match="rollout 0 .*failed") as failure:
        run_rollouts(graph, [{"question": "q?", "document": "some text"}], [0])
    causes, error = [], failure.value
    while error is not None:
        causes.append(type(error))
        error = error.__cause__
    assert MissingTokenIdsError in causes



def test_rollouts_all_run_at_once_unless_limited(embedded_model_dir, capsys):
    """Every rollout of a batch must be in flight together, so the backend can decode them in one batch."""
    import threading
    import time

    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from langgraph_memagent.graphs.memagent import build_memagent_graph

    lock, active, peak = threading.Lock(), [0], [0]
    expected, wait_s = [12], [5.0]  # wait for the others (threads start slowly on a busy machine)

    class SlowModel(BaseChatModel):
        @property
        def _llm_type(self):
            return "slow-test-model"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            deadline = time.monotonic() + wait_s[0]
            while active[0] < expected[0] and time.monotonic() < deadline:
                time.sleep(0.01)
            with lock:
                active[0] -= 1
            metadata = {"prompt_token_ids": [1], "completion_token_ids": [2]}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="x", response_metadata=metadata))])

    graph = build_memagent_graph(SlowModel(), chunk_tokens=50, tokenizer=str(embedded_model_dir))
    # More than LangChain's default pool (<= 6 here); distinct so the order can be checked.
    inputs = [{"question": f"q{i}?", "document": "some text"} for i in range(12)]
    rollouts = run_rollouts(graph, inputs, [0] * 12, progress="rolling out")
    assert len(rollouts) == 12 and peak[0] == 12
    # Runs finish in any order; rollouts come back in input order.
    assert [r.output["question"] for r in rollouts] == [i["question"] for i in inputs]
    bar = capsys.readouterr().err
    assert "rolling out: 100%" in bar and "12/12" in bar
    peak[0], expected[0], wait_s[0] = 0, 4, 0.3  # with a limit of 3 a fourth never arrives
    run_rollouts(graph, inputs, [0] * 12, max_concurrency=3)
    assert peak[0] == 3


# ---------------------------------------------------------------------------------------
# The real trainer on a tiny model
# ---------------------------------------------------------------------------------------
def test_loss_matches_hand_computation_with_uneven_conversations(tiny_model_dir, tiny_dataset, tmp_path):
    trainer = make_trainer(tiny_model_dir, tiny_dataset, tiny_config(tmp_path, beta=1e-3, epsilon_high=0.2))
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    # Group 0: rewards (1, 0, 0) -> advantages (2/3, -1/3, -1/3), 3 + 2 + 1 conversations.
    # Group 1: rewards (1, 1) -> advantages (0, 0), all equal.
    rollouts = [
        rollout(0, 0, [2, 1, 3], 1.0),
        rollout(1, 0, [2, 2], 0.0),
        rollout(2, 0, [1], 0.0),
        rollout(3, 1, [2], 1.0),
        rollout(4, 1, [1, 1], 1.0),
    ]
    tokens = 6 + 4 + 1 + 2 + 2
    inputs = trainer._batch_from_rollouts(rollouts, "train")
    assert inputs["advantages"].tolist() == pytest.approx([2 / 3] * 3 + [-1 / 3] * 3 + [0.0] * 3)
    assert inputs["num_items_in_batch"].item() == tokens
    assert "old_per_token_logps" not in inputs  # one optimizer step per batch: on-policy, ratio 1

    # Ratio 1; the LoRA adapter starts at zero, so the reference equals the policy and KL = 0.
    loss = trainer._compute_loss(trainer.model, inputs).item()
    assert loss == pytest.approx(-(2 / 3 * 6 - 1 / 3 * 4 - 1 / 3 * 1) / tokens, abs=1e-5)

    # Ratio 1.5 on every token: positive advantages clip at 1 + 0.2, negative ones do not.
    inputs["old_per_token_logps"] = inputs["ref_per_token_logps"] - math.log(1.5)
    loss = trainer._compute_loss(trainer.model, inputs).item()
    assert loss == pytest.approx(-(1.2 * 2 / 3 * 6 - 1.5 * 1 / 3 * 4 - 1.5 * 1 / 3 * 1) / tokens, abs=1e-5)

    # Per-rollout mean: each rollout's token mean, averaged over the 5 rollouts.
    trainer.args.loss_aggregation = "rollout"
    inputs = trainer._batch_from_rollouts(rollouts, "train")
    inputs["old_per_token_logps"] = inputs["ref_per_token_logps"] - math.log(1.5)
    loss = trainer._compute_loss(trainer.model, inputs).item()
    assert loss == pytest.approx(-(1.2 * 2 / 3 - 1.5 * 1 / 3 - 1.5 * 1 / 3) / 5, abs=1e-5)

    # The SUMER paper's: each rollout's token sum, averaged over the 5 rollouts (the token mean x 15 / 5).
    trainer.args.loss_aggregation = "rollout_sum"
    inputs = trainer._batch_from_rollouts(rollouts, "train")
    inputs["old_per_token_logps"] = inputs["ref_per_token_logps"] - math.log(1.5)
    loss = trainer._compute_loss(trainer.model, inputs).item()
    assert loss == pytest.approx(-(1.2 * 2 / 3 * 6 - 1.5 * 1 / 3 * 4 - 1.5 * 1 / 3 * 1) / 5, abs=1e-5)


def loss_pass(tiny_model_dir, dataset, config, rollouts):
    """One rollout batch's loss and backward with a non-zero adapter (the policy differs from the
    reference): the trainer, its inputs, the loss, the gradients and the shapes of the forward passes."""
    trainer = make_trainer(tiny_model_dir, dataset, config)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    for parameter_name, parameter in trainer.model.named_parameters():
        if "lora_B" in parameter_name:
            torch.nn.init.normal_(parameter, std=0.05, generator=torch.Generator().manual_seed(len(parameter_name)))
    passes = []
    trainer.model.get_base_model().register_forward_pre_hook(lambda module, args, kwargs: passes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    inputs = trainer._batch_from_rollouts(rollouts, "train")
    trainer.accelerator.backward(loss := trainer.compute_loss(trainer.model, inputs))
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    return trainer, inputs, loss.item(), grads, passes


def test_token_budget_splits_forward_passes_and_keeps_the_loss_and_gradient(tiny_model_dir, tiny_dataset, tmp_path):
    rollouts = [rollout(0, 0, [2, 1, 3], 1.0), rollout(1, 0, [2, 2], 0.0), rollout(2, 0, [1], 0.0), rollout(3, 1, [6], 1.0), rollout(4, 1, [1, 1], 0.0)]
    budget, results = 16, {}
    for name, limit in (("whole", None), ("parts", budget)):
        # Two optimizer steps per rollout batch: the old policy's log-probs are computed too.
        config = tiny_config(tmp_path, beta=1e-3, per_device_train_batch_size=2, steps_per_generation=2, max_tokens_per_forward=limit)
        results[name] = loss_pass(tiny_model_dir, tiny_dataset, config, rollouts)[1:]
    whole, parts = results["whole"], results["parts"]
    assert any(rows * width > budget for rows, width in whole[3])  # TRL alone: passes over the budget
    assert all(rows * width <= budget or rows == 1 for rows, width in parts[3]) and len(parts[3]) > len(whole[3])
    for key in ("old_per_token_logps", "ref_per_token_logps"):
        mask = whole[0]["completion_mask"].bool()
        assert torch.allclose(whole[0][key][mask], parts[0][key][mask], atol=1e-5), key
    assert parts[1] == pytest.approx(whole[1], abs=1e-6)
    assert whole[2].keys() == parts[2].keys() and whole[2]
    # Trimmed parts move tokens to other absolute positions (RoPE is relative): float rounding only.
    assert all((whole[2][n] - parts[2][n]).norm() <= 1e-4 * whole[2][n].norm() for n in whole[2])
    # A loss that is not a plain sum over tokens would change under the split: refused.
    with pytest.raises(ValueError, match="max_tokens_per_forward needs a loss summed over tokens .* got loss_type 'grpo'"):
        tiny_config(tmp_path, max_tokens_per_forward=16, loss_type="grpo")


class TokenReportingModel:
    """Builds a chat model that answers with token ids: right in even rollouts, wrong in odd ones.

    The rollout id comes from the run's metadata (set by run_rollouts), so the outcome
    does not depend on the order in which concurrent rollouts reach the model.
    """

    def __init__(self, tokenizer, answers):
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        class Model(BaseChatModel):
            @property
            def _llm_type(self):
                return "token-reporting-test-model"

            def _generate(self, messages, stop=None, run_manager=None, **kwargs):
                prompt = messages[-1].text
                if "<section>" in prompt:
                    text = "memory"
                else:
                    right = run_manager.metadata["rollout_id"] % 2 == 0
                    text = f"\\boxed{{{answers[0] if right else 'wrong'}}}"
                prompt_ids = tokenizer.apply_chat_template(
                    [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True, return_dict=False
                )
                completion_ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
                metadata = {"prompt_token_ids": list(prompt_ids), "completion_token_ids": completion_ids}
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, response_metadata=metadata))])

        self.model = Model()

    def __call__(self, trainer):
        return self.model


def test_rollout_groups_in_the_trainer_follow_the_sampler(tiny_model_dir, tiny_dataset, tmp_path):
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.tokenizers import chunk_text, resolve_tokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    sample = tiny_dataset[0]
    trainer = make_trainer(
        tiny_model_dir,
        tiny_dataset,
        tiny_config(tmp_path, reward_metric="strict_boxed", steps_per_generation=5, beta=0.0),
        rollout_model=TokenReportingModel(tokenizer, sample["answers"]),
    )
    trainer.model.train()
    # The sampler's layout: G = 2 copies of each question side by side.
    inputs = [sample, sample, tiny_dataset[1], tiny_dataset[1]]
    batch = trainer._generate_and_score_completions(inputs)
    assert trainer._metrics["train"]["reward"][-1] == pytest.approx(0.25)  # only rollout 0 answers sample 0 right
    codec = resolve_tokenizer(tokenizer)
    calls = [len(chunk_text(row["document"], codec, 64)) + 1 for row in (sample, tiny_dataset[1])]
    assert trainer._metrics["train"]["conversations_per_rollout/mean"][-1] == sum(calls) / 2
    rows = 2 * sum(calls)
    assert trainer._metrics["train"]["rows"][-1] == rows
    assert len(batch["advantages"]) == rows + (-rows) % 5  # padded to a multiple of steps_per_generation
    # Rollouts 0/1 form group 0 (rewards 1, 0) -> +-0.5 on each of their rows; group 1 (0, 0) -> 0.
    real = batch["completion_mask"].sum(dim=1) > 0
    expected = [-0.5] * calls[0] + [0.0] * (2 * calls[1]) + [0.5] * calls[0]
    assert sorted(batch["advantages"][real].tolist()) == expected
    assert batch["advantages"][~real].abs().sum() == 0


def test_old_logps_from_the_rollout_engine_match_the_recomputed_ones(tiny_model_dir, tiny_dataset, tmp_path):
    # Two optimizer steps per rollout batch: the old policy's log-probs are needed, and the engine's replace the pass.
    trainer = make_trainer(tiny_model_dir, tiny_dataset, tiny_config(tmp_path, steps_per_generation=2, beta=0.0, old_logps="rollout"))
    trainer.model.train()
    recompute, passes = trainer._per_token_logps, []
    trainer._per_token_logps = lambda *args: passes.append(args) or recompute(*args)
    batch = trainer._generate_and_score_completions([tiny_dataset[0]] * 2 + [tiny_dataset[1]] * 2)
    assert passes == []  # the pass the option saves
    mask = batch["completion_mask"].bool()
    assert mask.sum() > 0 and (batch["old_per_token_logps"][~mask] == 0).all()
    recomputed = recompute(trainer.model, batch, "train")
    assert torch.allclose(batch["old_per_token_logps"][mask], recomputed[mask], atol=2e-3)
    # Recomputing (TRL's way) logs how far the engine's log-probs are from the pass's, under TRL's metric name.
    trainer.args.old_logps = "recompute"
    trainer._generate_and_score_completions([tiny_dataset[0]] * 2 + [tiny_dataset[1]] * 2)
    assert len(passes) == 1 and 0 <= trainer._metrics["train"]["sampling/sampling_logp_difference/max"][-1] < 2e-3
    # A process without one engine log-prob still joins the gather (another process waits in it), and logs nothing.
    gather, gathered = trainer.accelerator.gather, []
    trainer.accelerator.gather = lambda tensor: gathered.append(tensor) or gather(tensor)
    logged = len(trainer._metrics["train"]["sampling/sampling_logp_difference/max"])
    trainer._log_sampling_difference("train", recomputed, {"completion_mask": batch["completion_mask"]})
    assert len(gathered) == 1 and gathered[0][0, 1] == 0
    assert len(trainer._metrics["train"]["sampling/sampling_logp_difference/max"]) == logged
    with pytest.raises(ValueError, match=r"old_logps 'rollout' needs the embedded engine sampling \(temperature > 0, no use_vllm\), got temperature 0.0"):
        tiny_config(tmp_path, old_logps="rollout", temperature=0.0)


def test_dynamic_sampling_replaces_groups_without_reward_spread(tiny_model_dir, tiny_dataset, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    flat_question = tiny_dataset[0]["question"]
    scored: list[str] = []

    def reward(output, sample):  # question 0 always scores 0; any other alternates 1, 0 within its group
        scored.append(sample["question"])
        return 0.0 if sample["question"] == flat_question else float(scored.count(sample["question"]) % 2)

    def batch_for(rounds):
        trainer = make_trainer(
            tiny_model_dir,
            tiny_dataset,
            tiny_config(tmp_path, steps_per_generation=1, beta=0.0, dynamic_sampling_rounds=rounds),
            reward_fn=reward,
            rollout_model=TokenReportingModel(tokenizer, ["unused"]),
        )
        trainer.model.train()
        scored.clear()
        return trainer, trainer._generate_and_score_completions([tiny_dataset[0]] * 2 + [tiny_dataset[1]] * 2)

    trainer, batch = batch_for(0)
    assert trainer._metrics["train"]["frac_reward_zero_std"][-1] == 0.5  # off: the flat group stays, advantage 0
    assert "dynamic_sampling/replaced_groups" not in trainer._metrics["train"]

    trainer, batch = batch_for(3)
    metrics = trainer._metrics["train"]
    assert metrics["dynamic_sampling/first_draw_reward"][-1] == pytest.approx(0.25)  # what the policy scored
    assert metrics["dynamic_sampling/replaced_groups"][-1] == scored.count(flat_question) / 2 >= 1
    assert len(scored) == 4 + 2 * metrics["dynamic_sampling/replaced_groups"][-1]
    assert metrics["frac_reward_zero_std"][-1] == 0.0 and metrics["reward"][-1] == pytest.approx(0.5)
    real = batch["completion_mask"].sum(dim=1) > 0
    assert batch["advantages"][real].abs().tolist() == [0.5] * int(real.sum())  # every row now carries signal
    with pytest.raises(ValueError, match="dynamic_sampling_rounds must be >= 0 .* got -1"):
        tiny_config(tmp_path, dynamic_sampling_rounds=-1)


def test_two_step_run_with_lora_updates_adapter_saves_and_resumes(tiny_model_dir, tiny_dataset, tmp_path):
    # The tiny random model never answers. Rollouts are scored in order, so alternating
    # rewards give every group of 2 one winner: a learning signal that sampling cannot erase.
    scored = iter(range(10_000))

    def reward(output, sample):
        return float(next(scored) % 2)

    small = dict(beta=1e-3, per_device_train_batch_size=2, steps_per_generation=2)  # 4 rollouts, 2 optimizer steps
    config = tiny_config(tmp_path, max_steps=1, save_strategy="steps", save_steps=1, **small)
    trainer = make_trainer(tiny_model_dir, tiny_dataset, config, reward_fn=reward)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_B" in n}
    trainer.train()
    after = dict(trainer.model.named_parameters())
    assert any(not torch.equal(before[name], after[name]) for name in before), "LoRA weights did not change"
    assert all(not p.requires_grad for n, p in trainer.model.named_parameters() if "lora_" not in n)
    logged = trainer.state.log_history[0]
    for key in ("reward", "reward_std", "kl", "clip_ratio/region_mean", "conversations_per_rollout/mean",
                "advantages/abs_mean", "tokens/completion_per_rollout", "padding_rows", "temperature"):
        assert key in logged, key

    # Step 2 resumes from the checkpoint of step 1 and writes the reward curve at the end.
    resumed_config = tiny_config(tmp_path, max_steps=2, reward_curve=True, **small)
    resumed = make_trainer(tiny_model_dir, tiny_dataset, resumed_config, reward_fn=reward)
    resumed.train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-1"))
    assert resumed.state.global_step == 2
    assert (tmp_path / "run" / "reward_curve.png").stat().st_size > 0

    # A checkpoint that already reached max_steps is refused: transformers would train on.
    finished = make_trainer(tiny_model_dir, tiny_dataset, tiny_config(tmp_path, max_steps=1, **small), reward_fn=reward)
    with pytest.raises(ValueError, match="checkpoint-1 is at step 1, and max_steps is 1"):
        finished.train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-1"))
    assert finished.state.global_step == 0


def test_stop_after_steps_cuts_a_longer_schedule_and_saves_the_cut(tiny_model_dir, tiny_dataset, tmp_path):
    small = dict(per_device_train_batch_size=2, steps_per_generation=1, lr_scheduler_type="linear")
    config = tiny_config(tmp_path, max_steps=4, stop_after_steps=1, **small)
    trainer = make_trainer(tiny_model_dir, tiny_dataset, config)
    trainer.train()
    assert trainer.state.global_step == 1 and trainer.state.max_steps == 4
    # The schedule is the 4-step one: after step 1 the linear decay is at 3/4, not at 0 as a 1-step run's would be.
    assert trainer.lr_scheduler.get_last_lr()[0] == pytest.approx(1e-2 * 3 / 4)
    assert (tmp_path / "run" / "checkpoint-1" / "trainer_state.json").is_file()  # saved though save_strategy is "no"
    again = make_trainer(tiny_model_dir, tiny_dataset, tiny_config(tmp_path, max_steps=4, stop_after_steps=1, **small))
    with pytest.raises(ValueError, match="checkpoint-1 is at step 1, and max_steps is 4 and stop_after_steps 1: nothing left"):
        again.train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-1"))
    with pytest.raises(ValueError, match=r"stop_after_steps must be 0 \(off\) or from 1 to max_steps \(4\), got 5"):
        tiny_config(tmp_path, max_steps=4, stop_after_steps=5)


def test_main_trains_on_the_reward_fn_it_is_given(tiny_model_dir, tmp_path):
    # grpo_multiconv.main passes reward_fn to the trainer (experiments' own rewards ride on the package's command line).
    from langgraph_memagent.training import grpo_multiconv

    train_file = tmp_path / "train.json"
    train_file.write_text(json.dumps([{"question": "What is the special magic number for dry-lake?",
                                       "context": "The special magic number for dry-lake is 9920114.", "answers": ["9920114"]}]))
    scored = []

    def reward(output, sample):
        scored.append((sample["answers"], output.get("response")))
        return len(scored) % 2  # unequal rewards in a group, so no group is redrawn

    argv = ["--preset", "cpu-smoke", "--model_name_or_path", str(tiny_model_dir), "--train_file", str(train_file),
            "--output_dir", str(tmp_path / "run"), "--max_steps", "1", "--save_strategy", "no", "--reward_curve", "false",
            "--num_generations", "2", "--per_device_train_batch_size", "2", "--steps_per_generation", "1",
            "--chunk_tokens", "64", "--memory_tokens", "4", "--answer_tokens", "4", "--warmup_steps", "0"]
    assert grpo_multiconv.main(argv, reward_fn=reward) == 0
    assert len(scored) == 2 and all(answers == ["9920114"] for answers, _ in scored), scored


def test_bench_learning_refuses_a_cut_first_phase_before_a_second_and_before_loading(tmp_path, monkeypatch):
    from langgraph_memagent.benchmarks import bench_learning
    from langgraph_memagent.training import grpo_multiconv

    monkeypatch.setattr(grpo_multiconv, "load_policy", lambda config: pytest.fail("the policy loaded first"))
    with pytest.raises(SystemExit, match="--then-steps 2 needs the first phase to end at max_steps; drop --stop_after_steps 1"):
        bench_learning.main(["--then-steps", "2", "--output-dir", str(tmp_path), "--", "--stop_after_steps", "1"])


def test_bench_learning_refuses_a_tag_that_is_not_a_file_name_part(capsys):
    from langgraph_memagent.benchmarks import bench_learning

    with pytest.raises(SystemExit):
        bench_learning.main(["--tag", "run/19"])
    assert "--tag must be letters, digits, '_', '.' or '-' (it is part of file names), got 'run/19'" in capsys.readouterr().err


class _StandInGeneration:
    """TRL's ``VLLMGeneration`` without vLLM and its NCCL weight push (no GPU here).

    Server mode: TRL's real ``VLLMClient`` connected to the loopback server, as TRL
    connects the main process. Colocate mode: the engine is that server behind the
    ``vllm.LLM`` interface. It counts the weight syncs the trainer asks for.
    """

    def __init__(self, *, model, processing_class, mode, server_base_url, server_timeout, **_):
        from trl.generation.vllm_client import VLLMClient

        from langgraph_memagent.agents.vllm_engine import VLLMServerEngine

        self.model, self.syncs = model, 0
        client = VLLMClient(base_url=server_base_url, connection_timeout=server_timeout)
        if mode == "server":
            self.vllm_client = client
        else:
            self.llm = VLLMServerEngine(client, processing_class)

    def sync_weights(self):
        self.syncs += 1


@pytest.mark.parametrize("mode", ["server", "colocate"])
def test_use_vllm_trains_on_vllms_tokens_with_importance_sampling(mode, tiny_model_dir, tiny_dataset, tmp_path, monkeypatch):
    import sys
    from types import ModuleType, SimpleNamespace

    import trl.generation.vllm_client
    import trl.trainer.grpo_trainer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from servers import vllm_completions_server

    # vLLM cannot be installed here (GPU only): its SamplingParams is all the client side needs.
    fake_vllm = ModuleType("vllm")
    fake_vllm.SamplingParams = lambda **fields: SimpleNamespace(**fields)
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    monkeypatch.setattr(trl.generation.vllm_client, "is_vllm_available", lambda *args, **kwargs: True)
    monkeypatch.setattr(trl.trainer.grpo_trainer, "VLLMGeneration", _StandInGeneration)
    batches = []

    class Recording(MultiConvGRPOTrainer):
        def _batch_from_rollouts(self, rollouts, mode, **kwargs):
            output = super()._batch_from_rollouts(rollouts, mode, **kwargs)
            batches.append(([call for rollout in rollouts for call in rollout.calls], output))
            return output

    scored = iter(range(10_000))
    served = AutoModelForCausalLM.from_pretrained(tiny_model_dir)  # the policy's weights before any update
    with vllm_completions_server(served, AutoTokenizer.from_pretrained(tiny_model_dir)) as (url, requests):
        config = tiny_config(tmp_path, max_steps=2, beta=1e-3, top_p=1.0, use_vllm=True, vllm_mode=mode, vllm_server_base_url=url)
        trainer = make_trainer(tiny_model_dir, tiny_dataset, config, Recording, reward_fn=lambda output, sample: float(next(scored) % 2))
        trainer.train()

    assert trainer.state.global_step == 2
    assert trainer.vllm_generation.syncs == 2  # before each rollout batch, once per optimizer step
    served_completions = [choice["token_ids"] for request in requests for choice in request["choices"]]
    assert all(request["logprobs"] == 0 for request in requests)
    assert len(batches) == 2
    for calls, output in batches:
        assert len(calls) == len(served_completions) // 2  # every call of every rollout went to the server
        assert all(call.completion_ids in served_completions for call in calls)
        assert all(len(call.sampling_logps) == len(call.completion_ids) for call in calls)
        assert all(math.isfinite(value) and value <= 0 for call in calls for value in call.sampling_logps)
        assert output["importance_sampling_ratio"].shape == (output["completion_ids"].size(0), 1)
    # Before the first update the server holds the policy's weights: its log-probs and the
    # trainer's agree token by token, so the importance ratio of every real row is 1.
    first = batches[0][1]
    real = first["completion_mask"].sum(dim=1) > 0
    torch.testing.assert_close(first["importance_sampling_ratio"][real], torch.ones(int(real.sum()), 1), atol=1e-3, rtol=0)
    # After one update the server (never sent the weights here) lags the policy: the ratio sees it.
    second = batches[1][1]
    real = second["completion_mask"].sum(dim=1) > 0
    assert (second["importance_sampling_ratio"][real] - 1).abs().max() > 1e-2


def test_colocated_tensor_parallel_vllm_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ValueError, match="vllm_tensor_parallel_size=2 .* use vllm_mode='server'"):
        tiny_config(tmp_path, use_vllm=True, vllm_mode="colocate", vllm_tensor_parallel_size=2)


def test_reward_curve_marks_a_temperature_change_and_smooths_noisy_batches(tmp_path):
    from langgraph_memagent.benchmarks.bench_learning import with_phase_temperatures
    from langgraph_memagent.training.reward_curve import plot_reward_curve, running_mean

    assert running_mean([1.0, 0.0, 1.0, 1.0], 2) == [1.0, 0.5, 0.5, 1.0]
    with pytest.raises(ValueError, match="window must be >= 1, got 0"):
        running_mean([1.0], 0)
    # Steps 1-2 ran at 0.7 and 3-4 at 1.0; step 4 logged its own temperature, which wins.
    phases = [{"temperature": 0.7, "max_steps": 2}, {"temperature": 1.0, "max_steps": 4}]
    log = [{"step": 1, "reward": 0.5}, {"step": 2, "reward": 0.0}, {"step": 3, "reward": 1.0}, {"step": 4, "reward": 0.0, "temperature": 0.9}]
    assert [entry["temperature"] for entry in with_phase_temperatures(log, phases)] == [0.7, 0.7, 1.0, 0.9]
    assert plot_reward_curve([{"step": 1, "loss": 0.1}], tmp_path / "none.png") is None
    path = plot_reward_curve(with_phase_temperatures(log, phases), tmp_path / "curve.png")
    assert path.stat().st_size > 0


def test_a_finished_learning_run_is_kept_only_when_it_was_measured_the_same_way(tmp_path):
    from langgraph_memagent.benchmarks.bench_learning import kept_result

    path = tmp_path / "result.json"
    result = {"settings": {"split": "test", "seeds": [1, 2], "temperature": 0.7}, "training": {"seed": 1},
              "phases": [{"temperature": 0.7, "max_steps": 16, "train_seconds": 3.0}], "changes_points": {"greedy": 1.0}}
    path.write_text(json.dumps(result))
    same = ({"split": "test", "temperature": 0.7}, {"seed": 1}, [(0.7, 16)])
    assert kept_result(path, *same) == result
    assert kept_result(path, {"split": "dev", "temperature": 0.7}, *same[1:]) is None
    assert kept_result(path, same[0], {"seed": 2}, same[2]) is None
    assert kept_result(path, *same[:2], [(0.7, 16), (1.0, 32)]) is None


def test_evaluate_policy_runs_every_question_and_scores_with_the_reward(tiny_model_dir, tiny_dataset, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent.training import evaluation
    from langgraph_memagent.training.evaluation import evaluate_policy

    seen = []

    def reward(output, sample):
        seen.append((sample["question"], output["response"]))
        return float(len(seen) % 2)

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).train()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    records = [dict(row) for row in tiny_dataset.select(range(2))]
    config = tiny_config(tmp_path)
    result = evaluate_policy(model, tokenizer, records, config, temperature=0.0, rollouts_per_question=3, reward_fn=reward)
    assert len(result.rewards) == 6 and result.accuracy == 50.0
    assert sorted(question for question, _ in seen) == sorted(r["question"] for r in records for _ in range(3))
    replies: dict[str, set] = {}
    for question, response in seen:
        replies.setdefault(question, set()).add(response)
    assert all(len(responses) == 1 for responses in replies.values()), "greedy rollouts of a question must agree"
    assert model.training, "the evaluation must give the model back in the mode it had"
    default = evaluate_policy(model, tokenizer, records, config, temperature=1.0, rollouts_per_question=2)
    assert default.rewards == [0.0] * 4  # the random tiny model never names the needle (lenient reward)
    with pytest.raises(ValueError, match="rollouts_per_question must be >= 1, got 0"):
        evaluate_policy(model, tokenizer, records, config, temperature=0.0, rollouts_per_question=0)
    # The config's rollout_concurrency caps the runs in flight, as in training (0: all at once).
    limits, run_rollouts = [], evaluation.run_rollouts
    monkeypatch.setattr(evaluation, "run_rollouts", lambda *args, **kwargs: limits.append(kwargs["max_concurrency"]) or run_rollouts(*args, **kwargs))
    config.rollout_concurrency = 1
    assert len(evaluate_policy(model, tokenizer, records, config, temperature=0.0).rewards) == 2
    config.rollout_concurrency = 0
    evaluate_policy(model, tokenizer, records, config, temperature=0.0)
    assert limits == [1, None]


def test_paired_gain_pairs_by_question_and_refuses_other_question_sets():
    from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_gain

    before = PolicyEvaluation(1.0, 2, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], 1.0)
    after = PolicyEvaluation(1.0, 2, [1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0], 1.0)
    gain, error = paired_gain(before, after)
    # Per-question changes 0.5, 0, 1, 0.5: mean 0.5, sample sd 0.408, / sqrt(4).
    assert gain == pytest.approx(50.0) and error == pytest.approx(100 * 0.408248 / 2, abs=1e-3)
    assert after.standard_error == pytest.approx(100 * 0.288675 / 2, abs=1e-3)  # question means 0.5, 1, 1, 0.5
    assert PolicyEvaluation.from_dict(after.to_dict()) == after
    with pytest.raises(ValueError, match="before has 4 questions, after 2"):
        paired_gain(before, PolicyEvaluation(1.0, 4, after.rewards, 1.0))
    with pytest.raises(ValueError, match="7 rewards do not split into questions of 2 rollouts"):
        PolicyEvaluation(1.0, 2, after.rewards[:7], 1.0).standard_error


def test_checkpointing_defaults_to_the_current_name_and_the_old_one_still_works(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # TRL 1.16's default set the deprecated name
        config = MultiConvGRPOConfig(output_dir=str(tmp_path), bf16=False)
    assert config.activation_checkpointing is True and config.gradient_checkpointing is True  # TRL's default, mirrored
    with pytest.warns(FutureWarning, match="gradient_checkpointing"):
        legacy = MultiConvGRPOConfig(output_dir=str(tmp_path), bf16=False, gradient_checkpointing=False)
    assert legacy.activation_checkpointing is False


def shared_history_rollouts() -> list[Rollout]:
    """Rollouts whose calls repeat their history, as a graph's do: call k+1's prompt is call k's prompt,
    its reply re-encoded (the last token differs) and a tool result; a group's rollouts share the first prompt."""

    def calls(replies: list[list[int]]) -> list[LLMCall]:
        made, prompt = [], [10, 11, 12, 13, 14, 15]
        for turn, reply in enumerate(replies):
            made.append(LLMCall(list(prompt), list(reply), "x"))
            prompt = prompt + reply[:-1] + [300 + turn, 20 + turn, 21]
        return made

    replies = [[[100, 101], [102, 103, 104]], [[105, 106, 107]], [[100, 108], [109], [110, 111]], [[112], [113, 114]]]
    return [Rollout(i, i // 3, calls(r), {"response": ""}, reward) for i, (r, reward) in enumerate(zip(replies, (1.0, 0.0, 0.0, 1.0)))]


def test_packed_prefixes_give_trls_log_probs_loss_and_gradient_from_fewer_tokens(tiny_model_dir, tiny_dataset, tmp_path):
    rollouts, results = shared_history_rollouts(), {}
    for name, pack, budget in (("rows", False, None), ("packed", True, None), ("packed parts", True, 24)):
        config = tiny_config(
            tmp_path, beta=1e-3, per_device_train_batch_size=4, steps_per_generation=2, pack_prefixes=pack, max_tokens_per_forward=budget
        )
        trainer, inputs, loss, grads, passes = loss_pass(tiny_model_dir, tiny_dataset, config, rollouts)
        results[name] = (inputs, loss, grads, [rows * width for rows, width in passes])
        if budget:  # parts of consecutive rows whose prefix trees fit the budget
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            parts = trainer._forward_parts(inputs, "train")
            sizes = [packed_length(ids[part], attention[part], inputs["completion_ids"].size(1)) for part in parts]
            assert len(parts) > 1 and max(sizes) <= budget, sizes
    rows = results["rows"]
    mask = rows[0]["completion_mask"].bool()
    for name in ("packed", "packed parts"):
        inputs, loss, grads, tokens = results[name]
        for key in ("old_per_token_logps", "ref_per_token_logps"):
            assert torch.allclose(rows[0][key][mask], inputs[key][mask], atol=1e-5), (name, key)
        assert loss == pytest.approx(rows[1], abs=1e-6)
        assert grads.keys() == rows[2].keys() and all((rows[2][n] - grads[n]).norm() <= 1e-4 * rows[2][n].norm() for n in grads)
        assert sum(tokens) < sum(rows[3]) / 2, (name, tokens, rows[3])


def test_packed_steps_take_trls_shuffled_slices_in_generation_order(tiny_model_dir, tiny_dataset, tmp_path):
    config = tiny_config(tmp_path, per_device_train_batch_size=4, steps_per_generation=2, pack_prefixes=True, max_tokens_per_forward=24)
    trainer = make_trainer(tiny_model_dir, tiny_dataset, config)
    trainer.model.train()
    whole = trainer._batch_from_rollouts(shared_history_rollouts(), "train")
    trainer._generate_and_score_completions = lambda batch: dict(whole)
    slices = [trainer._prepare_inputs(None) for trainer._step in range(2)]
    orders = [part["row_order"].tolist() for part in slices]
    assert sorted(orders[0] + orders[1]) == list(range(len(whole["row_order"]))) and all(o == sorted(o) for o in orders)
    for part in slices:  # every per-row tensor moved with its row
        assert torch.equal(part["prompt_ids"], whole["prompt_ids"][part["row_order"]])
        assert torch.equal(part["advantages"], whole["advantages"][part["row_order"]])


def test_a_packed_pass_of_padding_rows_alone_scores_zero_and_backpropagates(tiny_model_dir, tiny_dataset, tmp_path):
    from langgraph_memagent.training.micro_batches import trim_part

    # Three rows padded to four, scored one row per pass: the padding row is a pass of its own.
    config = tiny_config(tmp_path, beta=1e-3, per_device_train_batch_size=1, steps_per_generation=4, pack_prefixes=True)
    trainer = make_trainer(tiny_model_dir, tiny_dataset, config)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    inputs = trainer._batch_from_rollouts([rollout(0, 0, [2], 1.0), rollout(1, 0, [3], 0.0), rollout(2, 0, [1], 0.5)], "train")
    padding = (inputs["completion_mask"].sum(1) == 0).nonzero().flatten().tolist()
    assert len(padding) == 1
    for key in ("old_per_token_logps", "ref_per_token_logps"):
        assert inputs[key][padding[0]].eq(0).all() and inputs[key].ne(0).any(), key
    trainer.accelerator.backward(loss := trainer.compute_loss(trainer.model, trim_part(inputs, range(padding[0], padding[0] + 1))))
    assert loss.item() == 0.0
    grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
    assert grads and all(grad.eq(0).all() for grad in grads)
