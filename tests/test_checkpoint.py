"""Kill a run at chunk k, resume it with ``graph.invoke(None, config)``, get the same answer.

Checkpointers: InMemorySaver, SqliteSaver (also across a real process kill) and
PostgresSaver against a throw-away PostgreSQL cluster started on loopback.
"""

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from scripted_model import ScriptedChatModel, needle_reader, section
from servers import ServerUnavailable, postgres_server

from langgraph_memagent import build_memagent_graph
from langgraph_memagent.graphs import ModelCallError

QUESTION = "What is the special magic number for tidy-cat?"
FAIL_AT = 4  # the memory update of chunk 4 fails (chunks 0..3 are done)


def document(lines: int = 300, needle_at: int = 150) -> str:
    haystack = ["The grass is green. The sky is blue. Here we go."] * lines
    haystack.insert(needle_at, "One of the special magic number for tidy-cat is: 7654321.")
    return "\n".join(haystack)


class Flaky:
    """needle_reader that fails at one memory update, once, like a crashed model call."""

    def __init__(self, fail_at: int | None):
        self.fail_at, self.calls = fail_at, 0

    def __call__(self, prompt: str) -> str:
        if "<section>" in prompt:
            if self.calls == self.fail_at:
                self.fail_at = None
                raise ConnectionError("model server went away")
            self.calls += 1
        return needle_reader(prompt)


def interrupted_then_resumed(checkpointer, codec, thread_id: str):
    reference_model = ScriptedChatModel(responder=needle_reader)
    reference = build_memagent_graph(reference_model, chunk_tokens=300, tokenizer=codec)
    expected = reference.invoke({"question": QUESTION, "document": document()})

    model = ScriptedChatModel(responder=Flaky(FAIL_AT))
    graph = build_memagent_graph(model, chunk_tokens=300, tokenizer=codec, checkpointer=checkpointer)
    config = {"configurable": {"thread_id": thread_id}}
    with pytest.raises(ModelCallError, match=f"chunk {FAIL_AT}"):
        graph.invoke({"question": QUESTION, "document": document()}, config)
    state = graph.get_state(config)
    assert state.next == ("update_memory",) and state.values["chunks_read"] == FAIL_AT
    calls_before = len(model.prompts)

    result = graph.invoke(None, config)
    resumed_prompts = model.prompts[calls_before:]
    # The resumed run starts at chunk k with the memory it had after chunk k-1.
    assert section(resumed_prompts[0]) == section(reference_model.prompts[FAIL_AT])
    assert resumed_prompts[0] == reference_model.prompts[FAIL_AT]
    assert result["answer"] == expected["answer"] == "7654321"
    assert result["chunks_read"] == expected["chunks_read"]
    assert result["usage"]["llm_calls"] == expected["usage"]["llm_calls"]


def test_resume_in_memory(smollm2_codec):
    from langgraph.checkpoint.memory import InMemorySaver

    interrupted_then_resumed(InMemorySaver(), smollm2_codec, "mem")


def test_resume_sqlite(smollm2_codec, tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(tmp_path / "ckpt.sqlite")) as saver:
        interrupted_then_resumed(saver, smollm2_codec, "sqlite")


@pytest.fixture(scope="module")
def postgres_url():
    try:
        with postgres_server() as url:
            yield url
    except ServerUnavailable as reason:
        pytest.skip(str(reason))


@pytest.mark.server
def test_resume_postgres(smollm2_codec, postgres_url):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        interrupted_then_resumed(saver, smollm2_codec, "postgres")


KILLED_RUN = textwrap.dedent(
    """
    import os, sys, json
    sys.path.insert(0, {tests!r})
    from scripted_model import ScriptedChatModel, needle_reader, section
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph_memagent import build_memagent_graph
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer
    calls = []
    def responder(prompt):
        if "<section>" in prompt:
            if len(calls) == {kill_at}:
                os._exit(17)  # a hard kill: no exception handling, no cleanup
            calls.append(section(prompt))
        return needle_reader(prompt)
    with SqliteSaver.from_conn_string({db!r}) as saver:
        graph = build_memagent_graph(ScriptedChatModel(responder=responder), chunk_tokens=300,
                                     tokenizer=resolve_tokenizer({tokenizer!r}), checkpointer=saver)
        config = {{"configurable": {{"thread_id": "t"}}}}
        payload = json.loads(sys.argv[1])
        result = graph.invoke(payload, config)
        print(json.dumps({{"answer": result["answer"], "first_section": calls[0], "chunks_read": result["chunks_read"]}}))
    """
)


def test_resume_sqlite_after_a_process_kill(embedded_model_dir, tmp_path):
    db, tests = str(tmp_path / "killed.sqlite"), str(Path(__file__).parent)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def run(kill_at: int, payload) -> subprocess.CompletedProcess:
        script = KILLED_RUN.format(tests=tests, kill_at=kill_at, db=db, tokenizer=str(embedded_model_dir))
        return subprocess.run([sys.executable, "-c", script, json.dumps(payload)], capture_output=True, text=True, env=env, timeout=300)

    killed = run(FAIL_AT, {"question": QUESTION, "document": document()})
    assert killed.returncode == 17, killed.stderr[-2000:]
    # A new process: the in-memory chunk store is gone; the graph rebuilds it from the
    # run's input checkpoint and goes on at chunk k.
    resumed = run(-1, None)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    outcome = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert outcome["answer"] == "7654321" and outcome["chunks_read"] > FAIL_AT

    from langgraph_memagent.agents.tokenizers import chunk_text, resolve_tokenizer

    chunks = chunk_text(document(), resolve_tokenizer(str(embedded_model_dir)), 300)
    assert outcome["first_section"] == chunks[FAIL_AT]


def sqlite_bytes_per_step(db: Path) -> list[int]:
    """Bytes written per step (checkpoint row + its writes) after the run's first step.

    The input checkpoint and step 0 hold the document once, by design: that copy is
    what lets a run resume after a process kill. Every later step must stay small.
    """
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "select c.checkpoint_id, length(c.checkpoint) + length(c.metadata), c.metadata from checkpoints c"
        ).fetchall()
        writes = dict(connection.execute("select checkpoint_id, sum(length(value)) from writes group by checkpoint_id"))
    sizes = []
    for checkpoint_id, size, metadata in rows:
        if json.loads(metadata)["step"] > 0:
            sizes.append(size + (writes.get(checkpoint_id) or 0))
    return sizes


def test_checkpoint_bytes_per_step_do_not_grow_with_document_length(smollm2_codec, tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    largest = {}
    for lines in (300, 3000):  # about 4K and 40K tokens
        db = tmp_path / f"size{lines}.sqlite"
        with SqliteSaver.from_conn_string(str(db)) as saver:
            graph = build_memagent_graph(
                ScriptedChatModel(responder=needle_reader), chunk_tokens=300, tokenizer=smollm2_codec, checkpointer=saver
            )
            graph.invoke({"question": QUESTION, "document": document(lines, needle_at=10)}, {"configurable": {"thread_id": "t"}})
        sizes = sqlite_bytes_per_step(db)
        assert len(sizes) > lines // 30  # one checkpoint per chunk
        largest[lines] = max(sizes)
    assert largest[3000] <= largest[300] * 1.1, largest
    assert largest[300] < 4096, largest  # a few small fields, not the document


def test_new_input_on_an_interrupted_thread_starts_a_new_run(smollm2_codec):
    """LangGraph's contract: input starts a run, ``None`` resumes; the old run's memory is not reused."""
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_memagent.agents import chunk_text

    model = ScriptedChatModel(responder=Flaky(FAIL_AT))
    graph = build_memagent_graph(model, chunk_tokens=300, tokenizer=smollm2_codec, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "reused"}}
    with pytest.raises(ModelCallError):
        graph.invoke({"question": QUESTION, "document": document()}, config)
    other = document(lines=40, needle_at=20).replace("7654321", "1112223")
    result = graph.invoke({"question": QUESTION, "document": other}, config)
    assert result["answer"] == "1112223"
    assert result["chunks_read"] == result["num_chunks"] == len(chunk_text(other, smollm2_codec, 300))
