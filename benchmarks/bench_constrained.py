"""What a grammar costs per decode step in the embedded engine (llguidance, ``agents.constrained``).

Two measurements, one run:

* ``engine``: the embedded SmolLM2-135M (int4, the engine's default) decodes the same greedy
  replies to ``--rows`` concurrent prompts free and under a grammar that admits any text,
  interleaved round by round. The tokens are identical (checked), so the time difference
  is the masking itself at that batch size.
* ``forced_call`` and ``auto_text``: the per-step cost of a grammar alone (mask and
  advance, teacher-forced, for 1 and ``--rows`` constrained rows, beside the same with no
  row constrained): the forced tool-call grammar (JSON arguments under a schema) through a
  valid call, and the ``tool_choice="auto"`` grammar through a reply of prose, which is
  what a row with tools bound pays while it does not call.

Results: ``benchmarks/results/bench_constrained.json``.

    python -m benchmarks.bench_constrained --rows 8 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import wait
from typing import Any

from ._common import OtherLoad, write_result

NAME = "bench_constrained"
ANY_TEXT = "start: /(.|\\n)*/"
PROMPTS = ["Tell me about the sea.", "Describe a busy kitchen.", "What makes a good friend?", "Explain how rain forms."]
FORCED_REPLY = 'submit_answer", "arguments": {"answer": "Met on 7 May 2023", "confidence": "high"}}\n</tool_call>'


def _engine_round(engine: Any, prompts: list[list[int]], params: Any, grammar: str | None) -> tuple[float, list[list[int]], int]:
    started = time.perf_counter()
    futures = [engine.submit(prompt, params, grammar) for prompt in prompts]
    wait(futures)
    seconds = time.perf_counter() - started
    completions = [future.result().completion_token_ids for future in futures]
    return seconds, completions, sum(map(len, completions))


def measure_engine(rows: int, rounds: int, max_tokens: int) -> dict[str, Any]:
    """Seconds per decoded token of ``rows`` concurrent greedy replies, free and under ANY_TEXT."""
    from langgraph_memagent.agents.loading import load_chat_model
    from langgraph_memagent.agents.sampling import SamplingParams

    chat = load_chat_model("smollm2-135m")
    engine, tokenizer = chat.engine, chat.tokenizer
    prompts = [
        tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], add_generation_prompt=True, return_dict=False)
        for i in range(rows)
    ]
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, top_p=1.0)
    _engine_round(engine, prompts, params, ANY_TEXT)  # warm-up: loads the model and the grammar tokenizer
    times: dict[str, list[float]] = {"free": [], "grammar": []}
    outputs: dict[str, list[list[int]]] = {}
    for _ in range(rounds):
        for name, grammar in (("free", None), ("grammar", ANY_TEXT)):
            seconds, completions, tokens = _engine_round(engine, prompts, params, grammar)
            times[name].append(1000 * seconds / max(tokens // rows, 1))
            outputs.setdefault(name, completions)
    if outputs["free"] != outputs["grammar"]:
        raise SystemExit(f"{NAME}: the permissive grammar changed the greedy tokens; the comparison would not be like for like")
    free, grammar = statistics.median(times["free"]), statistics.median(times["grammar"])
    return {"rows": rows, "decode_path": engine.decode_path, "ms_per_step_free": free, "ms_per_step_grammar": grammar,
            "overhead_ms_per_step": grammar - free, "rounds_ms_per_step": times}


TOOLS = [
    {"type": "function", "function": {"name": "search_memory", "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}}, "required": ["query"]}}},
    {"type": "function", "function": {"name": "submit_answer", "parameters": {"type": "object", "properties": {"answer": {"type": "string"}, "confidence": {"enum": ["low", "high"], "type": "string"}}, "required": ["answer", "confidence"]}}},
]
PROSE_REPLY = "The support group met on a Sunday in May. Caroline went with a friend and said afterwards that it had helped her a lot."


def measure_masking(rows: int, rounds: int) -> dict[str, dict[str, Any]]:
    """Mask-and-advance milliseconds per step of the forced-call and auto grammars, teacher-forced through a reply."""
    import torch
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.constrained import GrammarTokenizer, auto_call_grammar, forced_call_grammar, mask_logits
    from langgraph_memagent.agents.embedded import embedded_model_dir

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir())
    grammars = GrammarTokenizer(tokenizer, len(tokenizer))
    logits = torch.randn(rows, len(tokenizer))
    cases = {"forced_call": (forced_call_grammar(TOOLS, "required", max_tokens=256), FORCED_REPLY),
             "auto_text": (auto_call_grammar(TOOLS, max_tokens=256), PROSE_REPLY)}
    results = {}
    for name, (grammar, text) in cases.items():
        reply = tokenizer.encode(text, add_special_tokens=False)
        result = {"steps": len(reply)}
        for constrained in (0, 1, rows):
            per_step = []
            for _ in range(rounds):
                constraints = [grammars.constraint(grammar, [tokenizer.eos_token_id]) if row < constrained else None for row in range(rows)]
                started = time.perf_counter()
                for token in reply:
                    mask_logits(logits, constraints)
                    for constraint in constraints[:constrained]:
                        constraint.advance(token)
                per_step.append(1000 * (time.perf_counter() - started) / len(reply))
            result[f"ms_per_step_{constrained}_of_{rows}_rows"] = statistics.median(per_step)
        results[name] = result
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8, help="concurrent replies (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=48, help="tokens per reply (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.rounds < 1 or args.max_tokens < 1:
        parser.error(f"--rows, --rounds and --max-tokens must be positive, got {args.rows}, {args.rounds} and {args.max_tokens}")
    load = OtherLoad()
    engine = measure_engine(args.rows, args.rounds, args.max_tokens)
    print(f"engine, {args.rows} rows ({engine['decode_path']}): {engine['ms_per_step_free']:.1f} ms/step free, "
          f"{engine['ms_per_step_grammar']:.1f} ms/step under a grammar (+{engine['overhead_ms_per_step']:.2f} ms)")
    masking = measure_masking(args.rows, args.rounds)
    for name, result in masking.items():
        print(f"{name} grammar, mask + advance: " + ", ".join(f"{key[12:]}: {value:.2f} ms" for key, value in result.items() if key.startswith("ms_")))
    write_result(NAME, {"engine": engine, **masking, "other_cpu_cores": load.cores()})
    print(f"other load {load.cores():.2f} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
