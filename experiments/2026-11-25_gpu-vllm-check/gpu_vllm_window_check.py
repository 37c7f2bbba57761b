"""On a GPU (after `experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh recv .c1`, then `recv .c2 install`): vllm-engine reports max_model_len, and SUMER stops on context_overflow inside it.

Run with the environment of `gpu_vllm_check.sh` (PYTHONPATH=/tmp/site ...): `python3 experiments/2026-11-25_gpu-vllm-check/gpu_vllm_window_check.py`; writes $OUT/window_check.json.
"""
import json, os, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph_memagent import load_chat_model
from langgraph_memagent.agents.loading import context_window
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.baselines.sumer import build_sumer_graph
from langgraph_memagent.evals import generate_task

tiny = "/tmp/gpu/tinyqwen"
start = time.perf_counter()
model = load_chat_model(f"vllm-engine:{tiny}", temperature=1.0, engine_kwargs={
    "max_model_len": 1024, "enforce_eager": True, "gpu_memory_utilization": 0.3, "dtype": "bfloat16",
    "structured_outputs_config": {"backend": "guidance"}})
result = {"context_window": context_window(model), "load_s": round(time.perf_counter() - start, 1)}
samples = generate_task("niah_single_1", 4096, codec=resolve_tokenizer(tiny), num_samples=4, seed=0)
graph = build_sumer_graph(model, embeddings=DeterministicFakeEmbedding(size=64), max_turns=8, tool_choice="required",
                          turn_tokens=128, answer_tokens=64, chunk_tokens=200)
runs = []
for s in samples:
    try:
        out = graph.invoke({"question": s.question, "document": s.document})
        runs.append({"stop_reason": out.get("stop_reason"), "turns_used": out.get("turns_used")})
    except Exception as error:
        runs.append({"error": f"{type(error).__name__}: {error}"[:300]})
result["sumer_runs"] = runs
print("RESULT", json.dumps(result), flush=True)
open(os.path.join(os.environ.get("OUT", "/tmp"), "window_check.json"), "w").write(json.dumps(result, indent=1))
os._exit(0)  # written when a vllm-engine: process did not exit by itself (fixed since: VLLMEngineChatModel stops its engine core at exit)
