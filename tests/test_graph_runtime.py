"""What the graphs rely on from LangGraph's node context (store, runtime and config reached through
the public accessors) and from Pregel's copy: checked here, so an upgrade that changes either fails
a test instead of a user's run."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from typing_extensions import TypedDict

from langgraph_memagent.agents.compiled_graph import RecursionSizedGraph, node


class State(TypedDict):
    n: int
    seen: list[str]


class Counting(RecursionSizedGraph):
    graph_attributes = ("extra_steps",)
    extra_steps: int

    def steps_needed(self, input: Any, config: Any) -> int:
        return self.extra_steps + (input["n"] if isinstance(input, dict) else 0)


def _sync(state: State, store: BaseStore, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
    assert isinstance(store, BaseStore) and runtime.context == {"user": "ann"} and runtime.store is store
    assert config["metadata"]["langgraph_node"] == "step"
    return {"n": state["n"] - 1, "seen": [*state["seen"], "sync"]}


async def _async(state: State, store: BaseStore, runtime: Runtime[Any]) -> dict[str, Any]:
    assert isinstance(store, BaseStore) and runtime.context == {"user": "ann"}
    return {"n": state["n"] - 1, "seen": [*state["seen"], "async"]}


def _graph() -> Counting:
    builder = StateGraph(State, context_schema=dict).add_node("step", node(_sync, _async)).add_edge(START, "step")
    builder = builder.add_conditional_edges("step", lambda state: "step" if state["n"] > 0 else END)
    return Counting.from_compiled(builder.compile(store=InMemoryStore()), extra_steps=3)


def test_nodes_get_store_and_runtime_and_run_the_body_of_the_call() -> None:
    graph = _graph()
    assert graph.invoke({"n": 2, "seen": []}, context={"user": "ann"})["seen"] == ["sync", "sync"]
    assert asyncio.run(graph.ainvoke({"n": 2, "seen": []}, context={"user": "ann"}))["seen"] == ["async", "async"]


class _ChainNames(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(kwargs.get("name") or "")


def test_a_node_adds_no_trace_run_of_its_own_and_its_async_body_may_be_absent() -> None:
    seen = _ChainNames()
    _graph().invoke({"n": 2, "seen": []}, {"callbacks": [seen]}, context={"user": "ann"})
    assert seen.names.count("step") == 2 and "_sync" not in seen.names
    builder = StateGraph(State, context_schema=dict).add_node("step", node(_sync)).add_edge(START, "step")
    builder = builder.add_conditional_edges("step", lambda state: "step" if state["n"] > 0 else END)
    graph = builder.compile(store=InMemoryStore())
    assert asyncio.run(graph.ainvoke({"n": 1, "seen": []}, context={"user": "ann"}))["seen"] == ["sync"]


def test_the_limit_covers_the_run_even_when_batch_passes_langchains_default() -> None:
    graph = _graph()
    # batch gives every input a config with recursion_limit=25; 40 steps need more.
    (result,) = graph.batch([{"n": 40, "seen": []}], context={"user": "ann"})
    assert result["n"] == 0 and len(result["seen"]) == 40
    assert graph.prepare_config({"n": 40}, {"recursion_limit": 100}, {})["recursion_limit"] == 100  # a larger one is kept


def test_attributes_survive_with_config_and_copy() -> None:
    graph = _graph().with_config(tags=["x"])
    assert isinstance(graph, Counting) and graph.extra_steps == 3
    assert graph.copy({"name": "other"}).extra_steps == 3
