"""Sampling a token: the engine's sampler against transformers' ``generate`` sampling, alone and in batched decoding.

A sampled decode step ends in one draw per row over the 49,152-token vocabulary. transformers'
``generate`` (``do_sample=True``) runs its logits processors, a softmax and ``torch.multinomial``,
and its top_p sorts the whole vocabulary; the engine's sampler
(:mod:`langgraph_memagent.agents.sampling`) ranks only the first 1,024 tokens where the nucleus
lies among them and draws by inverse CDF. Both sample the same distribution (``tests/test_sampling.py``).

Two parts, each interleaved round by round:

1. The sampler alone, on the embedded model's own next-token logits over a real dialogue (LoCoMo
   conv-30's sessions), at 1, 8 and 32 rows, for three settings: T = 1 with top_p 1 (TRL's
   GRPO default, the trainer's rollouts), T = 1 with top_p 0.95, and T = 0.7 with top_p 0.95 (the
   MemAgent paper's sampling, arXiv 2507.02259). Also reported: the share of rows whose 0.95
   nucleus lies among the 1,024 ranked tokens.
2. The embedded int4 engine decoding ``--rows`` sampled requests at once (T = 1, top_p 1, as in
   rollouts), with its own sampler and with transformers' in its place: generated tokens a second
   over the whole requests (their prompts' prefill included).

``python -m benchmarks.bench_sampling`` (about 6 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from ._common import OtherLoad, write_result

NAME = "bench_sampling"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_conv30.json"
SETTINGS = {"T=1 top_p=1": (1.0, 1.0), "T=1 top_p=0.95": (1.0, 0.95), "T=0.7 top_p=0.95": (0.7, 0.95)}


def transformers_next_tokens(logits, params, histories):
    """One draw a row as transformers' ``generate(do_sample=True)`` makes it: its processors, softmax, multinomial.

    For a batch sharing one setting, as ``generate`` has (repetition penalty, top_k and min_p unused here).
    """
    import torch
    from transformers.generation.logits_process import LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

    temperature, top_p = params[0].temperature, params[0].top_p
    processors = LogitsProcessorList([TemperatureLogitsWarper(temperature)] + ([TopPLogitsWarper(top_p)] if top_p < 1 else []))
    scores = processors(None, logits.float())
    return torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(-1).tolist()


def _dialogue(tokenizer) -> list[int]:
    """LoCoMo conv-30's sessions as "speaker: text" lines, tokenized."""
    conversation = json.loads(LOCOMO.read_text())
    sessions = [f"session_{number}" for number in range(1, 100) if f"session_{number}" in conversation]
    return tokenizer("\n".join(f"{turn['speaker']}: {turn['text']}" for key in sessions for turn in conversation[key]))["input_ids"]


def _module_from(path: str):
    """``path`` loaded as a module of the engine's package, so its relative imports resolve."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("langgraph_memagent.agents._baseline_sampling", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _time(function, repeats: int) -> float:
    function()  # warm
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1,8,32", help="rows sampled at once in part 1, comma-separated (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of each part (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=20, help="draws timed per row count and setting a round (default: %(default)s)")
    parser.add_argument("--engine-rows", type=int, default=16, help="sampled requests decoded at once in part 2 (default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=128, help="tokens each request of part 2 generates (default: %(default)s)")
    parser.add_argument("--baseline-sampler", metavar="FILE",
                        help="another version of agents/sampling.py timed beside the two, e.g. an earlier commit's "
                             "(git show COMMIT:agents/sampling.py > FILE)")
    args = parser.parse_args(argv)
    if not all(part.strip().isdigit() and int(part) > 0 for part in args.rows.split(",")):
        parser.error(f"--rows must be positive row counts separated by commas, such as 1,8,32; got {args.rows!r}")
    for option in ("rounds", "repeats", "engine_rows", "tokens"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1, got {getattr(args, option)}")
    if args.baseline_sampler and not Path(args.baseline_sampler).is_file():
        parser.error(f"--baseline-sampler must name a file holding a version of agents/sampling.py, got {args.baseline_sampler!r}")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent.agents import batched_generator
    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.agents.quantization import quantize_for_cpu
    from langgraph_memagent.agents.sampling import RANKED_CANDIDATES, SamplingParams, next_tokens

    directory = str(embedded_model_dir())
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = quantize_for_cpu(AutoModelForCausalLM.from_pretrained(directory).eval(), "int4")
    dialogue = _dialogue(tokenizer)
    row_counts = [int(rows) for rows in args.rows.split(",")]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([dialogue[:512]])).logits[0, -max(row_counts):].float()
    load = OtherLoad()

    # Part 1: the sampler alone.
    samplers = {"ours": next_tokens, "transformers": transformers_next_tokens}
    if args.baseline_sampler:
        samplers["baseline"] = _module_from(args.baseline_sampler).next_tokens
    times: dict[tuple, list[float]] = {}
    for _ in range(args.rounds):
        for rows in row_counts:
            for setting, (temperature, top_p) in SETTINGS.items():
                params = [SamplingParams(max_tokens=1, temperature=temperature, top_p=top_p)] * rows
                for name, sampler in samplers.items():
                    seconds = _time(lambda: sampler(logits[:rows], params, [()] * rows), args.repeats)
                    times.setdefault((rows, setting, name), []).append(seconds)
    alone = {}
    for rows in row_counts:
        for setting in SETTINGS:
            alone[f"{rows} rows, {setting}"] = {f"{name}_ms": 1000 * statistics.median(times[(rows, setting, name)]) for name in samplers}
            print(f"  {rows} rows, {setting}: " + ", ".join(f"{name} {ms:.3f}" for name, ms in alone[f"{rows} rows, {setting}"].items()), flush=True)
    nucleus = {}
    for setting, (temperature, top_p) in SETTINGS.items():
        if top_p < 1:
            head = torch.softmax(logits / temperature, dim=-1).topk(RANKED_CANDIDATES, dim=-1).values.sum(dim=-1)
            nucleus[setting] = float((head >= top_p).float().mean())
    print(f"  rows whose nucleus lies among the {RANKED_CANDIDATES} ranked tokens: {nucleus}", flush=True)

    # Part 2: the engine decoding sampled requests, with each sampler in its place.
    engine = BatchedGenerator(model, tokenizer, max_batch_size=args.engine_rows, prefix_cache_size=0)
    prompts = [dialogue[64 * row : 64 * row + 256] for row in range(args.engine_rows)]
    params = SamplingParams(max_tokens=args.tokens, temperature=1.0, top_p=1.0, prompt_lookup_num_tokens=0)
    decoding: dict[str, list[float]] = {}
    try:
        for _ in range(args.rounds):
            for name, sampler in samplers.items():
                batched_generator.next_tokens = sampler
                start = time.perf_counter()
                completions = [future.result() for future in [engine.submit(prompt, params) for prompt in prompts]]
                seconds = time.perf_counter() - start
                decoding.setdefault(name, []).append(sum(len(completion.completion_token_ids) for completion in completions) / seconds)
    finally:
        batched_generator.next_tokens = next_tokens
        engine.close()
    engine_result = {name: statistics.median(rates) for name, rates in decoding.items()}
    print(f"  engine, {args.engine_rows} sampled requests, tokens/s: " + ", ".join(f"{name} {rate:.1f}" for name, rate in engine_result.items()), flush=True)
    result = {"settings": vars(args), "sampler_alone": alone, "nucleus_among_ranked": nucleus,
              "engine_tokens_per_s": engine_result, "engine_rounds": decoding, "other_cpu_cores": load.cores()}
    write_result(NAME, result)
    print(f"{NAME}: the engine decodes {args.engine_rows} sampled requests "
          + ", ".join(f"{engine_result['ours'] / rate:.2f}x as fast with its sampler as with the {name} one" for name, rate in engine_result.items() if name != "ours")
          + f"; other load {result['other_cpu_cores']:.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
