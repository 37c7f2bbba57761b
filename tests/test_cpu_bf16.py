"""training.cpu_bf16: bfloat16 Linear products computed in float32, and the trainer's use of them."""

from __future__ import annotations

import logging
import platform
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from langgraph_memagent.training.cpu_bf16 import Float32ProductLinear, cpu_emulates_bf16, float32_products

from helpers import tiny_config


def _layer(trainable: bool = False) -> torch.nn.Linear:
    torch.manual_seed(0)
    layer = torch.nn.Linear(96, 64).to(torch.bfloat16)
    layer.requires_grad_(trainable)
    return layer


def _input() -> torch.Tensor:
    return torch.randn(3, 5, 96, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)


def test_a_bfloat16_product_is_the_float32_one_rounded_once_and_within_a_unit_of_pytorchs():
    layer, x = _layer(), _input()
    native = layer(x)
    with float32_products(torch.nn.Sequential(layer)) as changed:
        assert changed == 1 and type(layer) is Float32ProductLinear
        out = layer(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):  # the trainer's mixed precision must not undo it
            assert torch.equal(layer(x), out)
    expected = F.linear(x.float(), layer.weight.float(), layer.bias.float()).to(torch.bfloat16)
    assert out.dtype == torch.bfloat16 and torch.equal(out, expected)
    # PyTorch's own bfloat16 kernel sums in another order: at most one unit in the last place apart (bfloat16 has 8 bits).
    assert ((out.float() - native.float()).abs() <= native.float().abs() * 2**-7 + 1e-6).all()
    assert type(layer) is torch.nn.Linear and "_float32" not in layer.__dict__  # plain again on the way out


def test_a_trained_weight_gets_its_gradient_and_a_frozen_one_a_fresh_copy_after_it_changes():
    trained, x = _layer(trainable=True), _input()
    (reference,) = torch.autograd.grad(trained(x).float().square().sum(), trained.weight)
    with float32_products(trained):
        loss = trained(x).float().square().sum()
    (gradient,) = torch.autograd.grad(loss, trained.weight)
    assert gradient.dtype == torch.bfloat16
    assert (gradient.float() - reference.float()).norm() < 0.02 * reference.float().norm()

    frozen = _layer()
    with float32_products(frozen):
        before = frozen(x)
        with torch.no_grad():
            frozen.weight.mul_(2)  # an in-place change, as an optimizer step or a checkpoint load makes
        after = frozen(x)
    doubled = F.linear(x.float(), frozen.weight.float(), frozen.bias.float()).to(torch.bfloat16)
    assert torch.equal(after, doubled) and not torch.equal(after, before)

    fresh, tracked = _layer(), _input().requires_grad_()
    with float32_products(fresh):
        with torch.inference_mode():
            fresh(_input())  # the copy is first made while generating (a rollout), then serves a training pass
        fresh(tracked).float().sum().backward()
    assert tracked.grad is not None and tracked.grad.dtype == torch.bfloat16


def test_other_layers_and_precisions_are_left_alone():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Embedding(3, 4), torch.nn.LayerNorm(4))
    with float32_products(model, None) as changed:
        assert changed == 1
        x = torch.randn(2, 4)
        assert torch.equal(model[0](x), F.linear(x, model[0].weight, model[0].bias))  # float32 weights: Linear's own forward


def test_bf16_emulation_check_agrees_with_the_kernels_cpu_flags():
    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() != "x86_64" or not cpuinfo.is_file():
        pytest.skip("the check reads x86 CPU flags from Linux's /proc/cpuinfo")
    flags = set(re.findall(r"\w+", cpuinfo.read_text()))
    assert cpu_emulates_bf16() == (not flags & {"avx512_bf16", "amx_tile"})


@pytest.mark.parametrize("emulates", [True, False])
def test_the_trainer_trains_bf16_with_float32_products_only_where_the_cpu_emulates_bf16(
        emulates, tiny_model_dir, tiny_dataset, tmp_path, monkeypatch, caplog):
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    from langgraph_memagent.training import trainer as trainer_module

    monkeypatch.setattr(trainer_module, "cpu_emulates_bf16", lambda: emulates)
    seen: set[str] = set()

    class LinearKinds(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            seen.update(type(m).__name__ for m in model.modules() if isinstance(m, torch.nn.Linear))

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.bfloat16)
    trainer = trainer_module.MultiConvGRPOTrainer(
        model, args=tiny_config(tmp_path, bf16=True, use_cpu=True), train_dataset=tiny_dataset,
        processing_class=AutoTokenizer.from_pretrained(tiny_model_dir), callbacks=[LinearKinds()],
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
        reward_fn=lambda output, row: float(len(str(output.get("response", ""))) % 2))
    with caplog.at_level(logging.INFO, logger=trainer_module.__name__):
        trainer.train()
    assert trainer.state.global_step == 1
    assert seen == ({"Float32ProductLinear"} if emulates else {"Linear"})
    assert ("multiply in float32" in caplog.text) == emulates
    assert all(type(m) is torch.nn.Linear for m in trainer.model.modules() if isinstance(m, torch.nn.Linear))
