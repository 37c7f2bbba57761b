"""AgeMem's memory-writing step as a curriculum: episodes over the evidence sessions alone.

An AgeMem episode earns its memory reward only when a stored item holds an evidence turn,
and its answer only when that item is found again. Untrained, the embedded 135M policy
stores the ``add_memory`` schema's description instead, and a whole episode (every session,
a distractor, the question: 9 calls over a context that grows to 3K tokens) costs 52 minutes
per optimizer step on 2 cores. With ``agemem_sessions="evidence"`` stage 1 receives only the
sessions that hold the row's evidence turns (usually one message), so a rollout is a few
short calls and its reward turns on whether the policy stores what it was just shown. This
is ours, not the AgeMem paper's; the held-out evaluation still runs whole episodes.
Untrained, the embedded policy stored no evidence turn in 16 of 16 such rollouts (measured),
so on its own this curriculum does not yet give GRPO a memory signal to learn from.
"""

from __future__ import annotations

from typing import Any

from ..graphs.registry import GRAPHS

AGEMEM_SESSIONS = ("all", "evidence")
"""``agemem_sessions`` values: every session (the paper's episode) or the evidence sessions alone."""


def evidence_sessions(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its turns cut to the sessions that hold its evidence turns, in order.

    >>> row = {"question": "Where?", "document": "...", "evidence": ["D2:1"], "turns": [
    ...     {"dia_id": "D1:1", "session": 1, "speaker": "Ann", "text": "Hi"},
    ...     {"dia_id": "D2:1", "session": 2, "speaker": "Ann", "text": "I moved to Oslo."},
    ...     {"dia_id": "D2:2", "session": 2, "speaker": "Bo", "text": "Nice!"}]}
    >>> [turn["dia_id"] for turn in evidence_sessions(row)["turns"]]
    ['D2:1', 'D2:2']
    """
    turns = row.get("turns") or []
    evidence = set(row.get("evidence") or ())
    if not evidence or not evidence <= {turn.get("dia_id") for turn in turns}:
        raise ValueError(f"agemem_sessions 'evidence' needs the row's evidence ids among its turns, got {row.get('evidence')!r}")
    sessions = {turn.get("session") for turn in turns if turn.get("dia_id") in evidence}
    return {**row, "turns": [turn for turn in turns if turn.get("session") in sessions]}


def evidence_sessions_input(row: dict[str, Any]) -> dict[str, Any]:
    """``graph_input(row)`` of the writing curriculum: AgeMem's input over the evidence sessions alone."""
    return GRAPHS["agemem"].graph_input(evidence_sessions(row))


__all__ = ["AGEMEM_SESSIONS", "evidence_sessions", "evidence_sessions_input"]
