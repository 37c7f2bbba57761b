"""MemAgent's own calls decoded with and without prompt lookup: the engine and llama.cpp, side by side.

First MemAgent reads one generated ``niah_single_1`` haystack (``--length`` tokens,
1000-token chunks, 128-token memory, greedy) on the embedded engine with drafts off, and every
model call it makes is recorded (prompt and completion token ids). Then each recorded prompt is
replayed greedily in every variant, round by round and interleaved, so machine noise hits them
alike: the engine with drafts off and with each of ``--lookup``'s draft lengths, and, when
``llama-cpp-python`` is installed, llama.cpp on the same GGUF and threads, plain and with its own
``LlamaPromptLookupDecoding``, each with flash attention on (llama.cpp's default) and off (``..._flash_off``,
llama-cpp-python's), the faster of each pair being the headline's anchor; where the CPU checks the headline's drafts through the bfloat16
weights (AMX tiles: :data:`~langgraph_memagent.agents.quantization.AMX_DENSE_MIN_ROWS`), the same
drafts checked through the int4 kernel as well (``..._int4_checks``); all of them decode on the main thread, one OpenMP team for both
engines (llama.cpp's CPU backend shares torch's OpenMP runtime). Each call's prefill is timed inside it (the engine's prefill of
the request; llama.cpp's time to its first token), so decode tokens per second are the
completion tokens after the first over the rest of the call's time. Also reports how many replayed completions equal the recorded
ones (a checked draft rounds differently from single steps) and the share of drafted tokens the
model kept.

>>> summary = _summary({"calls": [2.0, 4.0], "prefill": [0.5, 1.0]}, [[1, 2, 3], [4, 5, 6, 7]])
>>> summary["decode_tokens_per_s"], summary["call_s"]
(1.1111111111111112, 6.0)
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ._common import OtherLoad, write_result
from .bench_decode import LLAMA_CPP_INSTALL, llama_cpp_model

NAME = "bench_prompt_lookup"


def _record_calls(model: Any, length: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """MemAgent's calls on one generated haystack: each prompt and the completion the engine gave it."""
    from langgraph_memagent import build_memagent_graph
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer
    from langgraph_memagent.evals.ruler import generate_task

    engine, calls = model.engine, []
    submit = engine.submit

    def recording_submit(prompt_ids: list[int], params: Any, grammar: str | None = None) -> Any:
        future = submit(prompt_ids, params, grammar)
        future.add_done_callback(lambda done: calls.append((list(prompt_ids), done.result().completion_token_ids)))
        return future

    engine.submit = recording_submit
    try:
        sample = generate_task("niah_single_1", length, codec=resolve_tokenizer(model=model), num_samples=1, seed=seed)[0]
        build_memagent_graph(model, chunk_tokens=1000, memory_tokens=128).invoke({"question": sample.question, "document": sample.document})
    finally:
        engine.submit = submit
    return calls


def _timing_prefill(engine: Any) -> list[float]:
    """The durations of ``engine``'s prefills from now on, appended as they happen (the engine's worker thread runs them)."""
    durations: list[float] = []
    prefill = engine._prefill

    def timed(request: Any) -> Any:
        started = time.perf_counter()
        try:
            return prefill(request)
        finally:
            durations.append(time.perf_counter() - started)

    engine._prefill = timed
    return durations


def _engine_call(engine: Any, prefills: list[float], prompt: list[int], max_tokens: int, draft_tokens: int) -> tuple[float, float, list[int]]:
    """One greedy call drafting ``draft_tokens`` (0: none): its whole time, its prefill's (first token included) and its completion."""
    from langgraph_memagent.agents.sampling import SamplingParams

    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, top_p=1.0, prompt_lookup_num_tokens=draft_tokens)
    started = time.perf_counter()
    completion = engine.serve_while(lambda: engine.submit(prompt, params).result())
    return time.perf_counter() - started, prefills[-1], completion.completion_token_ids


def _int4_checking_step(model: Any) -> Any:
    """A fused step of ``model`` whose every product runs the int4 kernel: draft checks as they ran
    before CPUs with AMX tiles sent products of ``AMX_DENSE_MIN_ROWS`` rows to the bfloat16 weights."""
    from langgraph_memagent.agents.fused_decode import create_decode_step
    from langgraph_memagent.agents.quantization import DENSE_PREFILL_MIN_ROWS, Int4Linear

    layers = [module for module in model.modules() if isinstance(module, Int4Linear)]
    kept = [layer.dense_min_rows for layer in layers]
    for layer in layers:
        layer.dense_min_rows = DENSE_PREFILL_MIN_ROWS
    try:
        return create_decode_step(model)
    finally:
        for layer, rows in zip(layers, kept):
            layer.dense_min_rows = rows


def _llama_cpp_call(llm: Any, prompt: list[int], max_tokens: int) -> tuple[float, float, list[int]]:
    """One greedy call: its whole time, the time to its first token (the prefill) and its completion."""
    llm.reset()  # no prompt reuse from the call before
    started = time.perf_counter()
    tokens: list[int] = []
    for token in llm.generate(prompt, temp=0.0, reset=False):
        if not tokens:
            prefill = time.perf_counter() - started
        tokens.append(token)
        if token == llm.token_eos() or len(tokens) == max_tokens:
            break
    return time.perf_counter() - started, prefill, tokens


def _summary(times: dict[str, list[float]], completions: list[list[int]]) -> dict[str, Any]:
    """Totals over the replayed calls (each call's time its median over rounds, already taken)."""
    call, prefill = sum(times["calls"]), sum(times["prefill"])
    decoded = sum(len(tokens) - 1 for tokens in completions)  # the first token comes with the prefill
    return {"call_s": call, "prefill_s": prefill, "decode_tokens": decoded, "decode_tokens_per_s": decoded / (call - prefill)}


def _draft_lengths(text: str) -> list[int]:
    """``--lookup``'s comma-separated draft lengths, each an integer >= 1.

    >>> _draft_lengths("4,8")
    [4, 8]
    """
    try:
        lengths = [int(part) for part in text.split(",")]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated draft lengths >= 1 such as 4,8, got {text!r}")
    return lengths


def main(argv: list[str] | None = None) -> int:
    from langgraph_memagent.agents.prompt_lookup import DRAFT_TOKENS

    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--length", default="8k", help="haystack length MemAgent reads to make the calls (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=21, help="seed of the generated haystack (default: %(default)s)")
    parser.add_argument(
        "--lookup", type=_draft_lengths, default=[DRAFT_TOKENS],
        help=f"the engine's draft tokens, one drafting variant per comma-separated value; the first is the headline (default: {DRAFT_TOKENS})",
    )
    parser.add_argument("--llama-cpp-lookup", type=int, default=10, help="llama.cpp's draft tokens, its own default (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; each replays every call in every variant (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent import load_chat_model
    from langgraph_memagent.agents.quantization import Int4Linear
    from langgraph_memagent.evals.lengths import parse_length

    # Every variant decodes on this thread (serve_while), so one thread holds an OpenMP team:
    # llama.cpp's CPU backend loads torch's libgomp too, and two teams on 2 cores put the runtime
    # in its slow mode (an engine per variant, each on its own worker thread, measured 1.4x slower).
    # No prefix cache: a replayed prompt would otherwise skip its prefill.
    model = load_chat_model("smollm2-135m", temperature=0, prompt_lookup_num_tokens=0, prefix_cache_size=0)
    engine = model.engine
    if not engine.can_draft:
        raise SystemExit(f"{NAME}: drafts need the eager fused int4 step, but this engine decodes through {engine.decode_path!r}")
    recorded = engine.serve_while(_record_calls, model, parse_length(args.length), args.seed)
    max_tokens = 128  # MemAgent's memory budget; the final answer's calls stop well before it
    engines = {f"engine_lookup{tokens}" if tokens else "engine": tokens for tokens in [0, *args.lookup]}  # variant: draft tokens
    headline = f"engine_lookup{args.lookup[0]}"
    fused_steps = {name: engine._fused_step for name in engines}
    if min(module.dense_min_rows for module in engine.model.modules() if isinstance(module, Int4Linear)) <= args.lookup[0] + 1:
        # This CPU checks the headline's drafts through the bfloat16 weights: the same drafts through the int4 kernel beside it.
        engines[f"{headline}_int4_checks"] = args.lookup[0]
        fused_steps[f"{headline}_int4_checks"] = _int4_checking_step(engine.model)
    prefills = _timing_prefill(engine)
    drafted = {name: [0, 0] for name in engines}  # variant: tokens drafted, tokens kept
    llamas = {}  # MemAgent's prompts and replies fit 4,096 tokens
    for suffix, flash_attn in (("", True), ("_flash_off", False)):  # llama.cpp's own default, then llama-cpp-python's
        llamas[f"llama_cpp{suffix}"] = llama_cpp_model(4096, logits_all=False, flash_attn=flash_attn)
        llamas[f"llama_cpp_lookup{suffix}"] = llama_cpp_model(4096, draft_tokens=args.llama_cpp_lookup, flash_attn=flash_attn)
    llamas = {name: llm for name, llm in llamas.items() if llm is not None}
    variants = [*engines, *llamas]
    times = {name: {"calls": [[] for _ in recorded], "prefill": [[] for _ in recorded]} for name in variants}
    completions: dict[str, list[list[int]]] = {name: [] for name in variants}
    load = OtherLoad()
    for round_index in range(args.rounds):
        for index, (prompt, _) in enumerate(recorded):
            for name in variants:
                if name in engines:
                    before = engine.drafted_tokens, engine.accepted_tokens
                    engine._fused_step = fused_steps[name]
                    seconds, prefill, tokens = _engine_call(engine, prefills, prompt, max_tokens, engines[name])
                    drafted[name][0] += engine.drafted_tokens - before[0]
                    drafted[name][1] += engine.accepted_tokens - before[1]
                else:
                    seconds, prefill, tokens = _llama_cpp_call(llamas[name], prompt, max_tokens)
                times[name]["prefill"][index].append(prefill)
                times[name]["calls"][index].append(seconds)
                if round_index == 0:
                    completions[name].append(tokens)
        print(f"  round {round_index + 1}/{args.rounds} done", flush=True)
    for llm in llamas.values():
        llm.close()  # left to exit, llama-cpp-python's teardown raises
    results = {}
    for name in variants:
        medians = {key: [statistics.median(per_call) for per_call in values] for key, values in times[name].items()}
        results[name] = _summary(medians, completions[name])
    reference = [completion for _, completion in recorded]
    agreement = {
        **{f"{name}_equal_to_engine": sum(a == b for a, b in zip(completions[name], completions["engine"])) for name in engines if name != "engine"},
        "engine_equal_to_recorded": sum(a == b for a, b in zip(completions["engine"], reference)),
        **({"llama_cpp_lookup_equal_to_llama_cpp": sum(a == b for a, b in zip(completions["llama_cpp_lookup"], completions["llama_cpp"]))}
           if llamas else {}),
    }
    # The anchor for each kind of llama.cpp decoding is its faster flash-attention setting in this run.
    fastest = {kind: max((name for name in llamas if name.removesuffix("_flash_off") == kind), key=lambda name: results[name]["decode_tokens_per_s"])
               for kind in ("llama_cpp", "llama_cpp_lookup")} if llamas else {}
    ratios = {f"{name}_vs_{other}": results[name]["decode_tokens_per_s"] / results[other]["decode_tokens_per_s"]
              for name in variants for other in variants if name != other}
    result = {
        "settings": vars(args),
        "calls": len(recorded),
        "prompt_tokens": sum(len(prompt) for prompt, _ in recorded),
        "results": results,
        "decode_speed_ratios": ratios,
        "completions_equal": agreement,
        "drafted_tokens": {name: counts[0] for name, counts in drafted.items() if engines[name]},
        "kept_share_of_drafted": {name: counts[1] / max(counts[0], 1) for name, counts in drafted.items() if engines[name]},
        "llama_cpp": "measured" if llamas else f"not installed: {LLAMA_CPP_INSTALL}",
        "fastest_llama_cpp": fastest,
        "other_cpu_cores": load.cores(),
    }
    write_result(NAME, result)
    engine.close()
    for name, row in results.items():
        print(f"  {name:17s} decode {row['decode_tokens_per_s']:6.1f} tok/s  prefill {row['prefill_s']:6.1f} s  calls {row['call_s']:6.1f} s")
    print(
        f"{NAME}: {len(recorded)} MemAgent calls; engine with {args.lookup[0]}-token drafts vs without, decode "
        f"{ratios[f'{headline}_vs_engine']:.2f}x, the same completion in {agreement[f'{headline}_equal_to_engine']} of "
        f"{len(recorded)}; kept {result['kept_share_of_drafted'][headline]:.0%} of drafted tokens; "
        + (f"checks through bfloat16 vs int4 {ratios[f'{headline}_vs_{headline}_int4_checks']:.2f}x; "
           if f"{headline}_int4_checks" in engines else "")
        + ("".join(f"vs {kind.replace('_', ' ').replace('llama cpp', 'llama.cpp')} ({name}) {ratios[headline + '_vs_' + name]:.2f}x; "
                   for kind, name in fastest.items()) if llamas else f"llama.cpp: {result['llama_cpp']}; ")
        + f"other load {result['other_cpu_cores']:.2f} cores"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
