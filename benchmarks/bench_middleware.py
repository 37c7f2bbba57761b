"""A tool result too long for the agent's window: MemAgentMiddleware against LangChain's SummarizationMiddleware and none.

An agent (``langchain.agents.create_agent``, the embedded SmolLM2-135M, greedy, 8K window) has
asked a tool for a document and got it back: the conversation is the user's question, the
agent's tool call and the tool result, a generated RULER ``niah_single_1`` or ``niah_multikey_2``
haystack of 16K-64K tokens. The agent's next reply is its answer. Three agents differ only in
middleware:

- ``agent_memagent``: :class:`~langgraph_memagent.MemAgentMiddleware` (the embedded model reads
  the tool result in 1000-token chunks with a 128-token memory, the demo's budget);
- ``agent_summarization``: LangChain's ``SummarizationMiddleware`` with the same model, triggered
  at 6000 tokens, keeping the latest 2000 tokens of messages whole (the tool result alone is
  longer, so every message is summarized: its default keeps 20 messages, and ``keep=("messages",
  1)`` keeps the tool call with its result, both over the window), trimming what it summarizes
  to its default 4000 tokens;
- ``agent_plain``: no middleware: the prompt overflows the window and the model refuses it.

This is ``memagent compare`` with three agent graphs registered by this script (not by the
package): the same samples, scoring, resume, tables and figures, and every LLM call counted,
the middleware's own included. Results land in ``benchmarks/results/middleware/``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import RESULTS_DIR, run_compare_benchmark

NAME = "bench_middleware"
TASKS = ("niah_single_1", "niah_multikey_2")
AGENTS = ("agent_memagent", "agent_summarization", "agent_plain")
AGENT_REPLY_TOKENS = 64  # the agent's answer


def _middleware(kind: str, model: Any) -> list[Any]:
    from langchain.agents.middleware import SummarizationMiddleware

    from langgraph_memagent import MemAgentMiddleware

    if kind == "agent_memagent":
        return [MemAgentMiddleware(model, max_message_tokens=4000, chunk_tokens=1000, memory_tokens=128, answer_tokens=64)]
    if kind == "agent_summarization":
        return [SummarizationMiddleware(model, trigger=("tokens", 6000), keep=("tokens", 2000))]
    return []


def tool_result_agent(kind: str):
    """A registry builder: the agent of ``kind`` answering from a conversation whose tool result is the document."""

    def build(model: Any, options: Any, tokenizer: Any, **graph_kwargs: Any) -> Any:
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langchain_core.runnables import RunnableLambda

        agent_model = model.model_copy(update={"max_tokens": AGENT_REPLY_TOKENS})  # the same engine
        agent = create_agent(agent_model, tools=[], middleware=_middleware(kind, model), name=kind)

        def conversation(inputs: dict[str, Any]) -> dict[str, Any]:
            call = {"name": "fetch_document", "args": {}, "id": "call-fetch", "type": "tool_call"}
            return {"messages": [
                HumanMessage(f"{inputs['question']} The answer is in the document that fetch_document returns."),
                AIMessage("", tool_calls=[call]),
                ToolMessage(inputs["document"], tool_call_id="call-fetch", name="fetch_document"),
            ]}

        def answer(state: dict[str, Any]) -> dict[str, Any]:
            reply = state["messages"][-1].text
            return {"answer": reply, "response": reply}

        return RunnableLambda(conversation) | agent | RunnableLambda(answer)

    return build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks (default: %(default)s)")
    parser.add_argument("--lengths", default="16k,32k,64k", help="document lengths (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=4, help="samples per task and length (default: %(default)s)")
    parser.add_argument("--graphs", default=",".join(AGENTS), help="agents (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated haystacks; 1 was the dev probe (default: %(default)s)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "middleware"), help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)

    from langgraph_memagent.evals.harness import ComparisonConfig
    from langgraph_memagent.evals.lengths import parse_lengths
    from langgraph_memagent.graphs.registry import register_graph

    for kind in AGENTS:
        register_graph(kind, tool_result_agent(kind))
    config = ComparisonConfig(
        graphs=tuple(args.graphs.split(",")),
        task=tuple(args.tasks.split(",")),
        lengths=tuple(parse_lengths(args.lengths)),
        samples=args.samples,
        seed=args.seed,
        out=args.out,
    )
    return run_compare_benchmark(NAME, vars(args), config)


if __name__ == "__main__":
    raise SystemExit(main())
