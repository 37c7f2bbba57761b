"""The comparison's results: one JSON line per graph and sample (appended and flushed, read back on resume),
and the cells (one graph at one length) the tables and plots summarise them into."""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..agents.atomic_files import replacing
from .lengths import ComparisonError


RESULTS_FILE = "results.jsonl"


MANIFEST_FILE = "comparison.json"


def result_key(line: dict[str, Any]) -> tuple:
    return (line["graph"], line["task"], line["length"], line["index"], line["seed"])


def complete_lines(path: Path) -> tuple[list[bytes], bytes]:
    """The file's complete lines and its torn tail (after the last newline; a kill mid-write leaves one).

    Split as bytes: a tail torn inside a multi-byte UTF-8 character is still only the tail.
    """
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    return data[:end].splitlines(), data[end:]


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a results file; a torn last line (a kill mid-write) is dropped.

    Later lines win when a key repeats (a retried error).
    """
    path = Path(path)
    if not path.is_file():
        return []
    lines, _ = complete_lines(path)
    records: dict[tuple, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
            records[result_key(record)] = record
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
            raise ComparisonError(f"{path}: line {number} is not a results record ({error})") from None
    return list(records.values())


def _repair_torn_tail(path: Path) -> None:
    """Cut a partial last line so appended lines start on a fresh line."""
    if path.is_file() and path.stat().st_size:
        _, torn = complete_lines(path)
        if torn:
            print(
                f"note: {path}: dropped a torn last line ({len(torn)} bytes, from an interrupted run); its sample runs again",
                file=sys.stderr,
            )
            with replacing(path, "wb") as file:  # the complete lines byte for byte
                file.write(path.read_bytes()[: -len(torn)])


class ResultsWriter:
    """Appends one JSON line per finished sample and flushes it at once (thread-safe)."""

    def __init__(self, path: Path):
        _repair_torn_tail(path)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


@dataclass
class Cell:
    """One graph at one length: accuracy and mean cost per sample."""

    task: str
    graph: str
    length: str
    length_tokens: float
    """Position on the length axis: the generated length, or the mean document tokens of a data file."""
    samples: int
    errors: int
    accuracy: float
    """Mean score in percent; a sample that failed counts as 0."""
    llm_calls: float | None
    prompt_tokens: float | None
    completion_tokens: float | None
    seconds: float | None
    flops: float | None
    """Mean estimated FLOPs per sample (None without a FLOP model or token counts)."""
    concurrency: int | str | None = None
    """Samples in flight at once when these samples ran (``--concurrency``), which wall times depend on:
    a number, a range such as ``"4-8"`` when a resumed run changed it, None when not recorded."""


def count_range(counts: Iterable[int]) -> int | str | None:
    """One count, or the range of several (``"2-4"``); None for none.

    >>> count_range([2, 2]), count_range([4, 2, 3]), count_range([])
    (2, '2-4', None)
    """
    known = sorted(set(counts))
    if not known:
        return None
    return known[0] if len(known) == 1 else f"{known[0]}-{known[-1]}"
