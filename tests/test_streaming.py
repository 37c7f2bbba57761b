"""Token streaming from the local engine, stop strings and cancelled streams, on the real embedded model."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool

from langgraph_memagent import build_memagent_graph

pytestmark = pytest.mark.embedded

PROMPT = "Count from 1 to 10, one number per line."


def _joined(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    return total


def test_a_stream_is_the_invoke_reply_in_pieces_with_usage_on_the_last(greedy_model):
    reply = greedy_model.invoke(PROMPT, max_tokens=24)
    chunks = list(greedy_model.stream(PROMPT, max_tokens=24))
    assert len(chunks) > 5 and all(isinstance(chunk, AIMessageChunk) for chunk in chunks)
    assert [chunk.usage_metadata is not None for chunk in chunks] == [False] * (len(chunks) - 1) + [True]
    assert chunks[-1].chunk_position == "last"
    whole = _joined(chunks)
    assert whole.content == reply.content and whole.usage_metadata == reply.usage_metadata
    assert whole.response_metadata["completion_token_ids"] == reply.response_metadata["completion_token_ids"]


async def test_async_streams_decode_side_by_side(greedy_model):
    """Two streams at once share decode steps: each gets pieces while the other is still decoding."""
    arrivals: list[tuple[int, float]] = []

    async def read(which: int, prompt: str) -> str:
        text = ""
        async for chunk in greedy_model.astream(prompt, max_tokens=32):
            arrivals.append((which, time.monotonic()))
            text += chunk.text
        return text

    first, second = await asyncio.gather(read(0, PROMPT), read(1, "Name five colours, one per line."))
    assert first == (await greedy_model.ainvoke(PROMPT, max_tokens=32)).content
    order = [which for which, _ in arrivals]
    # Interleaved: the second stream's pieces arrive before the first stream's last one.
    assert order.index(1) < len(order) - 1 - order[::-1].index(0)
    assert greedy_model.engine.peak_rows >= 2 and second


def test_stop_strings_cut_the_reply_as_servers_do(greedy_model):
    free = greedy_model.invoke(PROMPT, max_tokens=24).content
    assert "4" in free
    cut = greedy_model.invoke(PROMPT, max_tokens=24, stop=["4"])
    assert cut.content == free[: free.index("4")] and cut.response_metadata["finish_reason"] == "stop"
    streamed = "".join(chunk.text for chunk in greedy_model.stream(PROMPT, max_tokens=24, stop=["4"]))
    assert streamed == cut.content


def test_a_stream_left_early_frees_its_row(greedy_model):
    for _ in greedy_model.stream(PROMPT, max_tokens=200):
        break  # the generator closes: its request is cancelled
    deadline = time.monotonic() + 10
    while greedy_model.engine.active_rows and time.monotonic() < deadline:
        time.sleep(0.05)
    assert greedy_model.engine.active_rows == 0
    assert greedy_model.invoke("Say hi.", max_tokens=4).usage_metadata["output_tokens"] <= 4


def test_a_tool_call_streams_as_tool_call_chunks(greedy_model):
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    bound = greedy_model.bind_tools([add], tool_choice="add")
    reply = bound.invoke("What is 2 + 3?", max_tokens=48)
    whole = _joined(list(bound.stream("What is 2 + 3?", max_tokens=48)))
    assert whole.tool_call_chunks and [call["name"] for call in whole.tool_calls] == ["add"]
    assert [call["args"] for call in whole.tool_calls] == [call["args"] for call in reply.tool_calls]


def test_messages_mode_shows_the_memory_being_written(greedy_model, smollm2_codec):
    graph = build_memagent_graph(greedy_model, chunk_tokens=200, memory_tokens=24, answer_tokens=16, tokenizer=smollm2_codec)
    document = " ".join(["The grass is green."] * 60 + ["The special magic number is 4815."] + ["The sky is blue."] * 60)
    pieces: dict[str, str] = {}
    final = None
    for mode, event in graph.stream({"question": "What is the special magic number?", "document": document},
                                    stream_mode=["messages", "values"]):
        if mode == "messages":
            chunk, metadata = event
            pieces[metadata["langgraph_node"]] = pieces.get(metadata["langgraph_node"], "") + chunk.text
        else:
            final = event
    assert set(pieces) == {"update_memory", "answer"}
    assert pieces["update_memory"].rstrip().endswith(final["memory"])  # the last memory (stripped), token by token
    assert pieces["answer"] == final["response"] and final["response"].startswith("\\boxed{")
