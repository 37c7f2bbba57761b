"""SUMER's reading step as a curriculum: episodes that answer at once from a given memory.

A SUMER episode scores only when its searches find the evidence and the policy then reads
the answer out of what they returned. The embedded 135M policy fails the second step with
the tool's default reply (five matches with their neighbours), so its full episodes give
GRPO no answer to reinforce. With ``reading_memory`` set, every rollout is the episode's
forced ``submit_answer`` call alone (``max_turns=0``), over a memory built from the row:

- ``"evidence"``: the evidence lines alone, as a perfect search would return them;
- ``"question k=K context=C"``: a semantic search with the question itself, ``K`` hits
  with ``C`` messages on either side.

The memory is rendered exactly as the search tool replies, so what is learnt transfers to
the episode's own forced answer.
"""

from __future__ import annotations

import re
from typing import Any

from ..baselines.memory_bank import MemoryBank
from ..baselines.memory_index import MemoryGroup, MemoryHit
from ..baselines.sumer import conversation_key, render_results
from ..graphs.registry import GRAPHS

ReadingSetting = tuple[int, int] | None
"""``None`` for the evidence lines, ``(k, context)`` for a search with the question."""


def parse_reading_memory(text: str) -> ReadingSetting:
    """``None`` for ``evidence``; ``(k, context)`` for ``question k=K context=C``.

    >>> parse_reading_memory("question k=3 context=0"), parse_reading_memory("evidence")
    ((3, 0), None)
    >>> parse_reading_memory("question k=0 context=1")
    Traceback (most recent call last):
    ...
    ValueError: reading memory must be 'evidence' or 'question k=K context=C' (K >= 1, C >= 0), got 'question k=0 context=1'
    """
    if text.split() == ["evidence"]:
        return None
    match = re.fullmatch(r"question k=(\d+) context=(\d+)", " ".join(text.split()))
    if match and int(match[1]) >= 1:
        return int(match[1]), int(match[2])
    raise ValueError(f"reading memory must be 'evidence' or 'question k=K context=C' (K >= 1, C >= 0), got {text!r}")


def reading_memory(banks: dict[int, MemoryBank], embeddings: Any, row: dict[str, Any], setting: ReadingSetting) -> tuple[str, list[str]]:
    """The search reply shown as memory for ``row`` under ``setting``, and the message ids in it.

    ``banks`` holds one bank per neighbour count, filled as needed: a conversation is
    embedded once per count, however many of its questions use it. ``row`` needs
    ``question`` and ``turns``, and ``evidence`` ids for the ``evidence`` setting.
    """
    context = 0 if setting is None else setting[1]
    if context not in banks:
        banks[context] = MemoryBank(embeddings=embeddings, context=context)
    bank = banks[context]
    conversation = conversation_key(row["turns"], "", chunk_tokens=200)
    bank.ingest(row["turns"], conversation_id=conversation)
    if setting is None:
        items = {item["message_id"]: item for item in bank.items(conversation)}
        missing = [turn_id for turn_id in row.get("evidence") or [] if turn_id not in items]
        if missing or not row.get("evidence"):
            raise ValueError(f"reading memory 'evidence' needs the row's evidence ids among its turns, got {row.get('evidence')!r}")
        groups = [MemoryGroup(MemoryHit(turn_id, items[turn_id], 1.0), [items[turn_id]]) for turn_id in row["evidence"]]
    else:
        groups = bank.semantic_search(row["question"], conversation_id=conversation, k=setting[0])
    return render_results("semantic", row["question"], groups), [item["message_id"] for group in groups for item in group.messages]


class ReadingInput:
    """``graph_input(row)`` of the reading curriculum: SUMER's input plus the memory as ``found``.

    >>> from langgraph_memagent.training.data import conversation_records
    >>> from langgraph_memagent.baselines import load_embeddings
    >>> row = conversation_records(1, seed=0)[0]
    >>> given = ReadingInput("evidence", load_embeddings())(row)
    >>> print(given["found"][0].splitlines()[0])
    2 matches for semantic search 'Which city is Clara flying to next week?' (the matching line is marked with >):
    """

    def __init__(self, memory: str, embeddings: Any):
        self.setting = parse_reading_memory(memory)
        self.embeddings = embeddings
        self.banks: dict[int, MemoryBank] = {}

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        memory, _ = reading_memory(self.banks, self.embeddings, row, self.setting)
        return {**GRAPHS["sumer"].graph_input(row), "found": [memory]}
