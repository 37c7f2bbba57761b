"""Optional dependencies: the package's core installs what MemAgent needs with any LangChain chat
model; the rest comes with an extra (``pip install 'langgraph-memagent[train]'``), and importing
what needs one without it fails with one line that names the extra.

>>> try:
...     with needs_extra("train", "the trainer"):
...         import not_a_real_module_name
... except MissingExtraError as error:
...     print(error)
the trainer needs the optional dependency 'not_a_real_module_name': pip install 'langgraph-memagent[train]'
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

DISTRIBUTION = "langgraph-memagent"
# What each extra is for (pyproject.toml's [project.optional-dependencies] has the packages).
EXTRAS = {
    "embedded": "the local engine: the embedded SmolLM2 model, hf: models, exact token counts from a transformers tokenizer",
    "baselines": "the baselines' default embeddings (sentence-transformers MiniLM) and the LangMem baseline",
    "plots": "the figures of memagent compare and of the trainer's reward curve",
    "train": "the multi-conversation GRPO trainer (memagent train)",
    "serve": "SQLite and Postgres checkpoints, langgraph dev, transformers serve",
    "vllm": "the in-process vLLM engine (vllm-engine:<model>), GPU only",
    "deepagents": "MemAgent inside Deep Agents",
    "docs": "the documentation site (mkdocs)",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra``.

    >>> install_hint("embedded")
    "pip install 'langgraph-memagent[embedded]'"
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known extras: {', '.join(EXTRAS)}")
    return f"pip install '{DISTRIBUTION}[{extra}]'"


@contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Imports inside the block that find a package missing raise :class:`MissingExtraError`:
    ``"<what> needs the optional dependency '<package>': pip install 'langgraph-memagent[<extra>]'"``.

    Only a missing module is translated (``ModuleNotFoundError``); an installed package that fails
    to import for another reason keeps its own error. The package's own modules are never optional.
    """
    hint = install_hint(extra)
    try:
        yield
    except ModuleNotFoundError as error:
        missing = (error.name or "").split(".")[0]
        if not missing or missing == "langgraph_memagent":
            raise
        raise MissingExtraError(f"{what} needs the optional dependency {missing!r}: {hint}", name=error.name) from None


def require(module: str, extra: str, what: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` naming ``extra``: for a builder to fail
    when it is called, not at its first use deep inside a run.

    >>> require("json", "baselines", "the LangMem baseline").__name__
    'json'
    """
    with needs_extra(extra, what):
        return importlib.import_module(module)


__all__ = ["EXTRAS", "MissingExtraError", "install_hint", "needs_extra", "require"]
