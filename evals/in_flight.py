"""Resuming a comparison inside a sample: a MemAgent or InfMem run stopped midway goes on from its last step.

A 1M-token document is about 1,050 model calls, an hour or more on a CPU. ``memagent compare`` keeps each
finished sample in ``results.jsonl``; without more, a comparison stopped midway would start its unfinished long
samples again from their first chunk. So the graphs that resume from a checkpointer alone (MemAgent and what is
built on it: their chunks come back from the run's input checkpoint) run on a SQLite checkpointer in
``<out>/in_flight/``, one thread per graph x sample, and each of their model calls is logged beside it
(prompt and completion tokens, seconds so far). A resumed sample's result row then counts every call and
second it took, and says where it resumed (``resumed_at_call``). A finished sample's thread and log are
deleted; a sample stopped by an unreachable backend keeps them and resumes too.

>>> from langgraph_memagent.evals.in_flight import IN_FLIGHT_DIR
>>> IN_FLIGHT_DIR
'in_flight'
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from ..agents.extras import install_hint
from ..graphs.memagent import MemAgentGraph
from .results import complete_lines

IN_FLIGHT_DIR = "in_flight"


class SampleRun:
    """One graph x sample run of a comparison that cannot resume (its graph is not on the checkpointer): it starts
    afresh, keeps nothing and times itself."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}
        self.resuming = False
        self.calls_before: list[list[int | None]] = []
        self.seconds_before = 0.0
        self._started = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Wall seconds of this run so far, the earlier processes' included."""
        return self.seconds_before + time.perf_counter() - self._started

    def log(self, call: list[int | None]) -> None:
        """Record one model call (nothing to keep here)."""

    def finish(self) -> None:
        """The run's row is written."""

    def close(self) -> None:
        """Stopped before its row (backend down)."""


class InFlightRun(SampleRun):
    """A run on the comparison's checkpointer: it resumes what an earlier process left, and logs its calls beside it."""

    def __init__(self, folder: Path, thread_id: str, graph: Any) -> None:
        super().__init__()
        self.config = {"configurable": {"thread_id": thread_id}}
        self.log_path = folder / f"{thread_id}.jsonl"
        self.resuming = bool(graph.get_state(self.config).next)
        if not self.resuming:  # nothing to resume (or a finished run whose row was never written): start afresh
            graph.checkpointer.delete_thread(thread_id)
            self.log_path.unlink(missing_ok=True)
        lines, torn = complete_lines(self.log_path) if self.resuming and self.log_path.is_file() else ([], b"")
        if torn:  # a kill mid-write left a torn last line: that call is made again
            os.truncate(self.log_path, self.log_path.stat().st_size - len(torn))
        logged = [json.loads(line) for line in lines if line.strip()]
        self.calls_before = [entry[:2] for entry in logged]
        self.seconds_before = logged[-1][2] if logged else 0.0  # time up to the last logged call; the rest was lost
        self._log = self.log_path.open("a", encoding="utf-8")
        self._thread_id, self._checkpointer = thread_id, graph.checkpointer

    def log(self, call: list[int | None]) -> None:
        """Append one model call (its token counts) to the run's log, flushed: a kill loses no logged call."""
        self._log.write(json.dumps([*call, round(self.seconds, 3)]) + "\n")
        self._log.flush()

    def finish(self) -> None:
        """The run's row is written: drop its checkpoints and log."""
        self._log.close()
        self._checkpointer.delete_thread(self._thread_id)
        self.log_path.unlink(missing_ok=True)

    def close(self) -> None:
        """Stopped before its row (backend down): keep the checkpoints and log for the next run."""
        self._log.close()


class InFlight:
    """The SQLite checkpointer under ``<out>/in_flight/`` that the resumable graphs of a comparison run on.

    Without langgraph-checkpoint-sqlite (the ``serve`` extra) there is none: :meth:`attach` says so once,
    in one line, and those samples start again from their first step when interrupted.
    """

    def __init__(self, out: Path) -> None:
        self.folder = Path(out) / IN_FLIGHT_DIR
        self._connection: sqlite3.Connection | None = None
        self.checkpointer: Any = None
        self._told = False  # the one line about the missing extra
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ModuleNotFoundError:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        # One connection for every sample thread: SqliteSaver serialises its use with a lock.
        self._connection = sqlite3.connect(self.folder / "checkpoints.sqlite", check_same_thread=False)
        self.checkpointer = SqliteSaver(self._connection)

    def attach(self, graph: Any) -> Any:
        """``graph`` on this checkpointer when it can resume from one alone (MemAgent, InfMem), else as it is."""
        if not isinstance(graph, MemAgentGraph):
            return graph
        if self.checkpointer is None:
            if not self._told:
                self._told = True
                print(f"compare: an interrupted {graph.name} sample will start again from its first chunk (resuming inside "
                      f"a sample needs langgraph-checkpoint-sqlite: {install_hint('serve')})", file=sys.stderr)
            return graph
        return graph.copy({"checkpointer": self.checkpointer})

    @property
    def resume_note(self) -> str:
        """What the Ctrl-C message adds about abandoned samples."""
        return " (MemAgent and InfMem samples then resume at the chunk they were on)" if self.checkpointer else ""

    def begin(self, graph: Any, key: tuple) -> SampleRun:
        """The run of ``graph`` on one sample, resumed if an earlier process left it unfinished; a plain
        :class:`SampleRun` for a graph :meth:`attach` left as it was."""
        if self.checkpointer is None or graph.checkpointer is not self.checkpointer:
            return SampleRun()
        thread_id = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:24]  # key: graph, task, length, index, seed, sample
        return InFlightRun(self.folder, thread_id, graph)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


__all__ = ["IN_FLIGHT_DIR", "InFlight", "InFlightRun", "SampleRun"]
