"""MemAgent as a Deep Agents subagent: the main agent delegates through ``task`` and the subagent
reads a file longer than the agent model's window from the deep agent's filesystem."""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest.importorskip("deepagents", reason="needs the deepagents extra: pip install 'langgraph-memagent[deepagents]'")

from deepagents import create_deep_agent  # noqa: E402
from deepagents.backends import FilesystemBackend  # noqa: E402
from deepagents.backends.utils import create_file_data  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from scripted_model import ScriptedChatModel, ScriptedToolModel, needle_reader, tool_call  # noqa: E402

from langgraph_memagent.graphs import create_memagent_subagent  # noqa: E402

QUESTION = "What is the special magic number for tidy-cat?"
NEEDLE = "One of the special magic number for tidy-cat is: 7654321."
DOCUMENT = "\n".join(["The grass is green. The sky is blue."] * 300 + [NEEDLE] + ["Rivers run to the sea."] * 300)
AGENT_WINDOW = 2048  # tokens the agent model could take: the document is several times longer
BUDGETS = {"chunk_tokens": 500, "memory_tokens": 32, "answer_tokens": 16}


def delegate(task: str, subagent: str = "memagent-reader"):
    """A main agent model: delegates ``task`` to ``subagent``, then repeats what came back."""

    def responder(messages, tools):
        replies = [message for message in messages if isinstance(message, ToolMessage)]
        return replies[-1].text if replies else AIMessage("", tool_calls=[tool_call("task", description=task, subagent_type=subagent)])

    return responder


def _longest_prompt(calls, codec) -> int:
    return max(len(codec.encode_batch(["\n".join(m.text for m in messages)])[0]) for messages in calls)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("where", ["state", "disk"])
def test_the_deep_agent_delegates_a_long_file_to_memagent(mode, where, smollm2_codec, tmp_path):
    assert len(smollm2_codec.encode_batch([DOCUMENT])[0]) > 2 * AGENT_WINDOW
    reader_model = ScriptedChatModel(responder=needle_reader)
    backend = None
    payload = {"messages": [HumanMessage(QUESTION)]}
    if where == "state":  # the default StateBackend: the files travel in the agent state
        payload["files"] = {"/docs/report.txt": create_file_data(DOCUMENT)}
    else:
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "report.txt").write_text(DOCUMENT)
        backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    reader = create_memagent_subagent(reader_model, tokenizer=smollm2_codec, backend=backend, **BUDGETS)
    assert reader["name"] == "memagent-reader" and "absolute path" in reader["description"]
    agent_model = ScriptedToolModel(responder=delegate(f"Read /docs/report.txt and answer: {QUESTION}"))
    agent = create_deep_agent(agent_model, subagents=[reader], backend=backend)
    result = agent.invoke(payload) if mode == "sync" else asyncio.run(agent.ainvoke(payload))
    [delegated] = [message for message in result["messages"] if isinstance(message, ToolMessage)]
    assert delegated.text == "7654321" and result["messages"][-1].text == "7654321"
    section_prompts = [prompt for prompt in reader_model.prompts if "<section>" in prompt]
    assert len(section_prompts) >= 4 and all(QUESTION in prompt for prompt in reader_model.prompts)  # read chunk by chunk
    assert _longest_prompt(agent_model.calls, smollm2_codec) < AGENT_WINDOW  # the file never reached the main agent


@pytest.mark.parametrize(
    ("task", "line"),
    [
        (f"Answer: {QUESTION}", f"no file path in the task 'Answer: {QUESTION}'"),
        ("Read /docs/report.txt", "no question in the task 'Read /docs/report.txt'"),
        ("Read /docs/report.txt and answer:", "no question in the task 'Read /docs/report.txt and answer:'"),
        (f"Read /docs/missing.txt and answer: {QUESTION}", "no file '/docs/missing.txt' in the agent's filesystem"),
        (f"Read /secrets/key.txt and answer: {QUESTION}", "the path '/secrets/key.txt' is outside the readable folders ['/docs/']"),
        (f"Read /docs/../secrets/key.txt and answer: {QUESTION}", "the path '/docs/../secrets/key.txt' leaves its folder ('..' is not allowed)"),
        (f"Compare /docs/report.txt with /docs/empty.txt; answer: {QUESTION}", "one file per task, and this one names 2: '/docs/report.txt', '/docs/empty.txt'"),
        (f"Read /docs/empty.txt and answer: {QUESTION}", "the file '/docs/empty.txt' is empty"),
    ],
)
def test_a_bad_task_is_answered_in_one_line_naming_the_bad_value(task, line, smollm2_codec):
    reader_model = ScriptedChatModel(responder=needle_reader)
    reader = create_memagent_subagent(reader_model, tokenizer=smollm2_codec, allowed_prefixes=["/docs/"], **BUDGETS)
    files = {
        "/docs/report.txt": create_file_data(DOCUMENT), "/docs/empty.txt": create_file_data("  \n"),
        "/secrets/key.txt": create_file_data("hunter2"),
    }
    result = reader["runnable"].invoke({"messages": [HumanMessage(task)], "files": files})
    reply = result["messages"][-1].text
    assert reply.startswith(line) and "\n" not in reply, reply
    assert reader_model.prompts == []  # nothing was read


def test_a_folder_is_not_a_file(smollm2_codec, tmp_path):
    (tmp_path / "docs").mkdir()
    reader_model = ScriptedChatModel(responder=needle_reader)
    reader = create_memagent_subagent(reader_model, tokenizer=smollm2_codec, backend=FilesystemBackend(root_dir=tmp_path, virtual_mode=True))
    result = reader["runnable"].invoke({"messages": [HumanMessage(f"Read /docs/ and answer: {QUESTION}")]})
    assert result["messages"][-1].text == "'/docs/' is a folder, not a file" and reader_model.prompts == []


def test_the_task_reads_the_question_around_the_path_and_bad_arguments_raise(smollm2_codec):
    reader_model = ScriptedChatModel(responder=needle_reader)
    reader = create_memagent_subagent(reader_model, tokenizer=smollm2_codec, name="reader", **BUDGETS)
    agent_model = ScriptedToolModel(responder=delegate("What is the special magic number for tidy-cat in '/docs/field notes.txt'?", "reader"))
    agent = create_deep_agent(agent_model, subagents=[reader])
    result = agent.invoke({"messages": [HumanMessage(QUESTION)], "files": {"/docs/field notes.txt": create_file_data(DOCUMENT)}})
    assert result["messages"][-1].text == "7654321"
    assert "What is the special magic number for tidy-cat in the file?" in reader_model.prompts[0]
    with pytest.raises(ValueError, match=r"allowed_prefixes must be absolute folders such as '/docs/', got \['docs'\]"):
        create_memagent_subagent(reader_model, tokenizer=smollm2_codec, allowed_prefixes=["docs"])
    with pytest.raises(ValueError, match="name must be letters, digits, '_', '-' or '.', got 'a reader'"):
        create_memagent_subagent(reader_model, tokenizer=smollm2_codec, name="a reader")


def test_without_deepagents_building_the_subagent_names_the_extra(monkeypatch):
    for module in [name for name in sys.modules if name == "deepagents" or name.startswith("deepagents.")]:
        monkeypatch.setitem(sys.modules, module, None)  # what an install without the extra finds
    with pytest.raises(ImportError) as raised:
        create_memagent_subagent(ScriptedChatModel(responder=needle_reader))
    assert str(raised.value) == (
        "create_memagent_subagent needs the optional dependency 'deepagents': pip install 'langgraph-memagent[deepagents]'")


@pytest.mark.embedded
def test_the_embedded_model_reads_the_file_for_the_deep_agent(greedy_model, smollm2_codec):
    from langgraph_memagent.evals import generate_task

    [sample] = generate_task("niah_single_1", 2000, codec=smollm2_codec, seed=3)  # two chunks: ~2 minutes on a busy CPU
    reader = create_memagent_subagent(greedy_model, chunk_tokens=1000, memory_tokens=64, answer_tokens=32)
    # The main agent is scripted: a 135M model does not write a path and a question into a task description.
    agent_model = ScriptedToolModel(responder=delegate(f"Read /docs/haystack.txt and answer: {sample.question}"))
    agent = create_deep_agent(agent_model, subagents=[reader])
    result = agent.invoke({"messages": [HumanMessage(sample.question)], "files": {"/docs/haystack.txt": create_file_data(sample.document)}})
    [delegated] = [message for message in result["messages"] if isinstance(message, ToolMessage)]
    assert sample.answers[0] in delegated.text, (sample.answers, delegated.text)
