"""The README's fenced code blocks, so tests can run them and an example can never rot."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    language: str
    line: int  # of the opening fence, 1-based
    code: str


def readme_blocks(language: str) -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [
        Block(match[1], text.count("\n", 0, match.start()) + 1, match[2])
        for match in _FENCE.finditer(text)
        if match[1] == language
    ]


def shell_commands(block: Block) -> list[list[str]]:
    """The commands of a bash block as argument lists: continuations joined, comments dropped."""
    joined = block.code.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if shlex.split(line, comments=True)]
