"""Two real processes (accelerate, gloo DDP on CPU) train the cpu-smoke preset with rollouts of
different lengths on the two ranks and a token budget per forward pass: the run must finish,
the ranks must make the same forward passes and agree on the weights, and each must free its DDP
wrapper before it destroys the process group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("distributed_training.py")
BUDGET = 1024  # tokens per forward pass: a few of the long question's rows (about 250 tokens each)


def test_two_processes_pad_to_the_same_rows_and_keep_identical_lora_weights(tiny_model_dir, tmp_path):
    # The policy is the tiny random Llama of conftest.py (the embedded model's tokenizer, 2 layers):
    # padding, splitting and all-reducing do not depend on the model's size, and the embedded
    # model's two float32 copies took two and a half minutes and several GB here.
    # One long (two chunks) and one short question (one chunk): each rollout batch holds one group
    # of four of each, and a process gets one group, so the two processes make different numbers of calls.
    records = [
        {"question": "What is the special magic number for tall-math?", "context": ("The sky is blue. " * 30) + "The special magic number for tall-math is 4417302.", "answers": ["4417302"]},
        {"question": "What is the special magic number for dry-lake?", "context": "The special magic number for dry-lake is 9920114.", "answers": ["9920114"]},
    ]
    train_file = tmp_path / "train.json"
    train_file.write_text(json.dumps(records))
    accelerate = Path(sys.executable).with_name("accelerate")
    # accelerate's "--cpu" launches one process (several need MPI); "--multi_gpu" launches through
    # torchrun, and without a GPU each process runs on the CPU with the gloo backend.
    command = [
        str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
        "--dynamo_backend", "no", "--num_cpu_threads_per_process", "1", str(SCRIPT), str(tmp_path),
        "--model_name_or_path", str(tiny_model_dir), "--train_file", str(train_file), "--max_steps", "2", "--save_strategy", "no", "--reward_curve", "false",
        "--per_device_train_batch_size", "2", "--steps_per_generation", "2", "--num_generations", "4",
        "--memory_tokens", "16", "--answer_tokens", "8", "--chunk_tokens", "120", "--dynamic_sampling_rounds", "1",
        # use_cpu: without it transformers' Trainer runs each process on its own; activation
        # checkpointing: two processes without it need about 14 GB each for the loss pass.
        "--use_cpu", "true", "--activation_checkpointing", "true", "--warmup_steps", "0",
        "--max_tokens_per_forward", str(BUDGET),
        # A collective one process never joins fails after this many seconds, with both processes'
        # output, instead of holding the run until pytest's own limit (about 40 s is a whole run here).
        "--ddp_timeout", "240",
    ]
    # Gloo on the loopback interface: otherwise it connects through the address the host name
    # resolves to, which depends on the machine's network setup.
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "GLOO_SOCKET_IFNAME": "lo"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired as stuck:
        output = [(text or b"").decode(errors="replace") for text in (stuck.stdout, stuck.stderr)]  # bytes, whatever text= says
        pytest.fail(f"the two processes ran past 600 s:\n{output[0][-3000:]}\n{output[1][-6000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    ranks = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert all(rank["processes"] == 2 and rank["backend"] == "gloo" for rank in ranks)
    # The DDP wrapper is freed before the group is destroyed: freed after, its reducer runs gloo's destructor holding the
    # GIL, which deadlocks with a gloo worker thread that waits for the GIL (it hung this test in a landing CI run).
    assert [rank["wrapper_alive_at_destroy"] for rank in ranks] == [False, False]
    assert ranks[0]["lora"] == ranks[1]["lora"] and len(ranks[0]["lora"]) == 3  # identical adapters before and after each step
    assert len(set(ranks[0]["lora"])) == 3  # and each step changed them
    real = [[batch["real"] for batch in rank["rows"]] for rank in ranks]
    padded = [[batch["padded"] for batch in rank["rows"]] for rank in ranks]
    assert real[0] != real[1], real  # the ranks made different numbers of calls ...
    assert padded[0] == padded[1], padded  # ... and still ran the same number of rows
    # Under the token budget both processes split into the same parts, sized for the one that needs the smallest.
    passes = [rank["passes"] for rank in ranks]
    assert [(p["rows"], p["parts"]) for p in passes[0]] == [(p["rows"], p["parts"]) for p in passes[1]] and passes[0], passes
    assert any(p["rows_alone"] > p["rows"] for rank in passes for p in rank), passes  # one process took smaller parts to match
    assert all(p["largest"] <= BUDGET for rank in passes for p in rank), passes
