"""MemAgent as a Deep Agents subagent: the main agent delegates "Read /docs/report.txt and answer:
<question>" through its ``task`` tool, and MemAgent reads that file from the agent's filesystem
chunk by chunk, keeping notes, and hands back the answer as its final message.

The file is read through a Deep Agents backend (the deep agent's own: ``StateBackend`` by
default, whose files travel in the agent state under ``"files"``, which the ``task`` tool hands
the subagent; ``StoreBackend``, ``FilesystemBackend`` or a ``CompositeBackend`` likewise), so the
document never enters the main agent's window. ``deepagents`` is an optional dependency:
``pip install 'langgraph-memagent[deepagents]'``; without it, building the subagent fails with
one line that says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda

from ..agents.extras import needs_extra
from .in_agents import _answer_text
from .memagent import build_memagent_graph

if TYPE_CHECKING:
    from deepagents import CompiledSubAgent

_DESCRIPTION = (
    "Reads one long text file from the filesystem chunk by chunk, keeping notes, and answers a question about it: "
    "use it for files too long to read at once. Give the file's absolute path and the question, e.g. "
    "'Read /docs/report.txt and answer: What was the revenue in 2024?'. It returns only the answer."
)
# An absolute path: quoted (it may hold spaces), or bare, starting at a word boundary ("and/or" and URLs are not paths).
_QUOTED_PATH = re.compile(r"([`'\"])(/[^`'\"\n]+)\1")
_BARE_PATH = re.compile(r"(?<![\w:/.~-])/[^\s`'\"<>|,;()\[\]{}]+")
_QUESTION_MARKER = re.compile(r"\b(?:answer|question)\s*:", re.IGNORECASE)
_FILLER = re.compile(r"\b(?:please|read|open|load|the|this|a|file|document|and|then|at|in|from)\b|\W", re.IGNORECASE)


def _deepagents() -> tuple[Any, Any, Any]:
    """What the subagent uses of deepagents, imported when it is built (an optional dependency)."""
    with needs_extra("deepagents", "create_memagent_subagent"):
        from deepagents.backends import StateBackend
        from deepagents.backends.utils import validate_path
        from deepagents.middleware.filesystem import FilesystemState
    return StateBackend, validate_path, FilesystemState


class _BadTask(Exception):
    """A task the subagent cannot do; its message is the one line the main agent reads back."""


def _quoted(text: str, limit: int = 160) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _path_and_question(task: str) -> tuple[str, str]:
    """The file's path and the question, from the task's description."""
    found = [(m.start(), m.end(), m.group(2)) for m in _QUOTED_PATH.finditer(task)]
    spans = [(start, end) for start, end, _ in found]
    for m in _BARE_PATH.finditer(task):
        path = m.group(0).rstrip(".:!?")
        if not any(start <= m.start() < end for start, end in spans):
            found.append((m.start(), m.start() + len(path), path))
    found.sort()
    paths = list(dict.fromkeys(path for _, _, path in found))
    if not paths:
        raise _BadTask(f"no file path in the task {_quoted(task)}: give the file's absolute path, as in 'Read /docs/report.txt and answer: ...'")
    if len(paths) > 1:
        raise _BadTask(f"one file per task, and this one names {len(paths)}: {', '.join(map(repr, paths))}")
    marker = _QUESTION_MARKER.search(task)
    if marker is not None:
        question = task[marker.end():].strip()
    else:  # "What does /docs/report.txt say about revenue?" -> "What does the file say about revenue?"
        question = task
        for start, end, _ in reversed(found):
            question = question[:start] + "the file" + question[end:]
        question = question.strip()
        if not _FILLER.sub("", question):
            question = ""
    if not question:
        raise _BadTask(f"no question in the task {_quoted(task)}: add one, as in 'Read {paths[0]} and answer: <question>'")
    return paths[0], question


def _file_text(path: str, response: Any) -> str:
    """The text of a backend's ``FileDownloadResponse`` for ``path`` (as the task gave it)."""
    if response.error is not None or response.content is None:
        error = response.error or "no content"
        if error == "file_not_found":
            raise _BadTask(f"no file {path!r} in the agent's filesystem")
        if error == "is_directory":
            raise _BadTask(f"{path!r} is a folder, not a file")
        raise _BadTask(f"could not read {path!r}: {error}")
    try:
        text = response.content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _BadTask(f"the file {path!r} is not UTF-8 text") from error
    if not text.strip():
        raise _BadTask(f"the file {path!r} is empty")
    return text


def create_memagent_subagent(
    model: BaseChatModel,
    *,
    name: str = "memagent-reader",
    description: str | None = None,
    backend: Any = None,
    allowed_prefixes: Sequence[str] | None = None,
    chunk_tokens: int = 5000,
    memory_tokens: int = 1024,
    answer_tokens: int = 1024,
    tokenizer: Any = None,
) -> CompiledSubAgent:
    """A Deep Agents ``CompiledSubAgent`` that answers a question about a long file with MemAgent.

    Pass it in ``create_deep_agent(subagents=[...])``. The main agent delegates through the
    ``task`` tool with a description that names the file's absolute path and the question, as
    in ``"Read /docs/report.txt and answer: What was the revenue?"`` (the question is what
    follows ``answer:`` or ``question:``; without either, the description with the path read
    as "the file"). The subagent reads the file through ``backend`` (give it the deep agent's
    own; default a ``StateBackend``: the files in the agent state, which the ``task`` tool
    passes on), reads it with :func:`~langgraph_memagent.build_memagent_graph` (sync and
    async), and its final message, all the main agent sees, is the answer, or the notes when
    no answer was found. A task it cannot do (no path, several paths, no question, a path
    outside ``allowed_prefixes`` or with ``..``, no such file, an empty or binary file) is
    answered with one line naming the bad value.

    Args:
        model: the model MemAgent reads with (the deep agent's own or a smaller one).
        name: the name the main agent gives the ``task`` tool as ``subagent_type``.
        description: what the ``task`` tool tells the main agent about the subagent.
        backend: a Deep Agents backend (``StateBackend()``, ``StoreBackend``,
            ``FilesystemBackend``, ``CompositeBackend``): the deep agent's.
        allowed_prefixes: the only folders it may read from (e.g. ``["/docs/"]``); any by default.
        chunk_tokens: MemAgent's chunk budget (:func:`~langgraph_memagent.build_memagent_graph`;
            the embedded model wants ``chunk_tokens=1000, memory_tokens=128``).
        memory_tokens: MemAgent's memory budget.
        answer_tokens: MemAgent's answer budget.
        tokenizer: counts and cuts the file's tokens; default the model's own.

    Example:
        >>> from deepagents import create_deep_agent                               # doctest: +SKIP
        >>> from deepagents.backends.utils import create_file_data                 # doctest: +SKIP
        >>> reader = create_memagent_subagent(load_chat_model("smollm2-135m"),     # doctest: +SKIP
        ...                                   chunk_tokens=1000, memory_tokens=128, answer_tokens=64)
        >>> agent = create_deep_agent(model, subagents=[reader])                  # doctest: +SKIP
        >>> agent.invoke({"messages": [("user", "What was the revenue in /docs/report.txt?")],  # doctest: +SKIP
        ...               "files": {"/docs/report.txt": create_file_data(open("report.txt").read())}})
    """
    StateBackend, validate_path, FilesystemState = _deepagents()
    from langgraph.graph import END, START, StateGraph

    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"name must be letters, digits, '_', '-' or '.', got {name!r}")
    prefixes = None if allowed_prefixes is None else list(allowed_prefixes)
    if prefixes is not None and (not prefixes or not all(isinstance(p, str) and p.startswith("/") for p in prefixes)):
        raise ValueError(f"allowed_prefixes must be absolute folders such as '/docs/', got {allowed_prefixes!r}")
    files = backend if backend is not None else StateBackend()
    graph = build_memagent_graph(
        model, chunk_tokens=chunk_tokens, memory_tokens=memory_tokens, answer_tokens=answer_tokens, tokenizer=tokenizer,
        name=f"{name}-memagent",
    )

    def task(state: dict[str, Any]) -> tuple[str, str, str]:
        """The path as given, as read, and the question."""
        asked = [message for message in state.get("messages", []) if isinstance(message, HumanMessage)]
        if not asked or not asked[-1].text.strip():
            raise _BadTask("no task: the description must name a file and a question")
        path, question = _path_and_question(asked[-1].text.strip())
        if ".." in path.split("/"):
            raise _BadTask(f"the path {path!r} leaves its folder ('..' is not allowed)")
        try:
            return path, validate_path(path, allowed_prefixes=prefixes), question
        except ValueError as error:
            raise _BadTask(f"the path {path!r} is outside the readable folders {prefixes}") from error

    def read(state: dict[str, Any]) -> dict[str, Any]:
        try:
            path, normalized, question = task(state)
            text = _file_text(path, files.download_files([normalized])[0])
        except _BadTask as bad:
            return {"messages": [AIMessage(str(bad), name=name)]}
        return {"messages": [AIMessage(_answer_text(graph.invoke({"question": question, "document": text})), name=name)]}

    async def aread(state: dict[str, Any]) -> dict[str, Any]:
        try:
            path, normalized, question = task(state)
            text = _file_text(path, (await files.adownload_files([normalized]))[0])
        except _BadTask as bad:
            return {"messages": [AIMessage(str(bad), name=name)]}
        answer = _answer_text(await graph.ainvoke({"question": question, "document": text}))
        return {"messages": [AIMessage(answer, name=name)]}

    builder = StateGraph(FilesystemState)
    builder.add_node("read_file", RunnableLambda(read, afunc=aread, name="read_file"))
    builder.add_edge(START, "read_file")
    builder.add_edge("read_file", END)
    return {"name": name, "description": description or _DESCRIPTION, "runnable": builder.compile(name=name)}


__all__ = ["create_memagent_subagent"]
