"""What every graph is built from, below any graph: chat-model backends (embedded, ``hf:``, servers,
vLLM), tool calling, tokenizers and chunking, prompts and answer extraction, the question-in
answer-out contract with model-call accounting, the compiled-graph machinery, and the English
prose that fills haystacks and distractors."""

from .answers import extract_answer
from .embedded import embedded_model_dir
from .loading import describe_decoding, load_chat_model
from .local_model import LocalChatModel
from .prompts import final_prompt, memory_update_prompt
from .tokenizers import TokenCodec, chunk_text, iter_chunks, resolve_tokenizer
from .tool_calling import ParsedReply, parse_tool_calls


__all__ = [
    "LocalChatModel",
    "ParsedReply",
    "TokenCodec",
    "chunk_text",
    "describe_decoding",
    "embedded_model_dir",
    "extract_answer",
    "final_prompt",
    "iter_chunks",
    "load_chat_model",
    "memory_update_prompt",
    "parse_tool_calls",
    "resolve_tokenizer",
]
