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

Under ``write_mode="line"`` (the graph's forced ``add_memory`` of one line) the untrained
policy keeps the session's first turn or its date header almost always, a position shortcut
that leaves the evidence line below chance. ``agemem_sessions="evidence-shuffled"`` then
shuffles each session's turns anew for every rollout, as the MemAgent preset balances its
gold needle's position: a line's place no longer tells whether it is evidence, so what GRPO
can reinforce is its content.

Scored by AgeMem's composite, such a rollout still earns mostly its answer and context parts,
neither of which says which line was worth keeping. ``write_curriculum`` (the QA graph's
``build_only``) ends the rollout after stage 1 and scores it by the share of the row's
evidence turns its stored items hold (:class:`.tool_use.MemoryRecallReward`), as SUMER's search
curriculum scores its searches.

The answering step has a curriculum of its own, as SUMER's reading step did:
``agemem_sessions="given-memory"`` skips stage 1 and starts each rollout from a memory that
holds the row's evidence turns among other turns of its conversation
(:func:`given_memory_input`), so the distractor stage and the question run as in a whole
episode and AgeMem's composite scores the answer, while what was stored is known.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..baselines.agemem import locomo_turn_line
from ..graphs.registry import GRAPHS

AGEMEM_SESSIONS = ("all", "evidence", "evidence-shuffled", "given-memory")
"""``agemem_sessions`` values: every session (the paper's episode), the evidence sessions alone, those with their turns
shuffled, or no stage 1 and a given memory holding the evidence (:func:`given_memory_input`)."""

GIVEN_MEMORY_ITEMS = 6
"""Items of a given memory: about what the embedded policy stores in a whole episode of a generated conversation
(6.5-6.6 items a conversation in line mode, measured), so retrieval has to pick the evidence out."""


def _turns_and_evidence(row: dict[str, Any], sessions: str) -> tuple[list[dict[str, Any]], set[str]]:
    """The row's turns and evidence ids, refused in one line (naming ``agemem_sessions``) unless every id is a turn's."""
    turns = row.get("turns") or []
    evidence = set(row.get("evidence") or ())
    if not evidence or not evidence <= {turn.get("dia_id") for turn in turns}:
        raise ValueError(f"agemem_sessions {sessions!r} needs the row's evidence ids among its turns, got {row.get('evidence')!r}")
    return turns, evidence


def evidence_sessions(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its turns cut to the sessions that hold its evidence turns, in order.

    >>> row = {"question": "Where?", "document": "...", "evidence": ["D2:1"], "turns": [
    ...     {"dia_id": "D1:1", "session": 1, "speaker": "Ann", "text": "Hi"},
    ...     {"dia_id": "D2:1", "session": 2, "speaker": "Ann", "text": "I moved to Oslo."},
    ...     {"dia_id": "D2:2", "session": 2, "speaker": "Bo", "text": "Nice!"}]}
    >>> [turn["dia_id"] for turn in evidence_sessions(row)["turns"]]
    ['D2:1', 'D2:2']
    """
    turns, evidence = _turns_and_evidence(row, "evidence")
    sessions = {turn.get("session") for turn in turns if turn.get("dia_id") in evidence}
    return {**row, "turns": [turn for turn in turns if turn.get("session") in sessions]}


def evidence_sessions_input(row: dict[str, Any]) -> dict[str, Any]:
    """``graph_input(row)`` of the writing curriculum: AgeMem's input over the evidence sessions alone."""
    return GRAPHS["agemem"].graph_input(evidence_sessions(row))


def _row_draw(seed: int, row: dict[str, Any], calls: Counter[str]) -> random.Random:
    """The ``n``-th draw for ``row``: from ``(seed, the row's question and evidence, n)`` alone, so a resumed run's
    unseen rows get the draws an uninterrupted run gives them."""
    key = f"{seed}/{row.get('question')}/{row.get('evidence')}"
    draw = random.Random(zlib.crc32(f"{key}/{calls[key]}".encode()))
    calls[key] += 1
    return draw


def shuffled_evidence_sessions_input(seed: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``graph_input`` of the shuffled writing curriculum: each call shuffles every evidence session's turns anew.

    The ``n``-th call for a row draws its order from ``(seed, the row's question and evidence, n)``
    alone, so a row's orders do not depend on which rows came before it: a run resumed from a
    checkpoint gives the rows it had not yet seen the orders an uninterrupted run gives them
    (a row seen on both sides of the resume restarts at ``n = 0``), while the rollouts of one
    question see different orders.

    >>> row = {"question": "Where?", "document": "...", "evidence": ["D1:3"], "turns": [
    ...     {"dia_id": f"D1:{i}", "session": 1, "speaker": "Ann", "text": f"line {i}"} for i in range(1, 6)]}
    >>> shuffled = shuffled_evidence_sessions_input(seed=0)
    >>> [[turn["dia_id"] for turn in shuffled(row)["turns"]] for _ in range(2)]
    [['D1:4', 'D1:1', 'D1:3', 'D1:5', 'D1:2'], ['D1:5', 'D1:3', 'D1:1', 'D1:2', 'D1:4']]
    """
    calls: Counter[str] = Counter()

    def graph_input(row: dict[str, Any]) -> dict[str, Any]:
        draw = _row_draw(seed, row, calls)
        turns = evidence_sessions(row)["turns"]
        sessions: dict[Any, list[dict[str, Any]]] = {}
        for turn in turns:
            sessions.setdefault(turn.get("session"), []).append(turn)
        for session_turns in sessions.values():
            draw.shuffle(session_turns)
        return GRAPHS["agemem"].graph_input({**row, "turns": [turn for session_turns in sessions.values() for turn in session_turns]})

    return graph_input


def given_memory_input(seed: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``graph_input`` of the answering curriculum: AgeMem's input with a ``memory`` that replaces stage 1.

    The memory holds the line (speaker and text, as ``write_mode="line"`` stores it) of each of
    the row's evidence turns and other distinct lines of its conversation, drawn anew for every rollout
    (as :func:`shuffled_evidence_sessions_input` draws), :data:`GIVEN_MEMORY_ITEMS` lines in all,
    in a drawn order.

    >>> row = {"question": "Where?", "document": "...", "evidence": ["D1:3"], "turns": [
    ...     {"dia_id": f"D1:{i}", "session": 1, "speaker": "Ann", "text": f"line {i}"} for i in range(1, 9)]}
    >>> given = given_memory_input(seed=0)
    >>> first, second = given(row)["memory"], given(row)["memory"]
    >>> len(first), "Ann: line 3" in first and "Ann: line 3" in second, first != second
    (6, True, True)
    """
    calls: Counter[str] = Counter()

    def graph_input(row: dict[str, Any]) -> dict[str, Any]:
        turns, evidence = _turns_and_evidence(row, "given-memory")
        draw = _row_draw(seed, row, calls)
        chosen = list(dict.fromkeys(locomo_turn_line(turn) for turn in turns if turn.get("dia_id") in evidence))
        # Small talk repeats across sessions: distinct lines, so the memory has its full size.
        others = [line for line in dict.fromkeys(locomo_turn_line(turn) for turn in turns) if line not in chosen]
        chosen += draw.sample(others, min(len(others), max(GIVEN_MEMORY_ITEMS - len(chosen), 0)))
        draw.shuffle(chosen)
        return {**GRAPHS["agemem"].graph_input(row), "memory": chosen}

    return graph_input


__all__ = ["AGEMEM_SESSIONS", "GIVEN_MEMORY_ITEMS", "evidence_sessions", "evidence_sessions_input", "given_memory_input",
           "shuffled_evidence_sessions_input"]
