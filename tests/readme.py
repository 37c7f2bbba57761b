"""The fenced code blocks of the README and of the documentation site, so tests can run them and
an example can never rot."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    language: str
    line: int  # of the opening fence, 1-based
    code: str
    page: Path = README

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def documentation_pages() -> list[Path]:
    """The README first (it defines the names the pages reuse: ``model``, ``graph``), then the site's pages."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def readme_blocks(language: str, page: Path = README) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(match[1], text.count("\n", 0, match.start()) + 1, match[2], page)
        for match in _FENCE.finditer(text)
        if match[1] == language
    ]


def documentation_blocks(language: str) -> list[Block]:
    """Every block of ``language`` on every page, a block repeated word for word kept once."""
    seen: set[str] = set()
    blocks = []
    for page in documentation_pages():
        for block in readme_blocks(language, page):
            if block.code not in seen:
                seen.add(block.code)
                blocks.append(block)
    return blocks


def shell_commands(block: Block) -> list[list[str]]:
    """The commands of a bash block as argument lists: continuations joined, comments dropped."""
    joined = block.code.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if shlex.split(line, comments=True)]
