"""Shared helpers: an instant chat model, noise documents, token-count parsing, memory probes, results."""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# 1K = 1024 tokens, as in RULER and the MemAgent paper (their "3.5M" is 3584K = 3,670,016).
_SUFFIXES = {"": 1, "K": 1024, "M": 1024 * 1024}


class InstantChatModel(BaseChatModel):
    """Replies with a fixed short string at once, so only the code around the model is timed.

    Usage is reported (graphs sum it) but approximated as 4 characters per token:
    counting real tokens would add per-call work that is not orchestration.
    """

    reply: str = "The special magic number has not been found yet."

    @property
    def _llm_type(self) -> str:
        return "instant"

    def _result(self, messages: list[BaseMessage]) -> ChatResult:
        usage = {"input_tokens": len(messages[-1].text) // 4, "output_tokens": len(self.reply) // 4}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply, usage_metadata=usage))])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return self._result(messages)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return self._result(messages)


def embedded_codec():
    """The embedded SmolLM2 model's own tokenizer as a TokenCodec (no model weights loaded)."""
    from langgraph_memagent.agents.embedded import embedded_model_dir
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer

    return resolve_tokenizer(str(embedded_model_dir()))


def parse_tokens(text: str) -> int:
    """``"128K"`` -> 131072, ``"3.5M"`` -> 3670016, ``"5000"`` -> 5000."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KkMm]?)\s*", text)
    if not match:
        raise ValueError(f"expected a token count such as 5000, 128K or 3.5M, got {text!r}")
    return int(float(match.group(1)) * _SUFFIXES[match.group(2).upper()])


def noise_document(codec, target_tokens: int) -> tuple[str, int]:
    """The RULER noise line repeated (newline-separated) to at most ``target_tokens`` tokens.

    Every line tokenizes identically, so the token count is exactly linear in the line
    count; two small encodes give the line count without encoding the whole document.
    Returns the document and its exact token count.
    """
    from langgraph_memagent.agents.tokenizers import encode_long
    from langgraph_memagent.evals.ruler import NOISE_LINE

    def tokens(lines: int) -> int:
        return len(encode_long("\n".join([NOISE_LINE] * lines), codec))

    per_line = tokens(101) - tokens(100)
    base = tokens(100) - 100 * per_line
    lines = (target_tokens - base) // per_line
    return "\n".join([NOISE_LINE] * lines), base + lines * per_line


def current_rss() -> int:
    """Resident set size of this process in bytes."""
    import psutil

    return psutil.Process().memory_info().rss


def reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) so :func:`peak_rss` measures from now (Linux)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def peak_rss() -> int:
    """Peak resident set size in bytes since start or the last :func:`reset_peak_rss` (Linux)."""
    with open("/proc/self/status") as handle:
        return int(re.search(r"VmHWM:\s+(\d+) kB", handle.read()).group(1)) * 1024


def machine() -> dict[str, Any]:
    """What the numbers depend on, recorded beside them; the load average shows concurrent work.

    The CPU model and the instruction set PyTorch dispatches to are part of it: the same engine
    measured 2.7x (float32) to 5x (int4 decode) slower on an AVX2-only host than on the earlier
    one, so a number is only comparable with numbers of the same CPU.
    """
    import langgraph.version
    import torch

    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "langgraph": langgraph.version.__version__,
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as handle:
            found = re.search(r"^model name\s*:\s*(.+)$", handle.read(), re.MULTILINE)
    except OSError:  # not Linux
        return platform.processor() or None
    return found.group(1).strip() if found else None


class OtherLoad:
    """CPU used by processes other than this one and its waited-for children, in cores.

    The machine is shared; a number measured while something else was busy is reported
    with how busy it was. ``cores()`` is (system busy CPU time - our CPU time) / wall time.
    """

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self._start = (time.monotonic(), self._system_busy(), self._own())

    @staticmethod
    def _system_busy() -> float:
        import psutil

        times = psutil.cpu_times()
        return sum(times) - times.idle - getattr(times, "iowait", 0.0) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)

    def _own(self) -> float:
        times = self._process.cpu_times()
        return times.user + times.system + times.children_user + times.children_system

    def cores(self) -> float:
        wall, busy, own = self._start
        elapsed = time.monotonic() - wall
        other = (self._system_busy() - busy) - (self._own() - own)
        return round(max(0.0, other) / elapsed, 3) if elapsed > 0 else 0.0


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _running_module(name: str) -> str:
    """The benchmark module this process runs (``python -m benchmarks.<module>``), else ``name``."""
    module = Path(sys.argv[0]).stem
    return module if module.startswith("bench_") else name


def earlier_result(parser: Any, path: Path, *sections: str, option: str = "--before") -> list[Any]:
    """``sections`` of an earlier result file of the running benchmark, named by ``option``; a bad file is one ``parser.error``."""
    try:
        earlier = json.loads(path.read_text())
        return [earlier[section] for section in sections]
    except (OSError, ValueError, KeyError, TypeError) as error:
        parser.error(f"{option} must be a result file of this benchmark, got {str(path)!r} ({type(error).__name__}: {error})")


def write_result(name: str, result: dict[str, Any]) -> Path:
    """Write ``results/<name>.json`` atomically (temp file in the same directory, then rename)."""
    from langgraph_memagent.agents.atomic_files import write_atomic

    path = RESULTS_DIR / f"{name}.json"
    payload = {
        "benchmark": name,
        # The module that ran (results named after a variant, e.g. bench_locomo_tools, come from bench_locomo).
        "command": " ".join([Path(sys.executable).name, "-m", f"benchmarks.{_running_module(name)}", *sys.argv[1:]]),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        **result,
    }
    return write_atomic(path, json.dumps(payload, indent=2) + "\n")


def run_compare_benchmark(name: str, settings: dict[str, Any], config: Any, **model_options: Any) -> int:
    """Run a ``memagent compare`` configuration on its embedded model (``config.model``), greedy (a
    re-run reproduces every answer), with ``model_options`` for ``load_chat_model`` (e.g.
    ``compile_decode=True``), then record and print its summary."""
    from langgraph_memagent.agents.loading import load_chat_model
    from langgraph_memagent.evals.harness import run_comparison

    load = OtherLoad()
    model = load_chat_model(config.model, temperature=0, **model_options)
    result = run_comparison(config, model=model)
    engine, lookup = model.engine, model.prompt_lookup_in_use  # prompt lookup's counters: how much of the decoding the drafts carried
    write_result(name, {
        "settings": settings, "out": str(result.out), "summary_md": result.markdown, "other_cpu_cores": load.cores(),
        "prompt_lookup_num_tokens": lookup, "drafted_tokens": engine.drafted_tokens, "accepted_tokens": engine.accepted_tokens,
    })
    print(result.markdown)
    print(
        f"{name}: tables and plots in {result.out}; prompt lookup ({lookup}-token drafts) kept "
        f"{engine.accepted_tokens:,} of {engine.drafted_tokens:,} drafted tokens; other load {load.cores():.2f} cores"
    )
    return 0
