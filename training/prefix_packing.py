"""Rows that repeat each other's tokens, scored over their prefix tree: each distinct prefix runs once.

A rollout's calls repeat their history (call k+1's prompt mostly starts with call k's prompt
and reply) and a group's rollouts share their first prompt. Scored row by row, those tokens run
through the model once per row. Here the rows of a forward pass go into a prefix tree, cut into
segments (runs of tokens without a branch). Segments run in tree order, each as one causal
sequence continuing its parent segment's key/value cache, so a shared prefix runs once and its
keys and values serve every branch after it (gradients flow back through them). A completion
token's log-prob is read at the tree token before it, whose hidden state is the one the
unpacked row would give, since it depends only on the tokens before it.

The fused LM head scores one next token per position, so where rows that share a prefix score
different next tokens (the G rollouts' first replies), the prefix's last token is repeated,
once per distinct next token.

>>> ids = torch.tensor([[0, 5, 6, 7, 8], [5, 6, 7, 8, 9], [5, 6, 3, 1, 2]])
>>> mask = torch.tensor([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
>>> packed = pack_rows(ids, mask, logits_to_keep=2)   # completions [7, 8], [8, 9] and [1, 2]
>>> [(s.input_ids.tolist(), s.labels.tolist(), s.parent) for s in packed.segments]   # 6 tree tokens of 14
[([5, 6], [-100, 7], -1), ([7, 8], [8, 9], 0), ([3, 1], [1, 2], 0)]
>>> packed.score_index.tolist()   # positions in the segments laid end to end
[[1, 2], [2, 3], [4, 5]]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

IGNORED_LABEL = -100  # the label transformers and TRL's fused head skip


@dataclass
class Segment:
    """A run of tree tokens without a branch: one causal sequence continuing its parent segment."""

    input_ids: torch.Tensor  # 1-D
    labels: torch.Tensor  # 1-D: the next token scored at each position, IGNORED_LABEL elsewhere
    parent: int  # the segment it continues (an earlier one), -1 for a root


@dataclass
class PackedRows:
    """A batch of rows as prefix-tree segments, and where each completion token is scored."""

    segments: list[Segment]  # in tree order: a parent before its children
    score_index: torch.Tensor  # (rows, logits_to_keep): position, in the segments laid end to end, scoring each completion token; -1 for padding

    def unpack(self, per_segment: list[torch.Tensor]) -> torch.Tensor:
        """Per-position results of each segment (log-probs, entropies) as ``(rows, logits_to_keep)``, 0 at padding."""
        values = torch.cat([result.reshape(-1) for result in per_segment])
        scored = self.score_index >= 0
        return values[self.score_index.clamp(min=0)].masked_fill(~scored, 0.0)


class _PrefixTree:
    """Tree tokens in creation order (a parent before its children), each with at most one scored next token."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.parents: list[int] = []
        self.labels: list[int] = []
        self.child_counts: list[int] = []
        self.first_children: list[int] = []
        self.children: dict[tuple[int, int], list[int]] = {}

    def add_row(self, tokens: list[int], scored_from: int) -> list[int]:
        """Insert a row whose tokens from ``scored_from`` on are scored; returns the tree token scoring each."""
        parent, scoring = -1, []
        # A row's last token scores nothing and precedes nothing of its own row: left out. A
        # one-token row (a padding row) keeps it, so a pass of padding rows alone still runs the
        # model: its zero loss then has a gradient, and every process makes the same passes.
        for index, token in enumerate(tokens[:-1] or tokens):
            needed = tokens[index + 1] if scored_from <= index + 1 < len(tokens) else IGNORED_LABEL
            candidates = self.children.setdefault((parent, token), [])
            node = next((c for c in candidates if needed == IGNORED_LABEL or self.labels[c] in (IGNORED_LABEL, needed)), None)
            if node is None:
                node = self._new(token, parent)
                candidates.append(node)
            if needed != IGNORED_LABEL:
                self.labels[node] = needed
                scoring.append(node)
            parent = node
        return scoring

    def _new(self, token: int, parent: int) -> int:
        node = len(self.tokens)
        self.tokens.append(token)
        self.parents.append(parent)
        self.labels.append(IGNORED_LABEL)
        self.child_counts.append(0)
        self.first_children.append(-1)
        if parent >= 0:
            self.child_counts[parent] += 1
            if self.first_children[parent] < 0:
                self.first_children[parent] = node
        return node

    def segments(self) -> list[list[int]]:
        """The tree cut where it branches, in order of their first tokens (so a parent comes first)."""
        starts = [node for node, parent in enumerate(self.parents) if parent < 0 or self.child_counts[parent] > 1]
        segments = []
        for node in starts:
            segment = [node]
            while self.child_counts[segment[-1]] == 1:
                segment.append(self.first_children[segment[-1]])
            segments.append(segment)
        return segments


def _rows(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> list[tuple[list[int], int]]:
    """Each row's real tokens and the index where its completion starts (prompts left-, completions right-padded)."""
    rows = []
    prompt_width = input_ids.size(1) - logits_to_keep
    for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
        prompt = [token for token, keep in zip(ids[:prompt_width], mask[:prompt_width]) if keep]
        completion = [token for token, keep in zip(ids[prompt_width:], mask[prompt_width:]) if keep]
        rows.append((prompt + completion, len(prompt)))
    return rows


def _tree(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> tuple[_PrefixTree, list[list[int]]]:
    """The rows' prefix tree, and the tree token scoring each row's completion tokens."""
    tree = _PrefixTree()
    return tree, [tree.add_row(tokens, start) for tokens, start in _rows(input_ids, attention_mask, logits_to_keep)]


def pack_rows(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> PackedRows:
    """Rows laid out as TRL scores them (left-padded prompt, then ``logits_to_keep`` right-padded
    completion columns) as the segments of their prefix tree."""
    tree, scoring = _tree(input_ids, attention_mask, logits_to_keep)
    device = input_ids.device
    segments, segment_of, place, offset = [], {}, {}, 0
    for nodes in tree.segments():
        for index, node in enumerate(nodes):
            segment_of[node] = len(segments)
            place[node] = offset + index
        offset += len(nodes)
        parent = tree.parents[nodes[0]]
        segments.append(Segment(
            input_ids=torch.tensor([tree.tokens[node] for node in nodes], dtype=torch.long, device=device),
            labels=torch.tensor([tree.labels[node] for node in nodes], dtype=torch.long, device=device),
            parent=segment_of[parent] if parent >= 0 else -1,
        ))
    score_index = torch.full((input_ids.size(0), logits_to_keep), -1, dtype=torch.long)
    for row, nodes in enumerate(scoring):
        score_index[row, : len(nodes)] = torch.tensor([place[node] for node in nodes], dtype=torch.long)
    return PackedRows(segments=segments, score_index=score_index.to(device))


def packed_length(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> int:
    """How many tokens :func:`pack_rows` sends through the model for these rows (its tree's)."""
    return len(_tree(input_ids, attention_mask, logits_to_keep)[0].tokens)
