"""One forward and backward pass of the embedded model with the LoRA, float32 weights against bfloat16.

The cost behind the stage-2 pilot's choice of precision (README, "The CPU stage-2 pilot, bfloat16"):
8 rows of 512 random tokens, the ``cpu-smoke`` LoRA shape (r 16, every linear layer; PEFT keeps the
LoRA weights float32 either way), three passes each, seconds printed per pass.

    ../../.venv/bin/python bf16_pass_probe.py
"""

import time

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from langgraph_memagent.agents.loading import model_directory

name = model_directory("smollm2-135m")
for dtype in (torch.float32, torch.bfloat16):
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(name, dtype=dtype),
                           LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    ids = torch.randint(0, 40000, (8, 512))
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        logits = model(input_ids=ids).logits.float()
        torch.log_softmax(logits, -1).gather(-1, ids[..., None]).mean().backward()
        seconds.append(time.perf_counter() - start)
    print(dtype, " ".join(f"{s:.1f}" for s in seconds), flush=True)
