"""One bfloat16 LoRA training pass of the embedded model on a CPU without AVX-512 BF16: PyTorch's kernels against
:func:`~langgraph_memagent.training.cpu_bf16.float32_products`, with float32 beside.

The pass is what a GRPO step repeats: the forward of ``--batch`` rows of ``--tokens`` tokens, the mean token
log-probability as the loss, and its backward into a fresh LoRA adapter (r 16 on every Linear, the ``cpu-smoke``
preset's). Reported: the seconds of each pass (the fastest of ``--repeats`` after a warm-up; PyTorch's bfloat16 runs
once), and the distances between the three variants' numbers (the loss, the largest log-probability difference, the
relative difference of the LoRA gradients): the float32 products are faithful where they sit as close to PyTorch's
bfloat16 as either sits to float32. Each variant also generates ``--new-tokens`` greedy tokens from the first half of
each row, timed, and the tokens are compared. On a CPU with AVX-512 BF16 or AMX the comparison is moot (the trainer
keeps PyTorch's kernels there): the benchmark says so and stops.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ._common import OtherLoad, write_result

NAME = "bench_cpu_bf16"


def _model(path: str, dtype: Any, torch: Any) -> Any:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)  # the same adapter in every variant, with a non-zero B so that all its gradients are non-zero
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(path, dtype=dtype),
                           LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    for name, parameter in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(parameter, std=0.01)
    return model


def _pass(model: Any, ids: Any, torch: Any) -> tuple[float, Any, Any, Any]:
    model.zero_grad()
    start = time.perf_counter()
    logits = model(input_ids=ids).logits[:, :-1]
    logprobs = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    loss = -logprobs.mean()
    loss.backward()
    seconds = time.perf_counter() - start
    grads = torch.cat([p.grad.float().flatten() for p in model.parameters() if p.grad is not None])
    return seconds, loss.item(), logprobs.detach(), grads


def _generate(model: Any, ids: Any, new_tokens: int, torch: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False)
    return time.perf_counter() - start, out[:, ids.shape[1]:]


def _distance(a: tuple[Any, ...], b: tuple[Any, ...]) -> dict[str, Any]:
    """How far apart two variants' (loss, log-probabilities, gradients, generated tokens) are."""
    return {"loss": abs(a[0] - b[0]), "max_logprob": (a[1] - b[1]).abs().max().item(),
            "gradient_relative": ((a[2] - b[2]).norm() / b[2].norm()).item(),
            "generated_tokens_equal": f"{int((a[3] == b[3]).sum())}/{b[3].numel()}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2, help="rows per pass (default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=512, help="tokens per row (default: %(default)s)")
    parser.add_argument("--new-tokens", type=int, default=16, help="greedy tokens generated per row (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of the fast variants (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch

    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.training.cpu_bf16 import cpu_emulates_bf16, float32_products

    if not cpu_emulates_bf16():
        print(f"{NAME}: this CPU has fast bfloat16 products (AVX-512 BF16 or AMX, or not x86); nothing to compare")
        return 0
    load = OtherLoad()
    path = str(embedded_model_dir())
    ids = torch.randint(100, 40000, (args.batch, args.tokens), generator=torch.Generator().manual_seed(0))
    variants = {"float32": (torch.float32, False, args.repeats), "bfloat16, float32 products": (torch.bfloat16, True, args.repeats),
                "bfloat16, PyTorch's kernels": (torch.bfloat16, False, 1)}
    results: dict[str, Any] = {}
    numbers: dict[str, Any] = {}
    for name, (dtype, products, repeats) in variants.items():
        model = _model(path, dtype, torch)
        with float32_products(model if products else None):
            if repeats > 1:
                _pass(model, ids, torch)  # warm-up
            timed = [_pass(model, ids, torch) for _ in range(repeats)]
            generate_seconds, tokens = _generate(model, ids[:, : args.tokens // 2], args.new_tokens, torch)
        seconds = min(t[0] for t in timed)
        numbers[name] = (timed[-1][1], timed[-1][2], timed[-1][3], tokens)
        results[name] = {"pass_s": round(seconds, 2), "generate_s": round(generate_seconds, 2), "loss": timed[-1][1]}
        print(f"  {name:28s} {results[name]}", flush=True)
    fast, native, full = numbers["bfloat16, float32 products"], numbers["bfloat16, PyTorch's kernels"], numbers["float32"]
    # The float32 products are faithful if they sit as close to PyTorch's bfloat16 as either sits to float32.
    agreement = {"float32 products vs PyTorch's bfloat16": _distance(fast, native),
                 "float32 products vs float32": _distance(fast, full), "PyTorch's bfloat16 vs float32": _distance(native, full)}
    fast_s, native_s = results["bfloat16, float32 products"]["pass_s"], results["bfloat16, PyTorch's kernels"]["pass_s"]
    write_result(NAME, {"settings": vars(args), "other_cpu_cores": load.cores(), "results": results, "distances": agreement})
    for pair, measures in agreement.items():
        print(f"  {pair:40s} {measures}")
    print(f"{NAME}: a bf16 LoRA pass of {args.batch}x{args.tokens} tokens: {fast_s} s with float32 products, {native_s} s with "
          f"PyTorch's kernels ({native_s / fast_s:.1f}x), {results['float32']['pass_s']} s in float32")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
