"""Accuracy of prompts prefilled through each kind of weights, paired by sample: a numerics check.

The int4 engine decodes through PyTorch's int4 kernel and prefills prompts through the
weights :func:`~langgraph_memagent.agents.quantization.default_prefill_weights` picks for the
CPU (bfloat16, int4 or float32; the module doc of ``agents.quantization`` says why). Each
choice rounds differently, and greedy decoding can part ways on a near-tie. This runs MemAgent
on the same generated ``niah_single_1`` haystacks once per choice (greedy, 1000-token chunks,
128-token memory, 8 samples in flight), then pairs the scores sample by sample: accuracy per
length, the samples only one choice answers, and the exact two-sided sign test on them.
Each variant's results land in ``<out>/<weights>/`` and resume like ``memagent compare``.

``.venv/bin/python experiments/2026-11-25_engine-int4-fused-step/bench_prefill_weights.py --weights int4,bfloat16 --lengths 4k,8k,16k --samples 16 --seed 22``
(about 25 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json

from langgraph_memagent.evals.stats import sign_test

from langgraph_memagent.benchmarks._common import RESULTS_DIR, OtherLoad, write_result

NAME = "bench_prefill_weights"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-25_engine-int4-fused-step/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--weights", default="int4,bfloat16", help="prefill weights to compare, the first as reference (default: %(default)s)")
    parser.add_argument("--lengths", default="4k,8k,16k", help="document lengths (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=16, help="generated samples per length (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=22, help="seed of the generated samples (default: %(default)s)")
    parser.add_argument("--out", default=str(RESULTS_DIR / NAME), help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.agents.quantization import PREFILL_WEIGHTS, quantize_for_cpu
    from langgraph_memagent.evals.harness import ComparisonConfig, run_comparison
    from langgraph_memagent.evals.lengths import parse_lengths

    weights = args.weights.split(",")
    unknown = [name for name in weights if name not in PREFILL_WEIGHTS]
    if unknown or len(weights) < 2:
        parser.error(f"--weights needs two or more of {list(PREFILL_WEIGHTS)}, got {args.weights!r}")
    model_dir = embedded_model_dir()
    load, scores = OtherLoad(), {}
    for name in weights:
        module = quantize_for_cpu(AutoModelForCausalLM.from_pretrained(model_dir).eval(), "int4", prefill_weights=name)
        chat = LocalChatModel.from_model(module, AutoTokenizer.from_pretrained(model_dir), temperature=0)
        config = ComparisonConfig(
            graphs=("memagent",), task="niah_single_1", lengths=tuple(parse_lengths(args.lengths)),
            samples=args.samples, seed=args.seed, out=f"{args.out}/{name}",
        )
        result = run_comparison(config, model=chat)
        chat.engine.close()
        with open(result.out / "results.jsonl") as lines:
            scores[name] = {(row["length"], row["index"]): row["score"] for row in map(json.loads, lines)}
    reference, lengths = weights[0], sorted({length for length, _ in scores[weights[0]]}, key=parse_lengths)
    summary = {}
    for name in weights:
        shared = scores[name].keys() & scores[reference].keys()
        wins = sum(scores[name][key] > scores[reference][key] for key in shared)
        losses = sum(scores[name][key] < scores[reference][key] for key in shared)
        summary[name] = {
            "correct_by_length": {length: sum(s for (l, _), s in scores[name].items() if l == length) for length in lengths},
            "samples": len(scores[name]),
            "correct": sum(scores[name].values()),
            f"answered_only_here_vs_{reference}": wins,
            f"answered_only_by_{reference}": losses,
            "sign_test_p": sign_test(wins, losses),
        }
        print(
            f"  {name:9s} " + "  ".join(f"{length} {summary[name]['correct_by_length'][length]:.0f}" for length in lengths)
            + f"  total {summary[name]['correct']:.0f}/{summary[name]['samples']}; against {reference}: +{wins} -{losses}, "
            f"sign test p = {summary[name]['sign_test_p']:.3f}"
        )
    write_result(NAME, {"settings": vars(args), "results": summary, "other_cpu_cores": load.cores()})
    print(f"{NAME}: results in {args.out}; other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
