"""Every code block of the README and the documentation site runs (Python) or parses (shell
commands), so no example rots.

The Python blocks run in order in one namespace, like a reader pasting them into a session,
on the embedded model with small inputs; the block that needs a running ``langgraph dev``
runs in ``test_langgraph_server.py`` against the real server. Shell commands of this
package's CLIs are parsed by their own parsers (the runs themselves are the demo, the
comparison tests and the benchmarks); other tools' commands are listed, so a new kind of
command must be classified here.
"""

from __future__ import annotations

import ast
import asyncio
import inspect

import pytest

from langgraph_memagent.evals import generate_task, write_ruler_jsonl
from readme import Block, documentation_blocks, shell_commands

SERVER_IMPORT = "langgraph_sdk"
# A block whose main model is a hosted one (the Deep Agents example): compiled here, not run; its
# flow runs in test_deepagents.py with a scripted main agent.
HOSTED_MODEL = '"openai:'

OTHER_TOOLS = {"make", "vllm", ".venv/bin/langgraph", "python", "pip"}


def _run_block(block: Block, namespace: dict) -> None:
    code = compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)  # noqa: S307 - the README's own example code
    if inspect.iscoroutine(result):  # a block with top-level `await`
        asyncio.run(result)


@pytest.mark.embedded  # the README's examples load the embedded model themselves
def test_readme_python_blocks_run(tmp_path, monkeypatch, smollm2_codec) -> None:
    monkeypatch.chdir(tmp_path)
    # The files and names the README's examples assume the reader has.
    haystack, short = generate_task("niah_single_1", 1200, codec=smollm2_codec, seed=7) + generate_task(
        "niah_single_1", 200, codec=smollm2_codec, seed=8
    )
    (tmp_path / "haystack.txt").write_text(haystack.document, encoding="utf-8")
    write_ruler_jsonl(generate_task("niah_single_1", 500, codec=smollm2_codec, num_samples=2), tmp_path / "niah_single_1/validation.jsonl")
    inputs = [{"question": short.question, "document": short.document}] * 2
    namespace = {"q": short.question, "d": short.document, "inputs": inputs, "__name__": "readme"}

    blocks = [block for block in documentation_blocks("python") if SERVER_IMPORT not in block.code]
    hosted = [block for block in blocks if HOSTED_MODEL in block.code]
    for block in hosted:
        compile(block.code, block.where, "exec")
    blocks = [block for block in blocks if block not in hosted]
    assert len(blocks) == 8 and len(hosted) == 1, [block.where for block in blocks + hosted]
    for block in blocks:
        _run_block(block, namespace)

    assert namespace["result"]["chunks_read"] == 2 and set(namespace["result"]) >= {"answer", "memory", "usage"}
    assert namespace["app"].get_state({"configurable": {"thread_id": "report-1"}}).values["answer"]  # the graph as a subgraph node
    from langchain_core.messages import ToolMessage

    [read] = [m for m in namespace["by_tool"]["messages"] if isinstance(m, ToolMessage)]
    assert read.name == "read_long_document" and read.status == "success"
    [notes] = [m for m in namespace["by_middleware"]["messages"] if isinstance(m, ToolMessage)]
    assert notes.text.startswith("[MemAgent read this tool result")
    assert len(namespace["samples"]) == 8 and namespace["samples"][0].metric in ("any", "all")
    assert len(namespace["records"]) == 2 and namespace["records"][0].answers
    assert (tmp_path / "eval_niah.json").is_file() and (tmp_path / "runs.sqlite").is_file()
    from langgraph_memagent.evals import load_records  # the generated conversations are LoCoMo files

    assert len(load_records(tmp_path / "train.json")) > 64 and load_records(tmp_path / "held_out.json")[0].meta["evidence"]


def _parse_trainer_args(argv: list[str]) -> None:
    from langgraph_memagent.training.grpo_multiconv import parse_config

    if "--help" in argv:
        with pytest.raises(SystemExit) as exit_info:
            parse_config(argv)
        assert exit_info.value.code == 0
    else:
        parse_config(argv)


@pytest.mark.parametrize("block", documentation_blocks("bash"), ids=lambda block: block.where)
def test_readme_shell_commands_parse(block: Block) -> None:
    from langgraph_memagent.cli import build_parser

    for command in shell_commands(block):
        while "=" in command[0] and command[0].split("=")[0].isupper():  # VARIABLE=value before a command
            command = command[1:]
        if command[:2] == ["memagent", "train"]:  # the trainer's own parser reads what follows
            _parse_trainer_args(command[2:])
        elif command[0] == "memagent":
            build_parser().parse_args(command[1:])
        elif "training/grpo_multiconv.py" in command:
            argv = command[command.index("training/grpo_multiconv.py") + 1 :]
            if command[0] == "accelerate":  # a GPU command: bf16 is refused on this CPU machine
                argv += ["--bf16", "false"]
            _parse_trainer_args(argv)
        else:
            assert command[0] in OTHER_TOOLS, f"{block.where}: classify {command[0]!r} in this test"
