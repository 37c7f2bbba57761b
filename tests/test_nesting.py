"""Every registered graph inside an app: as a subgraph node, called from a node of another state
schema, and called from a tool of ``langchain.agents.create_agent``; sync and async; with a
parent that has neither store nor checkpointer, and with one that has both.

A scripted "oracle" model plays every graph's part (memory updates, tool calls, answers) so the
tests check the plumbing, not a model's quality.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore
from scripted_model import ScriptedToolModel, tool_call
from typing_extensions import TypedDict

from langgraph_memagent.graphs import GRAPHS
from oracle import DOCUMENT, QUESTION, graph_for

class Parent(TypedDict, total=False):
    """An app state that shares the graph's input and answer keys (the subgraph-node form)."""

    question: str
    document: str
    answer: str | None


class App(TypedDict, total=False):
    """An app state with keys of its own (the call-inside-a-node form)."""

    ask: str
    reply: str | None


def _parent_kwargs(with_store: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Compile keywords and run config of a parent without (or with) a store and a checkpointer."""
    if not with_store:
        return {}, {}
    return {"store": InMemoryStore(), "checkpointer": InMemorySaver()}, {"configurable": {"thread_id": "app-1"}}


def _run(app: Any, payload: Any, config: dict[str, Any], mode: str) -> Any:
    return app.invoke(payload, config) if mode == "sync" else asyncio.run(app.ainvoke(payload, config))


def subgraph_node(graph: Any, compile_kwargs: dict[str, Any], config: dict[str, Any], mode: str) -> str | None:
    app = StateGraph(Parent).add_node("read", graph).add_edge(START, "read").add_edge("read", END).compile(**compile_kwargs)
    return _run(app, {"question": QUESTION, "document": DOCUMENT}, config, mode)["answer"]


def inside_a_node(graph: Any, compile_kwargs: dict[str, Any], config: dict[str, Any], mode: str) -> str | None:
    def read(state: App) -> dict[str, Any]:
        return {"reply": graph.invoke({"question": state["ask"], "document": DOCUMENT})["answer"]}

    async def aread(state: App) -> dict[str, Any]:
        return {"reply": (await graph.ainvoke({"question": state["ask"], "document": DOCUMENT}))["answer"]}

    app = StateGraph(App).add_node("read", read if mode == "sync" else aread).add_edge(START, "read").compile(**compile_kwargs)
    return _run(app, {"ask": QUESTION}, config, mode)["reply"]


def agent_answers(messages: list[Any], tools: list[dict[str, Any]]) -> AIMessage | str:
    """The agent's model: calls the document tool once, then repeats what it returned."""
    replies = [message for message in messages if isinstance(message, ToolMessage)]
    if not replies:
        return AIMessage("", tool_calls=[tool_call("read_report", "t1", question=QUESTION)])
    return replies[-1].text


def inside_a_tool(graph: Any, compile_kwargs: dict[str, Any], config: dict[str, Any], mode: str) -> str | None:
    if mode == "sync":
        @tool
        def read_report(question: str) -> str:
            """Answer a question about the quarterly report."""
            return str(graph.invoke({"question": question, "document": DOCUMENT})["answer"])
    else:
        @tool
        async def read_report(question: str) -> str:
            """Answer a question about the quarterly report."""
            return str((await graph.ainvoke({"question": question, "document": DOCUMENT}))["answer"])

    agent = create_agent(ScriptedToolModel(responder=agent_answers), tools=[read_report], **compile_kwargs)
    result = _run(agent, {"messages": [HumanMessage(QUESTION)]}, config, mode)
    return result["messages"][-1].text


@pytest.mark.parametrize("with_store", [False, True], ids=["bare-parent", "parent-with-store-and-checkpointer"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("form", [subgraph_node, inside_a_node, inside_a_tool], ids=lambda form: form.__name__)
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_every_graph_answers_when_nested_in_an_app(name, form, mode, with_store, smollm2_codec):
    compile_kwargs, config = _parent_kwargs(with_store)
    assert form(graph_for(name, smollm2_codec), compile_kwargs, config, mode) == "4242"
    if with_store:  # a graph that keeps a run's pieces in the parent's store removes them after its answer
        store = compile_kwargs["store"]  # (InMemoryStore lists a namespace whose items were all deleted)
        assert all(store.search(namespace) == [] for namespace in store.list_namespaces())


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_input_and_output_schemas_serve_as_a_tool(name, smollm2_codec):
    graph = graph_for(name, smollm2_codec)
    schema = graph.get_input_jsonschema()
    assert {"question", "document"} <= set(schema["properties"]) and {"question", "document"} <= set(schema["required"])
    assert "answer" in graph.get_output_jsonschema()["properties"]
    as_tool = graph.as_tool(name=f"ask_{name}", description="Answer a question about a long document.")
    assert as_tool.invoke({"question": QUESTION, "document": DOCUMENT})["answer"] == "4242"
