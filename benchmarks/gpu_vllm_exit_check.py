"""On a GPU: does a process that used ``vllm-engine:`` exit by itself, and if not, what holds it?

Run with the environment of ``experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh`` (PYTHONPATH=/tmp/site ...)
on a GPU, or through ``benchmarks/cpu_vllm_check.sh exit`` on CPU::

    python3 benchmarks/gpu_vllm_exit_check.py MODEL_DIR plain      # one call, then a normal exit
    python3 benchmarks/gpu_vllm_exit_check.py MODEL_DIR shutdown   # the same, shutting vLLM's engine core down first

Prints ``calls done`` after the call. If the interpreter is still alive ``--grace`` seconds after
``main`` returned, every thread's stack is dumped to stderr and the process ends with status 1
(faulthandler's), so the caller sees where it hung. The caller lists the processes left over afterwards.
"""

import argparse
import faulthandler
import sys
import time

from langgraph_memagent import load_chat_model
from langgraph_memagent.agents.vllm_engine import _shut_down_engine_core


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="model directory")
    parser.add_argument("variant", choices=("plain", "shutdown"), help="exit as is, or shut the engine core down first")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds to wait for the exit before dumping stacks")
    args = parser.parse_args()
    start = time.perf_counter()
    model = load_chat_model(f"vllm-engine:{args.model}", temperature=0.0, engine_kwargs={
        "max_model_len": 2048, "enforce_eager": True, "gpu_memory_utilization": 0.15, "dtype": "bfloat16"})
    reply = model.invoke("Say hi.", max_tokens=8)
    print(f"calls done after {time.perf_counter() - start:.1f} s: {reply.content[:40]!r}", flush=True)
    if args.variant == "shutdown":
        _shut_down_engine_core(model._llm)  # what the model now also does at exit
        print("engine core shut down", flush=True)
    faulthandler.dump_traceback_later(args.grace, exit=True, file=sys.stderr)
    print(f"main returns at {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
