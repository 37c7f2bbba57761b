"""What every graph of this package is compiled into: nodes with a sync and an async body, and a
compiled graph whose recursion limit covers each run.

>>> from langgraph.graph import END, START, StateGraph
>>> from typing_extensions import TypedDict
>>> class State(TypedDict):
...     n: int
>>> class Counting(RecursionSizedGraph):
...     def steps_needed(self, input, config):
...         return 3 + input["n"]
>>> builder = StateGraph(State).add_node("step", node(lambda state: {"n": state["n"] - 1})).add_edge(START, "step")
>>> builder = builder.add_conditional_edges("step", lambda state: "step" if state["n"] > 0 else END)
>>> graph = Counting.from_compiled(builder.compile())
>>> graph.invoke({"n": 40}, {"recursion_limit": 25})   # 40 steps: more than the 25 given
{'n': 0}
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Optional, TypeVar, get_type_hints

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from pydantic import BaseModel, create_model

DEFAULT_RECURSION_LIMIT = 25  # LangGraph's own default
GraphT = TypeVar("GraphT", bound="RecursionSizedGraph")
INJECTED = ("store", "runtime", "config")
"""Parameters a node body may declare to be given the run's store, runtime or config, as ``add_node`` does."""


class GraphNode(Runnable[Any, Any]):
    """A graph node running ``sync`` under ``invoke`` and ``async_`` (else ``sync``) under ``ainvoke``.

    ``add_node`` takes one plain function; this gives a node both bodies through LangGraph's public
    API. Like a plain function, it adds no trace run of its own.
    """

    def __init__(self, sync: Callable[..., Any], async_: Callable[..., Any] | None = None):
        self.sync, self.async_ = sync, async_
        self.name = getattr(sync, "__name__", type(self).__name__)
        self._wants = {body: _injected_parameters(body) for body in (sync, async_) if body is not None}

    def _injections(self, body: Callable[..., Any], config: RunnableConfig | None) -> dict[str, Any]:
        wanted = self._wants[body]
        if not wanted:
            return {}
        # Read through the public accessor: LangGraph runs a node's body inside its config context.
        runtime = get_runtime() if {"store", "runtime"} & wanted else None
        offered = {"store": getattr(runtime, "store", None), "runtime": runtime, "config": ensure_config(config)}
        return {name: offered[name] for name in wanted}

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.sync(input, **self._injections(self.sync, config))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.async_ is None:
            return self.invoke(input, config)  # a sync-only node is a cheap step: run in place
        return await self.async_(input, **self._injections(self.async_, config))


def _injected_parameters(body: Callable[..., Any]) -> frozenset[str]:
    return frozenset(name for name in inspect.signature(body).parameters if name in INJECTED)


def node(sync: Callable[..., Any], async_: Callable[..., Any] | None = None) -> GraphNode:
    """A graph node running ``sync`` under ``invoke`` and ``async_`` under ``ainvoke``, untraced.

    Both get the run's ``store``, ``runtime`` and ``config`` by parameter name, as ``add_node``
    gives them to a plain function.
    """
    return GraphNode(sync, async_)


class RecursionSizedGraph(CompiledStateGraph):
    """A compiled graph that raises the recursion limit of each run to :meth:`steps_needed`.

    A caller's config often carries LangChain's default limit of 25 (``batch`` and
    ``RunnableConfig`` merges put it there), too few for a long document or a long tool
    loop; a larger limit set by the caller is kept. Subclasses say how many steps a run
    needs; :meth:`prepare_config` is the hook for anything else a run must set up.
    """

    graph_attributes: tuple[str, ...] = ()
    """Names of the subclass's own attributes (its settings), carried through ``copy``/``with_config``."""

    def __init__(self, **kwargs: Any):
        own = {name: kwargs.pop(name) for name in self.graph_attributes if name in kwargs}
        super().__init__(**kwargs)
        # In the instance __dict__, which Pregel.copy passes back to __init__ for the copy.
        self.__dict__.update(own)

    def steps_needed(self, input: Any, config: RunnableConfig) -> int:
        """Graph steps the run of ``input`` needs; subclasses size it, the base keeps LangGraph's default."""
        return DEFAULT_RECURSION_LIMIT

    def prepare_config(self, input: Any, config: RunnableConfig | None, kwargs: dict[str, Any]) -> RunnableConfig:
        config = dict(config or {})
        needed = self.steps_needed(input, config)
        given = config.get("recursion_limit")
        config["recursion_limit"] = max(needed, given) if isinstance(given, int) and given > 0 else needed
        return config

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        return super().stream(input, self.prepare_config(input, config, kwargs), **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        # prepare_config may read checkpoints (blocking I/O): off the event loop.
        config = await asyncio.to_thread(self.prepare_config, input, config, kwargs)
        async for chunk in super().astream(input, config, **kwargs):
            yield chunk

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """The input TypedDict as a pydantic model whose optional keys are optional arguments.

        LangGraph gives a root model of the TypedDict, from which LangChain's ``as_tool`` makes
        every key a required argument; a caller of the tool would have to pass a graph's
        optional inputs (SUMER's ``turns``, ``conversation_id``, ...) too.
        """
        typed = self.builder.input_schema
        hints = get_type_hints(typed)
        required = getattr(typed, "__required_keys__", frozenset(hints))
        fields: dict[str, Any] = {key: (hint, ...) if key in required else (Optional[hint], None) for key, hint in hints.items()}
        return create_model(self.get_name("Input"), __doc__=typed.__doc__, **fields)

    @classmethod
    def from_compiled(cls: type[GraphT], compiled: CompiledStateGraph, **attributes: Any) -> GraphT:
        """``compiled`` as this class, with its :attr:`graph_attributes` given as ``attributes``."""
        unknown = set(attributes) - set(cls.graph_attributes)
        if unknown:
            raise TypeError(f"{cls.__name__} has no graph attribute(s) {sorted(unknown)}; declare them in graph_attributes")
        state = {key: value for key, value in compiled.__dict__.items() if key != "__orig_class__"}
        return cls(**state, **attributes)
