"""Greedy continuations of the embedded SmolLM2-135M in float32, bfloat16 and the engine's int4.

Asks whether reduced precision makes the model loop, and why. Eight chat prompts, 128 greedy
tokens each, through ``generate`` on four versions of the model: float32; all bfloat16 (weights,
residual stream, norms, logits); bfloat16 with float32 logits; and the engine's int4
(:mod:`~langgraph_memagent.agents.quantization`). For each: how many continuations loop (a
6-token sequence seen 3 or more times), how many are identical to float32's, the first token
where each departs from float32, and how many steps had an exact tie for the top logit (greedy
then takes the lower token id). About 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import collections
import copy
from typing import Any

from ._common import write_result

NAME = "bench_precision"
PROMPTS = (
    "Write a short story about a lighthouse keeper.", "Explain how photosynthesis works.",
    "List five tips for learning a new language.", "What is the capital of France?",
    "Describe the water cycle in simple terms.", "Summarize the plot of Romeo and Juliet.",
    "Why is the sky blue?", "Give me a recipe for pancakes.",
)


def _loops(ids: list[int], span: int = 6, repeats: int = 3) -> bool:
    counts = collections.Counter(tuple(ids[i:i + span]) for i in range(len(ids) - span))
    return bool(counts) and counts.most_common(1)[0][1] >= repeats


def _variants(path: str, torch: Any) -> Any:
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents.quantization import quantize_for_cpu

    float32 = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    yield "float32", float32
    yield "bfloat16", AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    mixed = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    head = float32.lm_head.weight.detach().clone()
    mixed.lm_head = torch.nn.Module()
    mixed.lm_head.forward = lambda hidden: torch.nn.functional.linear(hidden.float(), head)
    yield "bfloat16, float32 logits", mixed
    yield "int4 (the engine's default)", quantize_for_cpu(copy.deepcopy(float32), "int4")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128, help="greedy tokens per prompt (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.embedded import embedded_model_dir

    path = str(embedded_model_dir())
    tokenizer = AutoTokenizer.from_pretrained(path)
    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, return_dict=True, return_tensors="pt")["input_ids"] for p in PROMPTS]
    results: dict[str, Any] = {}
    reference: list[list[int]] = []
    for name, model in _variants(path, torch):
        continuations, ties = [], 0
        for ids in prompts:
            with torch.inference_mode():
                out = model.generate(ids, max_new_tokens=args.tokens, do_sample=False, output_scores=True, return_dict_in_generate=True)
            continuations.append(out.sequences[0, ids.shape[1]:].tolist())
            ties += sum(int(top[0] == top[1]) for top in (scores[0].float().topk(2).values for scores in out.scores))
        reference = reference or continuations
        departures = [next((i for i, (a, b) in enumerate(zip(c, r)) if a != b), min(len(c), len(r))) for c, r in zip(continuations, reference)]
        results[name] = {
            "looped": sum(map(_loops, continuations)), "identical_to_float32": sum(c == r for c, r in zip(continuations, reference)),
            "first_departure_from_float32": departures, "steps_with_exact_top_tie": ties, "prompts": len(PROMPTS),
        }
        print(f"  {name:28s} {results[name]}", flush=True)
    write_result(NAME, {"settings": vars(args), "results": results})
    print(f"{NAME}: " + "; ".join(f"{name}: {r['looped']}/{r['prompts']} loop, {r['steps_with_exact_top_tie']} tied steps" for name, r in results.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
