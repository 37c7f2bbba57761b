"""Files written whole or not at all: a temporary file beside the target, renamed onto it at the end.

A rename within one folder is atomic, so a reader (or a run resumed after a kill) sees either the
old file or the new one, never half of one. Results, figures, generated data files and compiled
packages are written this way.

>>> import tempfile
>>> target = Path(tempfile.mkdtemp()) / "figure.bin"
>>> with replacing(target, "wb") as file:
...     _ = file.write(b"whole")
>>> target.read_bytes(), [p.name for p in target.parent.iterdir()]
(b'whole', ['figure.bin'])
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterable, Iterator


@contextmanager
def temporary_beside(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A new empty file's path beside ``path``, renamed onto ``path`` when the block ends; removed if it raises.

    For writers that take a path rather than a file (``suffix``: the ending they insist on).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.fchmod(handle, 0o644)  # mkstemp makes files 0600; results and caches are for everyone to read, as open() makes them
    os.close(handle)
    try:
        yield Path(temporary)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


@contextmanager
def replacing(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """A file open for writing (``mode`` "w" as UTF-8 text, or "wb") that replaces ``path`` when the block ends."""
    with temporary_beside(path) as temporary, open(temporary, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as file:
        yield file


def write_atomic(path: str | os.PathLike, text: str | Iterable[str]) -> Path:
    """Write ``text`` (a string, or strings one after another) to ``path`` through :func:`replacing`; returns the path."""
    with replacing(path) as file:
        file.writelines([text] if isinstance(text, str) else text)
    return Path(path)


__all__ = ["replacing", "temporary_beside", "write_atomic"]
