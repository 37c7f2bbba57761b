"""AgeMem-style memory agent: one policy manages long-term memory (a store) and its own context.

AgeMem ("Agentic Memory": one policy manages long- and short-term memory) gives a
tool-calling model six memory actions:

* long-term memory, a LangGraph ``BaseStore`` namespace: ADD (``add_memory``), UPDATE
  (``update_memory``), DELETE (``delete_memory``); items get short ids ``m1``, ``m2``, ...
  that are their store keys, so the model can cite them;
* short-term memory, the message list in the graph state: RETRIEVE (``retrieve_memory``,
  semantic search whose hits come back as the tool reply, i.e. injected into the
  context), SUMMARY (``summarize_context``, a span of whole message groups replaced by one
  summary message) and FILTER (``filter_context``, whole message groups removed).

**Message groups.** A group is one user message, or one assistant message together with
all its tool replies: OpenAI-format APIs reject an assistant tool call without its reply,
so SUMMARY and FILTER act on whole groups only and the transcript stays valid. Group ids
are message ids: ``g3`` is the id of a group's first message, ``g3-r1`` of the first tool
reply in group 3. The model sees them two ways: every user message and tool reply it
reads starts with its group's id (``"[g3] ..."``, added when the prompt is rendered, never
stored), and the system prompt ends with a map of the context (``g1 user (120 words) ·
g2 assistant + 1 tool reply ...``). Assistant messages get no prefix, so the model is not
taught to start its own answers with one. A summary keeps the id of the first group it
replaces.

**Stages.** One run of :func:`build_agemem_graph` is one stage of AgeMem's rollout: the
stage's content (``incoming``) arrives one user message at a time and after each arrival
the model takes turns (text or tool calls) until it replies with text only or
``max_turns_per_message`` turns are used; ``max_stage_turns`` caps the stage's turns in
total (content that arrives after the cap is still appended, unanswered).
:func:`run_agemem_protocol` runs the three stages: (1) build long-term memory while the
content arrives, (2) reset the context (long-term memory is kept), distractors arrive,
(3) the question arrives in that same context, the model retrieves and answers.
:func:`build_agemem_qa_graph` wraps the protocol in the package's graph contract
(``{"question", "document"}`` in, :class:`~langgraph_memagent.agents.calls.AnswerOutput`
out) for the comparison harness.

The long-term namespace comes from the run's context (``context={"user_id": "alice"}``
gives ``("alice", "agemem")``), read through the LangGraph ``Runtime``; bad tool calls
(unknown ids, malformed arguments, unparsable calls) become tool replies the model can
read and act on, never exceptions.

Modules: :mod:`.tools` (the six tools and the stage prompts), :mod:`.context` (message
groups, SUMMARY and FILTER), :mod:`.store` (long-term memory), :mod:`.graph` (one stage)
and :mod:`.protocol` (the three stages and the question-answering graph).
"""

from .context import message_groups, validate_transcript
from .graph import AgeMemConfig, AgeMemContext, AgeMemGraph, AgeMemInput, AgeMemOutput, build_agemem_graph
from .protocol import (
    LOCAL_CONTEXT_TOKENS,
    AgeMemProtocolResult,
    arun_agemem_protocol,
    build_agemem_qa_graph,
    essay_distractors,
    locomo_session_messages,
    locomo_turn_line,
    run_agemem_protocol,
)
from .store import LongTermMemory, default_agemem_store
from .tools import STAGES, agemem_tools


__all__ = [
    "LOCAL_CONTEXT_TOKENS",
    "STAGES",
    "AgeMemConfig",
    "AgeMemContext",
    "AgeMemGraph",
    "AgeMemInput",
    "AgeMemOutput",
    "AgeMemProtocolResult",
    "LongTermMemory",
    "agemem_tools",
    "arun_agemem_protocol",
    "build_agemem_graph",
    "build_agemem_qa_graph",
    "default_agemem_store",
    "essay_distractors",
    "locomo_session_messages",
    "locomo_turn_line",
    "message_groups",
    "run_agemem_protocol",
    "validate_transcript",
]
