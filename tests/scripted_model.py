"""A scripted chat model for control-flow tests: a function of the prompt decides the reply.

It implements the chat-model interface honestly (sync and async, ``max_tokens``
truncation, usage metadata in whitespace tokens) so graphs cannot tell it from a real
backend; it is never used to claim anything about model quality.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

Responder = Callable[[str], str]


class ScriptedChatModel(BaseChatModel):
    """Replies with ``responder(last user message)``, truncated to ``max_tokens`` words."""

    responder: Responder
    max_tokens: int = 1024
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def prompts(self) -> list[str]:
        """Every prompt received, in arrival order."""
        return list(self._prompts)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        prompt = messages[-1].text
        with self._lock:
            self._prompts.append(prompt)
        words = self.responder(prompt).split(" ")[: kwargs.get("max_tokens", self.max_tokens)]
        text = " ".join(words)
        usage = {"input_tokens": len(prompt.split()), "output_tokens": len(text.split()), "total_tokens": 0}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, usage_metadata=usage))])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return self._reply(messages, kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return self._reply(messages, kwargs)


_NEEDLE = re.compile(r"special magic number for [\w-]+ is: (\d+)")


def section(prompt: str) -> str:
    """The ``<section>`` body of a memory-update prompt (the template ends with it)."""
    start = prompt.index("<section>\n") + len("<section>\n")
    return prompt[start : prompt.rindex("\n</section>")]


def memory(prompt: str) -> str:
    start = prompt.index("<memory>\n") + len("<memory>\n")
    return prompt[start : prompt.index("\n</memory>", start)]


def needle_reader(prompt: str) -> str:
    """A perfect reader: remembers a needle's number once seen, boxes it at the end."""
    if "<section>" in prompt:
        found = _NEEDLE.search(section(prompt))
        return f"The number is {found.group(1)}" if found else memory(prompt)
    found = re.search(r"\d+", memory(prompt))
    return f"\\boxed{{{found.group(0)}}}" if found else "I do not know."


ToolResponder = Callable[[list[BaseMessage], list[dict[str, Any]]], "AIMessage | str"]


class ScriptedToolModel(BaseChatModel):
    """A scripted tool-calling chat model: ``responder(messages, tools)`` decides the reply.

    ``bind_tools`` converts tools to OpenAI schemas (as real chat models do) and passes them
    to the responder, which returns an ``AIMessage`` (with ``tool_calls`` or
    ``invalid_tool_calls``) or plain text. Every call's messages are kept in ``calls``.
    """

    responder: ToolResponder
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-tools"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages of every call, in arrival order."""
        return list(self._calls)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        with self._lock:
            self._calls.append(list(messages))
        reply = self.responder(list(messages), kwargs.get("tools", []))
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        words = sum(len(m.text.split()) for m in messages)
        out = len(message.text.split()) + sum(len(str(call["args"]).split()) for call in message.tool_calls)
        message.usage_metadata = {"input_tokens": words, "output_tokens": out, "total_tokens": words + out}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return self._reply(messages, kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return self._reply(messages, kwargs)


def tool_call(name: str, call_id: str = "call-1", **args: Any) -> dict[str, Any]:
    """A LangChain tool call dict, for scripted replies: ``AIMessage("", tool_calls=[tool_call("f", x=1)])``."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}
