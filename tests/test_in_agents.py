"""MemAgent inside ``langchain.agents.create_agent``: as a tool and as middleware, over documents
longer than the agent model's window."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore
from scripted_model import ScriptedChatModel, ScriptedToolModel, needle_reader, tool_call

from langgraph_memagent import MemAgentMiddleware, create_memagent_tool

QUESTION = "What is the special magic number for tidy-cat?"
NEEDLE = "One of the special magic number for tidy-cat is: 7654321."
DOCUMENT = "\n".join(["The grass is green. The sky is blue."] * 300 + [NEEDLE] + ["Rivers run to the sea."] * 300)
AGENT_WINDOW = 2048  # tokens the agent model could take: the document is several times longer
BUDGETS = {"chunk_tokens": 500, "memory_tokens": 32, "answer_tokens": 16}


def _agent_window_kept(calls: list[list[Any]], codec: Any) -> int:
    """The longest prompt the agent model was sent, in tokens."""
    return max(len(codec.encode_batch(["\n".join(m.text for m in messages)])[0]) for messages in calls)


def relay(first_call: AIMessage):
    """An agent model: makes ``first_call``, then repeats what the tool returned."""

    def responder(messages, tools):
        replies = [message for message in messages if isinstance(message, ToolMessage)]
        return replies[-1].text if replies else first_call

    return responder


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_tool_reads_a_stored_document_longer_than_the_agents_window(mode, smollm2_codec):
    assert len(smollm2_codec.encode_batch([DOCUMENT])[0]) > 2 * AGENT_WINDOW
    store = InMemoryStore()
    store.put(("documents",), "field-notes", {"text": DOCUMENT})
    reader = create_memagent_tool(ScriptedChatModel(responder=needle_reader), tokenizer=smollm2_codec, **BUDGETS)
    agent_model = ScriptedToolModel(responder=relay(AIMessage("", tool_calls=[
        tool_call("read_long_document", question=QUESTION, document_key="field-notes")])))
    agent = create_agent(agent_model, tools=[reader], store=store)
    payload = {"messages": [HumanMessage(QUESTION)]}
    result = agent.invoke(payload) if mode == "sync" else asyncio.run(agent.ainvoke(payload))
    assert result["messages"][-1].text == "7654321"
    assert _agent_window_kept(agent_model.calls, smollm2_codec) < AGENT_WINDOW  # the document never reached the agent
    assert store.search(("memagent",)) == []  # the run's chunks went to the agent's store and were removed


def test_the_tool_takes_text_and_answers_bad_calls_in_one_line(smollm2_codec):
    reader = create_memagent_tool(ScriptedChatModel(responder=needle_reader), tokenizer=smollm2_codec, **BUDGETS)
    schema = reader.tool_call_schema.model_json_schema()  # what the agent model sees: the runtime stays hidden
    assert set(schema["properties"]) == {"question", "document", "document_key"} and schema["required"] == ["question"]
    assert reader.invoke({"question": QUESTION, "document": DOCUMENT}) == "7654321"
    bad = [
        ({"question": QUESTION}, "give the document's text as 'document' or its store key as 'document_key', one of the two"),
        ({"question": QUESTION, "document_key": "missing"}, "'document_key' needs the agent's store"),
    ]
    for args, message in bad:
        call = tool_call("read_long_document", **args)
        reply = reader.invoke(call)
        assert isinstance(reply, ToolMessage) and reply.text.startswith(message), reply.text
    store = InMemoryStore()
    agent = create_agent(ScriptedToolModel(responder=relay(AIMessage("", tool_calls=[
        tool_call("read_long_document", question=QUESTION, document_key="nope")]))), tools=[reader], store=store)
    reply = agent.invoke({"messages": [HumanMessage(QUESTION)]})["messages"][-1]
    assert reply.text == "no document with key 'nope' under ('documents',) in the store"


class ForceFirstCall(AgentMiddleware):
    """Forces the agent's first model call to call ``name`` and its next to answer (a 135M model
    does not call tools unprompted, and under ``"auto"`` may read the document again)."""

    def __init__(self, name: str):
        super().__init__()
        self.tool_name = name

    def wrap_model_call(self, request, handler):
        answered = any(isinstance(message, ToolMessage) for message in request.messages)
        return handler(request.override(tool_choice="none" if answered else self.tool_name))


@pytest.mark.embedded
def test_the_embedded_model_as_agent_answers_through_the_tool(greedy_model, smollm2_codec):
    from langgraph_memagent.evals.ruler import niah_single_1

    # A generated RULER haystack of three chunks (the one the end-to-end tests read); the agent's
    # messages only ever hold its key, so its length is MemAgent's business, never the agent's
    # window's (tool results of 16K-64K tokens: the middleware benchmark).
    sample = niah_single_1(smollm2_codec, 3000, seed=1)
    store = InMemoryStore()
    store.put(("documents",), "field-notes", {"text": sample.document})
    reader = create_memagent_tool(greedy_model, chunk_tokens=1000, memory_tokens=128, answer_tokens=64, source="store",
                                  document_keys=["field-notes"], ask="user")
    schema = reader.tool_call_schema.model_json_schema()
    assert schema["required"] == ["document_key"] and schema["properties"]["document_key"]["const"] == "field-notes"
    agent_model = greedy_model.model_copy(update={"max_tokens": 64})  # the same engine, short agent turns
    agent = create_agent(agent_model, tools=[reader], store=store, middleware=[ForceFirstCall("read_long_document")],
                         system_prompt="Documents are in the store under keys; read them with the tool.")
    result = agent.invoke({"messages": [HumanMessage(sample.question)]})
    calls = [call for message in result["messages"] if isinstance(message, AIMessage) for call in message.tool_calls]
    assert len(calls) == 1 and calls[0]["name"] == "read_long_document" and calls[0]["args"] == {"document_key": "field-notes"}
    tool_replies = [message.text for message in result["messages"] if isinstance(message, ToolMessage)]
    assert tool_replies and sample.answers[0] in tool_replies[0], (sample.answers, tool_replies, calls)
    assert not any(sample.document[:200] in message.text for message in result["messages"])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_middleware_reads_a_long_tool_result_in_its_place(mode, smollm2_codec):
    @tool
    def fetch_field_notes() -> str:
        """The field notes, in full."""
        return DOCUMENT

    middleware = MemAgentMiddleware(ScriptedChatModel(responder=needle_reader), max_message_tokens=1000,
                                    tokenizer=smollm2_codec, **BUDGETS)

    def answer_from_notes(messages, tools):
        replies = [message for message in messages if isinstance(message, ToolMessage)]
        if not replies:
            return AIMessage("", tool_calls=[tool_call("fetch_field_notes")])
        found = re.search(r"MemAgent's answer: (\d+)", replies[-1].text)
        return found.group(1) if found else "unknown"

    agent_model = ScriptedToolModel(responder=answer_from_notes)
    agent = create_agent(agent_model, tools=[fetch_field_notes], middleware=[middleware])
    payload = {"messages": [HumanMessage(QUESTION)]}
    result = agent.invoke(payload) if mode == "sync" else asyncio.run(agent.ainvoke(payload))
    assert result["messages"][-1].text == "7654321"
    [notes] = [message for message in result["messages"] if isinstance(message, ToolMessage)]
    assert notes.text.startswith(f"[MemAgent read this tool result of {len(DOCUMENT)} characters for the question {QUESTION!r}")
    assert _agent_window_kept(agent_model.calls, smollm2_codec) < AGENT_WINDOW


def test_the_middleware_reads_a_long_user_message_against_its_last_line(smollm2_codec):
    middleware = MemAgentMiddleware(ScriptedChatModel(responder=needle_reader), max_message_tokens=1000,
                                    tokenizer=smollm2_codec, **BUDGETS)
    agent_model = ScriptedToolModel(responder=lambda messages, tools: messages[-1].text.splitlines()[-2])
    agent = create_agent(agent_model, tools=[], middleware=[middleware])
    result = agent.invoke({"messages": [HumanMessage(f"{DOCUMENT}\n\n{QUESTION}")]})
    assert result["messages"][0].text.endswith(f"[MemAgent's answer: 7654321]\n{QUESTION}")
    with pytest.raises(ValueError, match="max_message_tokens must be a positive integer number of tokens, got 0"):
        MemAgentMiddleware(ScriptedChatModel(responder=needle_reader), max_message_tokens=0, tokenizer=smollm2_codec)
