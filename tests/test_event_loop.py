"""The async paths never block the event loop: every graph runs on the real embedded model
under blockbuster, the blocking-call detector `langgraph dev` runs.

The detector here is stricter than the server's (it also flags reads, writes and ``os.stat``),
and the model is loaded inside the guarded run, so loading the weights, rendering the chat
template, tokenizing, embedding and searching must all happen off the loop.
"""

from __future__ import annotations

import asyncio

import pytest
from blockbuster import BlockingError, blockbuster_ctx

from langgraph_memagent.agents.local_model import LocalChatModel
from langgraph_memagent.baselines.agemem import build_agemem_qa_graph
from langgraph_memagent.baselines.full_context import build_full_context_graph
from langgraph_memagent.baselines.rag import build_rag_graph
from langgraph_memagent.baselines.sumer import build_sumer_graph
from langgraph_memagent.graphs.memagent import build_memagent_graph

QUESTION = "What is the special magic number for tired-apple mentioned in the provided text?"
DOCUMENT = (
    "The grass is green. The sky is blue. " * 12
    + "One of the special magic numbers for tired-apple is: 7391042. "
    + "The grass is green. The sky is blue. " * 12
)
BUILDERS = {
    "memagent": lambda model, codec: build_memagent_graph(model, chunk_tokens=120, memory_tokens=32, answer_tokens=16, tokenizer=codec),
    "sumer": lambda model, codec: build_sumer_graph(model, tokenizer=codec, max_turns=2),
    "rag": lambda model, codec: build_rag_graph(model, chunk_tokens=120, tokenizer=codec, answer_tokens=16),
    "full_context": lambda model, codec: build_full_context_graph(model, tokenizer=codec, answer_tokens=16),
    "agemem": lambda model, codec: build_agemem_qa_graph(
        model, tokenizer=codec, distractor_messages=1, distractor_sentences=4, max_turns_per_message=1, turn_tokens=48
    ),
}


def test_the_detector_catches_a_blocking_call() -> None:
    async def blocking() -> None:
        with blockbuster_ctx():
            open(__file__).read()

    with pytest.raises(BlockingError):
        asyncio.run(blocking())


@pytest.mark.embedded
@pytest.mark.parametrize("graph_name", list(BUILDERS))
def test_graph_ainvoke_makes_no_blocking_call(graph_name, embedded_model_dir, smollm2_codec) -> None:
    # A batch window no other test module uses gives these runs an engine of their own, so
    # its weights load inside the first guarded run.
    model = LocalChatModel(model_path=str(embedded_model_dir), temperature=0.0, max_tokens=48, batch_window_ms=29.0)
    graph = BUILDERS[graph_name](model, smollm2_codec)

    async def run() -> dict:
        with blockbuster_ctx():
            return await graph.ainvoke({"question": QUESTION, "document": DOCUMENT})

    result = asyncio.run(run())
    assert result["usage"]["llm_calls"] >= 1
    assert isinstance(result["response"], str)
