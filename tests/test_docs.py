"""The documentation: the MkDocs site builds with --strict (a broken link or a missing API
reference fails), every relative link of the repository's Markdown leads to a file, and the
README stays a short introduction."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# [text](target) and ![alt](target), without the title part; anchors and web addresses are not files.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _markdown_files() -> list[Path]:
    pages = [REPO / "README.md", REPO / "RESULTS.md", REPO / "BENCHMARKS.md"]
    return [page for page in pages if page.exists()] + sorted((REPO / "experiments").rglob("*.md"))


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8").count("build_memagent_graph") > 1


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in _LINK.findall(text):
        path = target.split("#", 1)[0]
        if not path or re.match(r"^[a-z]+:", path):  # an anchor on the page, or a web address
            continue
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)} links to missing files: {broken}"


def test_the_readme_is_an_introduction() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the detail belongs in docs/"
    assert "RESULTS.md" in "\n".join(lines[:15]), "the README's first screen links the results page"
