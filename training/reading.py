"""SUMER's reading step as a curriculum: episodes that answer at once from a given memory.

A SUMER episode scores only when its searches find the evidence and the policy then reads
the answer out of what they returned. The embedded 135M policy fails the second step with
the tool's default reply (five matches with their neighbours), so its full episodes give
GRPO no answer to reinforce. With ``reading_memory`` set, every rollout is the episode's
forced ``submit_answer`` call alone (``max_turns=0``), over a memory built from the row:

- ``"evidence"``: the evidence lines alone, as a perfect search would return them;
- ``"question k=K context=C"``: a semantic search with the question itself, ``K`` hits
  with ``C`` messages on either side;
- ``"evidence+question k=K"``: the evidence lines among the question's own search hits as
  distractors, ``K`` bare lines in all (more only if the evidence has more), in conversation
  order so that no position gives the answer away. This is RAFT's training with distractor
  documents (Zhang et al., 2024), which teaches a reader to pick the right line out of a
  search reply rather than copy whatever it is shown.

The memory is rendered exactly as the search tool replies, so what is learnt transfers to
the episode's own forced answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..baselines.memory_bank import MemoryBank
from ..baselines.memory_index import MemoryGroup, MemoryHit
from ..baselines.sumer import conversation_key, render_results
from ..graphs.registry import GRAPHS


@dataclass(frozen=True)
class ReadingSetting:
    """How a reading memory is built (:func:`parse_reading_memory` reads it from text)."""

    evidence: bool  # the row's evidence lines are shown
    k: int  # hits of a semantic search with the question (0: no search)
    context: int = 0  # messages shown on either side of each search hit


def parse_reading_memory(text: str) -> ReadingSetting:
    """The setting for ``evidence``, ``question k=K context=C`` or ``evidence+question k=K``.

    >>> parse_reading_memory("evidence"), parse_reading_memory("question k=3 context=0")
    (ReadingSetting(evidence=True, k=0, context=0), ReadingSetting(evidence=False, k=3, context=0))
    >>> parse_reading_memory("evidence+question k=3")
    ReadingSetting(evidence=True, k=3, context=0)
    >>> parse_reading_memory("question k=0 context=1")
    Traceback (most recent call last):
    ...
    ValueError: reading memory must be 'evidence', 'question k=K context=C' or 'evidence+question k=K' (K >= 1, C >= 0), got 'question k=0 context=1'
    """
    words = " ".join(text.split())
    if words == "evidence":
        return ReadingSetting(evidence=True, k=0)
    if (match := re.fullmatch(r"question k=(\d+) context=(\d+)", words)) and int(match[1]) >= 1:
        return ReadingSetting(evidence=False, k=int(match[1]), context=int(match[2]))
    if (match := re.fullmatch(r"evidence\+question k=(\d+)", words)) and int(match[1]) >= 1:
        return ReadingSetting(evidence=True, k=int(match[1]))
    raise ValueError(
        "reading memory must be 'evidence', 'question k=K context=C' or 'evidence+question k=K' (K >= 1, C >= 0), "
        f"got {text!r}"
    )


def reading_memory(
    banks: dict[int, MemoryBank], embeddings: Any, row: dict[str, Any], setting: ReadingSetting, *, echo_query: bool = True
) -> tuple[str, list[str]]:
    """The search reply shown as memory for ``row`` under ``setting``, and the message ids in it;
    its first line names the question as the query unless ``echo_query`` is false.

    ``banks`` holds one bank per neighbour count, filled as needed: a conversation is
    embedded once per count, however many of its questions use it. ``row`` needs
    ``question`` and ``turns``, and ``evidence`` ids for the settings that show the evidence.
    """
    if setting.context not in banks:
        banks[setting.context] = MemoryBank(embeddings=embeddings, context=setting.context)
    bank = banks[setting.context]
    conversation = conversation_key(row["turns"], "", chunk_tokens=200)
    bank.ingest(row["turns"], conversation_id=conversation)
    groups = bank.semantic_search(row["question"], conversation_id=conversation, k=setting.k) if setting.k else []
    if setting.evidence:
        items = {item["message_id"]: item for item in bank.items(conversation)}
        position = {turn_id: index for index, turn_id in enumerate(items)}
        evidence = row.get("evidence") or []
        if not evidence or any(turn_id not in items for turn_id in evidence):
            raise ValueError(f"reading memory 'evidence' needs the row's evidence ids among its turns, got {row.get('evidence')!r}")
        # The best-ranked distractors stay and the evidence replaces the rest; sorting by
        # conversation order then hides which line is which.
        distractors = [group for group in groups if group.hit.item["message_id"] not in evidence]
        kept = distractors[: max(setting.k - len(evidence), 0)]
        groups = kept + [MemoryGroup(MemoryHit(turn_id, items[turn_id], 1.0), [items[turn_id]]) for turn_id in evidence]
        if setting.k:
            groups.sort(key=lambda group: position[group.hit.item["message_id"]])
    shown = [item["message_id"] for group in groups for item in group.messages]
    return render_results("semantic", row["question"], groups, echo_query=echo_query), shown


class ReadingInput:
    """``graph_input(row)`` of the reading curriculum: SUMER's input plus the memory as ``found``.

    >>> from langgraph_memagent.training.data import conversation_records
    >>> from langgraph_memagent.baselines import load_embeddings
    >>> row = conversation_records(1, seed=0)[0]
    >>> given = ReadingInput("evidence", load_embeddings())(row)
    >>> print(given["found"][0].splitlines()[0])
    2 matches for semantic search 'Which city is Clara flying to next week?' (the matching line is marked with >):
    """

    def __init__(self, memory: str, embeddings: Any, *, echo_query: bool = True):
        self.setting = parse_reading_memory(memory)
        self.embeddings = embeddings
        self.echo_query = echo_query
        self.banks: dict[int, MemoryBank] = {}

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        memory, _ = reading_memory(self.banks, self.embeddings, row, self.setting, echo_query=self.echo_query)
        return {**GRAPHS["sumer"].graph_input(row), "found": [memory]}
