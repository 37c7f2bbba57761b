r"""GPU check of the vLLM paths: ``vllm serve`` (``vllm:``), the in-process engine (``vllm-engine:``), tools.

Not part of ``make bench`` (it needs vLLM). Driven on a GPU by the 2026-12-01 GPU check's
``experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh`` and on CPU by ``benchmarks/cpu_vllm_check.sh serve``,
which install vLLM and start the server; each subcommand writes one JSON result.

    # a tiny random-weight Qwen2 (SmolLM2's tokenizer), for the trainer's --use_vllm run
    python -m benchmarks.gpu_vllm_check tiny-qwen --tokenizer DIR --out /tmp/tinyqwen
    # against a running `vllm serve DIR --served-model-name smol ...`
    python -m benchmarks.gpu_vllm_check serve --model smol --base-url http://127.0.0.1:8000/v1 \
        --tokenizer DIR --json serve.json
    # vLLM in-process (vllm-engine:DIR), with the guidance structured-output backend
    python -m benchmarks.gpu_vllm_check engine --model DIR --json engine.json

Both model checks run the same things: one plain call; MemAgent on ``--samples`` generated RULER
``niah_single_1`` haystacks of ``--length`` tokens (1000-token chunks, 128-token memory, 64-token
answer, greedy), scored as RULER does (the reply holds the needle); forced tool calls
(``tool_choice="required"``, SUMER's two tools) checked against the tools' own pydantic schemas;
``response_format`` JSON; and the SUMER graph with ``tool_choice="required"`` (a deterministic fake
embedding, so no embedding model is needed). The engine check adds ``tool_choice="auto"``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _timed(results: dict[str, Any], name: str, fn: Any) -> Any:
    start = time.perf_counter()
    try:
        value = fn()
        results[name] = {"ok": True, **(value if isinstance(value, dict) else {"value": value})}
    except Exception as error:  # noqa: BLE001 - every check reports its own failure and the rest go on
        results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"[:2000], "traceback": traceback.format_exc()[-4000:]}
    results[name]["seconds"] = round(time.perf_counter() - start, 2)
    print(f"[{name}] {json.dumps(results[name], default=str)[:1500]}", flush=True)
    return results[name]


def tiny_qwen(tokenizer_dir: str, out: str, seed: int = 0) -> None:
    """A random-weight Qwen2 (2 layers, hidden 256) sharing SmolLM2's tokenizer and chat template."""
    import shutil

    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=256, intermediate_size=704, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=8192,
        tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
        dtype="bfloat16",
    )
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                                               pad_token_id=config.pad_token_id)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for name in ("chat_template.jinja",):
        if (Path(tokenizer_dir) / name).exists():
            shutil.copy(Path(tokenizer_dir) / name, Path(out) / name)
    print(f"tiny Qwen2 at {out}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters", flush=True)


def plot_training(history_json: str, out: str) -> None:
    """Reward, KL to the base model and the vLLM-vs-trainer log-prob gap per step of a ``--use_vllm`` run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    history = [row for row in json.loads(Path(history_json).read_text()) if "step" in row and "loss" in row]
    series = {
        "reward (mean of 8 rollouts)": "reward",
        "KL to the base model (per token)": "kl",
        "|trainer - vLLM| log-prob, per token (mean)": "sampling/sampling_logp_difference/mean",
    }
    figure, axes = plt.subplots(1, len(series), figsize=(4.2 * len(series), 3.2))
    for axis, (title, key) in zip(axes, series.items()):
        points = [(row["step"], row[key]) for row in history if key in row]
        axis.plot([x for x, _ in points], [y for _, y in points], marker="o")
        axis.set_title(title, fontsize=9)
        axis.set_xlabel("optimizer step")
        axis.set_ylim(bottom=0)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    print(f"wrote {out}", flush=True)


def _samples(tokenizer: Any, count: int, length: int) -> list[Any]:
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer
    from langgraph_memagent.evals import generate_task

    return generate_task("niah_single_1", length, codec=resolve_tokenizer(tokenizer), num_samples=count, seed=0)


def _memagent(model: Any, tokenizer: Any, samples: list[Any], concurrency: int) -> dict[str, Any]:
    from langgraph_memagent import build_memagent_graph
    from langgraph_memagent.evals.harness import score_output

    graph = build_memagent_graph(model, tokenizer=tokenizer, chunk_tokens=1000, memory_tokens=128, answer_tokens=64)
    start = time.perf_counter()
    outputs = graph.batch([{"question": s.question, "document": s.document} for s in samples], {"max_concurrency": concurrency})
    seconds = time.perf_counter() - start
    rows = []
    for sample, out in zip(samples, outputs):
        reply = out.get("response") or ""
        rows.append({
            "gold": sample.answers, "answer": out.get("answer"), "reply": reply[:300],
            "score": score_output(out.get("answer"), reply, [str(a) for a in sample.answers], sample.scoring_metric)[0],
            "chunks_read": out.get("chunks_read"), "llm_calls": out["usage"].get("llm_calls") if out.get("usage") else None,
            "memory_chars": len(out.get("memory") or ""),
        })
    return {
        "samples": len(samples), "graph_batch_seconds": round(seconds, 2),
        "score_sum": sum(r["score"] for r in rows), "metric": samples[0].scoring_metric, "rows": rows,
        "usage_total": {key: sum((out.get("usage") or {}).get(key, 0) or 0 for out in outputs)
                        for key in ("llm_calls", "input_tokens", "output_tokens")},
    }


def _check_calls(calls: list[dict[str, Any]]) -> dict[str, Any]:
    from langgraph_memagent.baselines.sumer_prompts import SEARCH_TOOL, SUBMIT_TOOL, SearchMemoryArgs, SubmitAnswerArgs

    schemas = {SEARCH_TOOL: SearchMemoryArgs, SUBMIT_TOOL: SubmitAnswerArgs}
    valid, problems = 0, []
    for call in calls:
        try:
            schemas[call["name"]].model_validate(call["args"])
            valid += 1
        except Exception as error:  # noqa: BLE001
            problems.append(f"{call.get('name')}: {error}"[:300])
    return {"calls": len(calls), "valid": valid, "problems": problems[:5], "examples": calls[:3]}


def _forced_tools(model: Any, samples: list[Any], tool_choice: str, max_tokens: int = 96) -> dict[str, Any]:
    from langgraph_memagent.baselines.sumer_prompts import SUMER_TOOLS

    bound = model.bind_tools(SUMER_TOOLS, tool_choice=tool_choice).bind(max_tokens=max_tokens)
    prompts = [f"Use the tools to answer: {s.question}" for s in samples]
    replies = bound.batch(prompts, {"max_concurrency": 8})
    calls = [dict(name=c["name"], args=c["args"]) for r in replies for c in r.tool_calls]
    result = _check_calls(calls)
    result.update(replies=len(replies), replies_with_calls=sum(bool(r.tool_calls) for r in replies),
                  invalid_tool_calls=sum(len(getattr(r, "invalid_tool_calls", []) or []) for r in replies),
                  text_examples=[r.content[:200] for r in replies[:2]])
    return result


def _response_format(model: Any) -> dict[str, Any]:
    from pydantic import BaseModel, Field

    class City(BaseModel):
        name: str = Field(description="a city name")
        population: int = Field(description="population")

    structured = model.with_structured_output(City, method="json_schema")
    parsed = structured.invoke("Name one large city and its population, as JSON.")
    return {"parsed": parsed.model_dump() if parsed is not None else None, "type": type(parsed).__name__}


def _sumer(model: Any, tokenizer: Any, samples: list[Any], max_context_tokens: int) -> dict[str, Any]:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memagent.baselines.sumer import build_sumer_graph

    graph = build_sumer_graph(model, embeddings=DeterministicFakeEmbedding(size=64), max_turns=4, tool_choice="required",
                              turn_tokens=128, answer_tokens=64, tokenizer=tokenizer, chunk_tokens=200,
                              max_context_tokens=max_context_tokens)
    outputs = graph.batch([{"question": s.question, "document": s.document} for s in samples], {"max_concurrency": 8})
    keys = ("stop_reason", "turns_used", "tool_calls", "invalid_tool_calls", "rejected_tool_calls", "forced_answer", "answer")
    rows = [{key: (out.get(key) if not isinstance(out.get(key), list) else len(out.get(key))) for key in keys} for out in outputs]
    return {"runs": rows,
            "tool_calls": sum(int(r["tool_calls"] or 0) for r in rows),
            "invalid_tool_calls": sum(int(r["invalid_tool_calls"] or 0) for r in rows)}


def _agemem(model: Any, tokenizer: Any, samples: list[Any], max_context_tokens: int) -> dict[str, Any]:
    """AgeMem's three stages with every first turn forced, the answer retrieved then submitted."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memagent.baselines.agemem import build_agemem_qa_graph

    graph = build_agemem_qa_graph(model, embeddings=DeterministicFakeEmbedding(size=64), tokenizer=tokenizer, chunk_tokens=1000,
                                  distractor_messages=1, distractor_sentences=4, turn_tokens=128, max_context_tokens=max_context_tokens,
                                  first_turn_tool_choice="required", write_mode="line", answer_mode="retrieve-submit")
    outputs = graph.batch([{"question": s.question, "document": s.document} for s in samples], {"max_concurrency": 8})
    keys = ("stop_reasons", "stage_turns", "tool_calls", "memory_item_count", "overflow_trims", "answer")
    rows = [{key: out.get(key) for key in keys} for out in outputs]
    invalid = sum(op.get("status") != "success" for out in outputs for op in out.get("memory_operations") or [])
    return {"runs": rows, "memory_operations": sum(len(out.get("memory_operations") or []) for out in outputs),
            "operations_failed": invalid, "submitted": sum((out.get("stop_reasons") or {}).get("answer") == "submitted" for out in outputs)}


CHECKS = ("plain_call", "memagent_niah", "tools_required", "tools_auto", "response_format_json_schema", "sumer_graph_required",
          "agemem_graph_required")


def run_model_checks(model: Any, tokenizer: Any, args: argparse.Namespace, results: dict[str, Any], auto: bool,
                     sample_tokenizer: Any = None) -> None:
    """``tokenizer`` goes to the graphs (None: the model's own); samples are sized with ``sample_tokenizer``."""
    samples = _samples(sample_tokenizer or tokenizer, args.samples, args.length)
    results["samples_meta"] = {"task": "niah_single_1", "length": args.length, "count": len(samples), "seed": 0}
    checks = {
        "plain_call": lambda: {"reply": model.invoke("What is 2+3? Answer briefly.", max_tokens=32).content[:200]},
        "memagent_niah": lambda: _memagent(model, tokenizer, samples, args.concurrency),
        "tools_required": lambda: _forced_tools(model, samples, "required"),
        "tools_auto": lambda: _forced_tools(model, samples, "auto"),
        "response_format_json_schema": lambda: _response_format(model),
        "sumer_graph_required": lambda: _sumer(model, tokenizer, samples[: min(4, len(samples))], args.max_context_tokens),
        "agemem_graph_required": lambda: _agemem(model, tokenizer or sample_tokenizer, samples[: min(4, len(samples))], args.max_context_tokens),
    }
    for name in filter(None, args.checks.split(",")):
        if name != "tools_auto" or auto:
            _timed(results, name, checks[name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tq = sub.add_parser("tiny-qwen", help="write a random-weight 2-layer Qwen2 with a given tokenizer")
    tq.add_argument("--tokenizer", required=True, help="directory whose tokenizer and chat template the model takes")
    tq.add_argument("--out", required=True, help="directory to write the model to")
    pt = sub.add_parser("plot-train", help="plot a --use_vllm run's trainer_state log history (reward, KL, log-prob gap)")
    pt.add_argument("--history", required=True, help="JSON list of the run's log_history rows")
    pt.add_argument("--out", required=True, help="PNG to write")
    helps = {"serve": "check a running `vllm serve` through vllm:", "engine": "check vLLM in-process through vllm-engine:",
             "hf": "the same checks on the transformers backend (a reference)"}
    for name, text in helps.items():
        p = sub.add_parser(name, help=text)
        p.add_argument("--model", required=True, help="served model name (serve) or model directory")
        p.add_argument("--json", required=True, help="file to write the results to")
        p.add_argument("--samples", type=int, default=8, help="niah_single_1 samples (default: %(default)s)")
        p.add_argument("--length", type=int, default=4096, help="haystack tokens (default: %(default)s)")
        p.add_argument("--concurrency", type=int, default=8, help="graph runs in flight (default: %(default)s)")
        p.add_argument("--checks", default=",".join(CHECKS), help="comma-separated checks to run (default: all, %(default)s)")
        p.add_argument("--max-context-tokens", type=int, default=7000, help="SUMER's and AgeMem's context budget, below the server's window (default: %(default)s)")
        if name == "serve":
            p.add_argument("--base-url", required=True, help="the server's OpenAI endpoint, e.g. http://127.0.0.1:8000/v1")
            p.add_argument("--tokenizer", required=True, help="local tokenizer directory for token-exact chunking")
        elif name == "engine":
            p.add_argument("--gpu-memory-utilization", type=float, default=0.3, help="vLLM's share of GPU memory (default: %(default)s)")
            p.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs (faster start)")
    args = parser.parse_args(argv)
    unknown = sorted(set(getattr(args, "checks", "").split(",")) - set(CHECKS) - {""})
    if unknown:
        parser.error(f"unknown check(s) {unknown}; expected some of {list(CHECKS)}")
    if args.command == "tiny-qwen":
        tiny_qwen(args.tokenizer, args.out)
        return 0
    if args.command == "plot-train":
        plot_training(args.history, args.out)
        return 0

    from langgraph_memagent import load_chat_model

    results: dict[str, Any] = {"command": args.command, "model": args.model, "argv": sys.argv[1:]}
    try:
        import vllm

        results["vllm_version"] = vllm.__version__
    except Exception as error:  # noqa: BLE001
        results["vllm_version"] = f"not importable: {error}"
    import torch

    results["torch"] = torch.__version__
    results["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    start = time.perf_counter()
    if args.command == "serve":
        model = load_chat_model(f"vllm:{args.model}", base_url=args.base_url, temperature=0)
        tokenizer: Any = args.tokenizer
        results["model_load_seconds"] = round(time.perf_counter() - start, 2)
        run_model_checks(model, tokenizer, args, results, auto=False)
    elif args.command == "hf":  # the same checks on the transformers backend (a reference, and a test of this script)
        model = load_chat_model(f"hf:{args.model}", temperature=0.0)
        results["model_load_seconds"] = round(time.perf_counter() - start, 2)
        run_model_checks(model, None, args, results, auto=True, sample_tokenizer=args.model)
    else:
        engine_kwargs = {"structured_outputs_config": {"backend": "guidance"}, "gpu_memory_utilization": args.gpu_memory_utilization,
                         "max_model_len": 8192, "enforce_eager": args.enforce_eager, "dtype": "bfloat16"}
        results["engine_kwargs"] = engine_kwargs
        model = load_chat_model(f"vllm-engine:{args.model}", temperature=0.0, top_p=1.0, engine_kwargs=engine_kwargs)
        results["model_load_seconds"] = round(time.perf_counter() - start, 2)
        run_model_checks(model, None, args, results, auto=True, sample_tokenizer=args.model)
    results["total_seconds"] = round(time.perf_counter() - start, 2)
    Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote {args.json}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
