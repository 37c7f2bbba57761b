"""MemAgent inside LangChain agents: a tool that reads a document too long for the agent's window,
and ``create_agent`` middleware that reads any message or tool result over a token budget.

Both run the MemAgent graph (:func:`~langgraph_memagent.build_memagent_graph`) nested in the
agent's run: its chunks go to the agent's store when it has one (removed after the answer), to
the graph's own in-memory store otherwise, and its model calls stream like the agent's own.

>>> from langchain.agents import create_agent
>>> from langgraph_memagent import MemAgentMiddleware, create_memagent_tool, load_chat_model
>>> reader = load_chat_model("smollm2-135m")                                            # doctest: +SKIP
>>> agent = create_agent(agent_model, tools=[create_memagent_tool(reader, chunk_tokens=1000,  # doctest: +SKIP
...                      memory_tokens=128, answer_tokens=64)])
>>> agent = create_agent(agent_model, tools=[fetch_report],                            # doctest: +SKIP
...                      middleware=[MemAgentMiddleware(reader, max_message_tokens=4000, chunk_tokens=1000)])
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal, Optional, get_args

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field, create_model

from ..agents.calls import positive_int
from ..agents.tokenizers import resolve_tokenizer
from .memagent import build_memagent_graph

DOCUMENTS_NAMESPACE = ("documents",)
DocumentSource = Literal["either", "store", "text"]
QuestionFrom = Literal["agent", "user"]
_TOOL_DESCRIPTION = (
    "Answer a question about a document too long to read at once: it is read chunk by chunk, keeping notes, "
    "and the answer comes from the notes. Give the question and {what}."
)
_WHAT_TO_GIVE = {"either": "either the document's text or its key", "store": "the document's key", "text": "the document's text"}


def _answer_text(result: dict[str, Any]) -> str:
    """What the agent reads back: MemAgent's answer, or its notes when it found none."""
    if result.get("answer") is not None:
        return str(result["answer"])
    return f"No answer was found. Notes taken while reading: {result.get('memory', '')}"


def _arguments(name: str, source: DocumentSource, ask: QuestionFrom, document_keys: Sequence[str] | None) -> type[BaseModel]:
    """The tool's arguments: what the agent model fills (a required one is one a small model cannot
    leave out), plus the agent's runtime, injected and hidden from the model."""
    fields: dict[str, Any] = {}
    if ask == "agent":
        fields["question"] = (str, Field(description="The question to answer from the document."))
    key: Any = Literal[tuple(document_keys)] if document_keys else str
    text_field = Field(description="The document's full text.")
    key_field = Field(description=f"The document's key in the store ({', '.join(document_keys)})." if document_keys else "The document's key in the store.")
    if source == "text":
        fields["document"] = (str, text_field)
    elif source == "store":
        fields["document_key"] = (key, key_field)
    else:
        fields["document"] = (Optional[str], Field(None, description=text_field.description))
        fields["document_key"] = (Optional[key], Field(None, description=key_field.description))
    fields["runtime"] = (ToolRuntime, None)  # None when the tool is called directly
    return create_model(name, __config__=ConfigDict(arbitrary_types_allowed=True), **fields)


def create_memagent_tool(
    model: BaseChatModel,
    *,
    name: str = "read_long_document",
    description: str | None = None,
    chunk_tokens: int = 5000,
    memory_tokens: int = 1024,
    answer_tokens: int = 1024,
    tokenizer: Any = None,
    documents_namespace: tuple[str, ...] = DOCUMENTS_NAMESPACE,
    source: DocumentSource = "either",
    document_keys: Sequence[str] | None = None,
    ask: QuestionFrom = "agent",
) -> BaseTool:
    """A tool that answers a question over a long document with MemAgent (sync and async).

    The tool takes ``question`` and either ``document`` (the text) or ``document_key`` (an
    item of the agent's store under ``documents_namespace``, whose value holds the text in
    ``"text"``); ``source="store"`` or ``"text"`` asks for that one alone, as a required
    argument. ``document_keys`` closes the set of keys: the schema lists them, so a model
    cannot name another (the local backends decode under the schema). ``ask="user"`` reads the
    user's last message as the question instead of asking the agent model for one: the
    embedded 135M model, forced to call the tool, rewrote "What is the special magic number
    for tallest-towering-globe ...?" as "What is the maximum height of a tall-". Budgets are
    :func:`~langgraph_memagent.build_memagent_graph`'s (MemAgent paper defaults; the embedded
    model wants ``chunk_tokens=1000, memory_tokens=128``). A bad call (no document, an unknown
    key) is answered with one line the agent can act on.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langgraph.store.memory import InMemoryStore
        >>> store = InMemoryStore()
        >>> store.put(("documents",), "annual-report", {"text": open("report.txt").read()})  # doctest: +SKIP
        >>> tool = create_memagent_tool(load_chat_model("smollm2-135m"), chunk_tokens=1000, memory_tokens=128)  # doctest: +SKIP
        >>> agent = create_agent(model, tools=[tool], store=store)                          # doctest: +SKIP
        >>> agent.invoke({"messages": [("user", "What was the revenue in the annual-report?")]})  # doctest: +SKIP
    """
    if source not in get_args(DocumentSource):
        raise ValueError(f"source must be one of {list(get_args(DocumentSource))}, got {source!r}")
    if ask not in get_args(QuestionFrom):
        raise ValueError(f"ask must be one of {list(get_args(QuestionFrom))}, got {ask!r}")
    if document_keys is not None and (source == "text" or not document_keys or not all(isinstance(k, str) and k for k in document_keys)):
        raise ValueError(f"document_keys must be non-empty key strings, for a tool that reads the store; got {document_keys!r}")
    graph = build_memagent_graph(
        model, chunk_tokens=chunk_tokens, memory_tokens=memory_tokens, answer_tokens=answer_tokens, tokenizer=tokenizer,
        name=name,
    )

    def inputs(question: str | None, document: str | None, document_key: str | None, runtime: ToolRuntime | None) -> dict[str, str]:
        if question is None:  # ask="user"
            humans = [message for message in (runtime.state.get("messages", []) if runtime else []) if isinstance(message, HumanMessage)]
            if not humans:
                raise ToolException("the question comes from the user's last message, and this run has none")
            question = humans[-1].text
        if (document is None) == (document_key is None):
            raise ToolException("give the document's text as 'document' or its store key as 'document_key', one of the two")
        if document is None:
            if runtime is None or runtime.store is None:
                raise ToolException("'document_key' needs the agent's store: create_agent(..., store=...)")
            item = runtime.store.get(documents_namespace, document_key)
            if item is None or not isinstance(item.value.get("text"), str):
                raise ToolException(f"no document with key {document_key!r} under {documents_namespace} in the store")
            document = item.value["text"]
        if not question.strip() or not document.strip():
            raise ToolException("'question' and the document must be non-empty text")
        return {"question": question, "document": document}

    def read(question: str | None = None, document: str | None = None, document_key: str | None = None, runtime: Any = None) -> str:
        return _answer_text(graph.invoke(inputs(question, document, document_key, runtime)))

    async def aread(question: str | None = None, document: str | None = None, document_key: str | None = None, runtime: Any = None) -> str:
        return _answer_text(await graph.ainvoke(inputs(question, document, document_key, runtime)))

    return StructuredTool.from_function(
        func=read, coroutine=aread, name=name, args_schema=_arguments(name, source, ask, document_keys), infer_schema=False,
        handle_tool_error=True, description=description or _TOOL_DESCRIPTION.format(what=_WHAT_TO_GIVE[source]),
    )


class MemAgentMiddleware(AgentMiddleware):
    """``create_agent`` middleware: a message or tool result over ``max_message_tokens`` is read
    by MemAgent against the user's current question, and its notes (and answer) take its place.

    The user's current question is the last human message. Before each model call every
    longer message is read, once: the replacement is short, so it is not read again, and it
    stays in the agent's state. A last human message that is itself too long is read with its
    last line as the question, which it keeps. Counts use the MemAgent model's tokenizer.

    Args:
        model: the model MemAgent reads with (the agent's own or a smaller one).
        max_message_tokens: messages longer than this are read (default 4000 tokens).
        chunk_tokens: MemAgent's chunk budget (:func:`~langgraph_memagent.build_memagent_graph`).
        memory_tokens: MemAgent's memory budget.
        answer_tokens: MemAgent's answer budget.
        tokenizer: counts and cuts the messages; default the model's own.

    Example:
        >>> agent = create_agent(model, tools=[fetch_logs], middleware=[         # doctest: +SKIP
        ...     MemAgentMiddleware(load_chat_model("smollm2-135m"), max_message_tokens=4000,
        ...                        chunk_tokens=1000, memory_tokens=128, answer_tokens=64)])
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        max_message_tokens: int = 4000,
        chunk_tokens: int = 5000,
        memory_tokens: int = 1024,
        answer_tokens: int = 1024,
        tokenizer: Any = None,
    ):
        super().__init__()
        self.max_message_tokens = positive_int("max_message_tokens", max_message_tokens, unit="number of tokens")
        self.codec = resolve_tokenizer(tokenizer, model)
        self.graph = build_memagent_graph(
            model, chunk_tokens=chunk_tokens, memory_tokens=memory_tokens, answer_tokens=answer_tokens, tokenizer=self.codec,
            name="memagent_middleware",
        )

    def _to_read(self, messages: Sequence[AnyMessage]) -> list[tuple[AnyMessage, str, str]]:
        """``(message, question, its text)`` for each message over the budget."""
        humans = [message for message in messages if isinstance(message, HumanMessage)]
        current = humans[-1] if humans else None
        question = current.text if current is not None else ""
        # Runs before every model call of the agent: only texts that could be over the budget are
        # tokenized (tokens never outnumber UTF-8 bytes for byte-level and SentencePiece tokenizers).
        candidates = [
            (message, message.text) for message in messages
            if isinstance(message, (HumanMessage, ToolMessage)) and len(message.text.encode()) > self.max_message_tokens
        ]
        sizes = [len(ids) for ids in self.codec.encode_batch([text for _, text in candidates])]
        return [
            (message, text.strip().splitlines()[-1] if message is current else question, text)
            for (message, text), size in zip(candidates, sizes) if size > self.max_message_tokens
        ]

    @staticmethod
    def _replacement(message: AnyMessage, question: str, text: str, result: dict[str, Any]) -> AnyMessage:
        kind = "tool result" if isinstance(message, ToolMessage) else "message"
        notes = (
            f"[MemAgent read this {kind} of {len(text)} characters for the question {question!r}; its notes:]\n"
            f"{result.get('memory', '')}\n[MemAgent's answer: {result.get('answer')}]"
        )
        if isinstance(message, HumanMessage) and question != text:
            notes += f"\n{question}"
        return message.model_copy(update={"content": notes})

    def before_model(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        found = self._to_read(state["messages"])
        if not found:
            return None
        read = [self.graph.invoke({"question": question, "document": text}) for _, question, text in found]
        return {"messages": [self._replacement(*entry, result) for entry, result in zip(found, read)]}

    async def abefore_model(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        found = await asyncio.to_thread(self._to_read, state["messages"])
        if not found:
            return None
        read = await asyncio.gather(*(self.graph.ainvoke({"question": question, "document": text}) for _, question, text in found))
        return {"messages": [self._replacement(*entry, result) for entry, result in zip(found, read)]}


__all__ = ["MemAgentMiddleware", "create_memagent_tool"]
