"""The served graphs (graphs/served.py, langgraph.json): in-process checks, then a real
``langgraph dev`` server on loopback driven through the LangGraph SDK client."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from langgraph_memagent.agents.tokenizers import chunk_text
from langgraph_memagent.graphs.served import build_served_memagent, served_codec, served_model, served_tokenizer
from scripted_model import ScriptedChatModel
from servers import LOOPBACK, ServerUnavailable, _free_port, _log_tail, _stop_process_group, postgres_server

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG = REPO_ROOT / "langgraph.json"

# A small budget so a served run costs three short calls of the embedded model:
# two memory updates (the document is two chunks) and one answer.
SERVER_BUDGET = {"MEMAGENT_CHUNK_TOKENS": "120", "MEMAGENT_MEMORY_TOKENS": "32", "MEMAGENT_ANSWER_TOKENS": "16"}
NEEDLE = "7391042"
QUESTION = "What is the special magic number for tired-apple mentioned in the provided text?"
DOCUMENT = (
    "The grass is green. The sky is blue. The sun is yellow. Here we go. " * 4
    + f"One of the special magic numbers for tired-apple is: {NEEDLE}. "
    + "The grass is green. The sky is blue. The sun is yellow. Here we go. " * 4
)


# --------------------------------------------------------------------------- #
# In process: what the server imports
# --------------------------------------------------------------------------- #


def test_langgraph_json_points_at_served_graphs() -> None:
    config = json.loads(CONFIG.read_text())
    assert config["dependencies"] == ["."]
    for graph_id, target in config["graphs"].items():
        module_name, _, variable = target.partition(":")
        module = importlib.import_module(module_name)
        graph = getattr(module, variable)
        # langgraph dev refuses graphs carrying their own persistence.
        assert graph.checkpointer is None and graph.store is None, graph_id
        assert graph.name == graph_id


def test_served_memagent_reads_budgets_from_env_and_survives_copies(smollm2_codec) -> None:
    env = {"MEMAGENT_CHUNK_TOKENS": "64", "MEMAGENT_MEMORY_TOKENS": "16"}
    model = ScriptedChatModel(responder=lambda prompt: "memory" if "Updated memory:" in prompt else "\\boxed{42}")
    graph = build_served_memagent(model, smollm2_codec, env)
    assert (graph.memagent_config.chunk_tokens, graph.memagent_config.memory_tokens) == (64, 16)
    assert graph.memagent_config.answer_tokens == 1024  # MemAgent paper default
    assert graph.store is None and graph.checkpointer is None
    # A LangGraph server copies the graph per run, handing it its own store.
    served = graph.copy(update={"store": InMemoryStore()}).with_config(recursion_limit=50)
    result = served.invoke({"question": "q?", "document": "word " * 100})
    assert result["answer"] == "42"
    assert result["chunks_read"] == result["num_chunks"] >= 2


def test_served_model_and_tokenizer_errors_name_the_variable(smollm2_codec) -> None:
    with pytest.raises(ValueError, match="MEMAGENT_CHUNK_TOKENS must be an integer, got 'many'"):
        build_served_memagent(ScriptedChatModel(responder=str), smollm2_codec, {"MEMAGENT_CHUNK_TOKENS": "many"})
    with pytest.raises(ValueError, match="set MEMAGENT_TOKENIZER"):
        served_codec({"MEMAGENT_MODEL": "openai:gpt-4o-mini"})
    with pytest.raises(ValueError, match="unknown model spec 'gpt-4'"):
        served_model({"MEMAGENT_MODEL": "gpt-4"})
    assert served_tokenizer({"MEMAGENT_MODEL": "openai:gpt-4o-mini"}) is None


# --------------------------------------------------------------------------- #
# A real `langgraph dev` server
# --------------------------------------------------------------------------- #


def _langgraph_cli() -> Path:
    """The ``langgraph`` CLI of this interpreter's environment, with the in-memory runtime."""
    cli = Path(sys.executable).with_name("langgraph")
    if not cli.exists():
        raise ServerUnavailable(f"`langgraph` CLI not found next to {sys.executable}: pip install 'langgraph-cli[inmem]'")
    missing = [m for m in ("langgraph_api", "langgraph_runtime_inmem") if importlib.util.find_spec(m) is None]
    if missing:
        raise ServerUnavailable(f"`langgraph dev` needs {', '.join(missing)}: pip install 'langgraph-cli[inmem]'")
    return cli


@contextlib.contextmanager
def langgraph_dev_server(workdir: Path, env: dict[str, str], *, startup_timeout: float = 180.0) -> Iterator[str]:
    """Run ``langgraph dev`` on a free loopback port with this repository's langgraph.json.

    Never with ``--allow-blocking``: the server's blocking-call detector stays on, so a graph
    that blocks its event loop fails its run.

    ``workdir`` is the server's working directory: the in-memory runtime writes its
    ``.langgraph_api`` persistence files there, not into the repository.
    """
    cli = _langgraph_cli()
    port = _free_port()
    url = f"http://{LOOPBACK}:{port}"
    command = [str(cli), "dev", "--host", LOOPBACK, "--port", str(port), "--config", str(CONFIG), "--no-browser", "--no-reload"]
    log_path = workdir / "langgraph-dev.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"langgraph dev exited with {proc.returncode} during start-up:\n{_log_tail(log_path)}")
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=5) as response:
                    if response.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass  # not listening yet (graphs import before the port opens)
            if time.monotonic() > deadline:
                raise RuntimeError(f"langgraph dev not healthy at {url}/ok after {startup_timeout:.0f}s:\n{_log_tail(log_path)}")
            time.sleep(0.5)
        yield url
    finally:
        _stop_process_group(proc)


@pytest.fixture(scope="module")
def server_url(embedded_model_dir, tmp_path_factory) -> Iterator[str]:
    """A ``langgraph dev`` server serving the embedded model greedily (skips when not installed)."""
    env = {
        **os.environ,
        # No network: no CLI analytics, no LangSmith tracing, no hub downloads.
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MEMAGENT_MODEL": "smollm2-135m",
        "MEMAGENT_TEMPERATURE": "0",
        **SERVER_BUDGET,
    }
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(langgraph_dev_server(tmp_path_factory.mktemp("langgraph-dev"), env))
        except ServerUnavailable as exc:
            pytest.skip(str(exc))
        yield url


@pytest.mark.server
@pytest.mark.embedded
def test_sdk_runs_memagent_on_langgraph_dev(server_url, smollm2_codec) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server_url, timeout=600)
    # Every graph of langgraph.json was imported and registered.
    assert {a["graph_id"] for a in client.assistants.search()} == set(json.loads(CONFIG.read_text())["graphs"])

    expected_chunks = len(chunk_text(DOCUMENT, smollm2_codec, int(SERVER_BUDGET["MEMAGENT_CHUNK_TOKENS"])))
    assert expected_chunks == 2

    thread = client.threads.create()
    result = client.runs.wait(thread["thread_id"], "memagent", input={"question": QUESTION, "document": DOCUMENT})

    # The output contract. The server answers with the thread's state values, a superset
    # of the graph's output keys; the document itself must not ride back.
    assert {"answer", "response", "memory", "chunks_read", "num_chunks", "empty_memory_updates", "usage"} <= set(result)
    assert not result.get("document")
    assert result["chunks_read"] == result["num_chunks"] == expected_chunks
    assert isinstance(result["response"], str) and result["response"].strip()
    assert result["answer"] is None or isinstance(result["answer"], str)
    usage = result["usage"]
    assert usage["llm_calls"] == expected_chunks + 1
    budget = expected_chunks * int(SERVER_BUDGET["MEMAGENT_MEMORY_TOKENS"]) + int(SERVER_BUDGET["MEMAGENT_ANSWER_TOKENS"])
    assert 0 < usage["output_tokens"] <= budget
    assert usage["input_tokens"] > len(smollm2_codec.encode_batch([DOCUMENT])[0])  # every chunk was read

    # The server's checkpointer recorded the run step by step on the thread...
    history = client.threads.get_history(thread["thread_id"], limit=20)
    assert len(history) >= expected_chunks + 2
    assert client.threads.get(thread["thread_id"])["status"] == "idle"
    # ...and the chunks lived in the server's store only for the run.
    assert client.store.search_items(["memagent", "documents"])["items"] == []


@pytest.mark.server
@pytest.mark.embedded
@pytest.mark.parametrize("graph_id", ["sumer", "agemem", "langmem"])
def test_sdk_runs_tool_graphs_on_langgraph_dev(server_url, graph_id) -> None:
    """SUMER, AgeMem and LangMem embed, search and call the model without blocking the server's loop."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server_url, timeout=600)
    result = client.runs.wait(None, graph_id, input={"question": QUESTION, "document": DOCUMENT}, raise_error=False)
    assert "__error__" not in result, result.get("__error__")
    assert {"answer", "response", "usage"} <= set(result)
    assert isinstance(result["response"], str)
    assert result["usage"]["llm_calls"] >= 1 and result["usage"]["input_tokens"] > 0


@pytest.mark.server
@pytest.mark.embedded
def test_sdk_bad_input_is_a_readable_run_error(server_url) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server_url, timeout=120)
    result = client.runs.wait(None, "memagent", input={"question": QUESTION, "document": "  "}, raise_error=False)
    assert result["__error__"]["error"] == "ValueError"
    assert "input 'document' must be a non-empty string" in result["__error__"]["message"]


@pytest.mark.server
@pytest.mark.embedded
def test_readme_sdk_block_runs_against_langgraph_dev(server_url) -> None:
    """The README's SDK example, as written, against the real server (only its port differs)."""
    from readme import readme_blocks

    (block,) = [block for block in readme_blocks("python") if "langgraph_sdk" in block.code]
    assert "http://127.0.0.1:2024" in block.code
    namespace = {"text": DOCUMENT}
    exec(compile(block.code.replace("http://127.0.0.1:2024", server_url), f"README.md:{block.line}", "exec"), namespace)  # noqa: S102
    assert namespace["out"]["chunks_read"] == 2 and "answer" in namespace["out"]


@pytest.mark.server
@pytest.mark.embedded
def test_served_memories_survive_a_restart_in_postgres(embedded_model_dir, tmp_path) -> None:
    """With ``MEMAGENT_STORE_URL`` LangMem's memories and SUMER's bank live in PostgreSQL: a new
    server, in a fresh working directory (no ``.langgraph_api`` files), finds them."""
    from langgraph.store.postgres import PostgresStore
    from langgraph_sdk import get_sync_client

    question = {"question": QUESTION, "document": DOCUMENT}
    with contextlib.ExitStack() as stack:
        try:
            store_url = stack.enter_context(postgres_server())
        except ServerUnavailable as exc:
            pytest.skip(str(exc))
        env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "MEMAGENT_MODEL": "smollm2-135m", "MEMAGENT_TEMPERATURE": "0", **SERVER_BUDGET,
               "MEMAGENT_STORE_URL": store_url}
        runs = []
        for attempt in ("first", "restarted"):
            workdir = tmp_path / attempt
            workdir.mkdir()
            try:
                with langgraph_dev_server(workdir, env) as url:
                    client = get_sync_client(url=url, timeout=600)
                    runs.append({graph: client.runs.wait(None, graph, input=question, raise_error=False) for graph in ("langmem", "sumer")})
            except ServerUnavailable as exc:
                pytest.skip(str(exc))
        for run in runs:
            assert all("__error__" not in result for result in run.values()), run
        first, restarted = runs
        assert first["langmem"]["sessions_extracted"] == 1 and first["langmem"]["memories"] >= 1
        # After the restart LangMem finds the session extracted and its memories: no extraction call.
        assert restarted["langmem"]["sessions_extracted"] == 0 and restarted["langmem"]["extraction_calls"] == 0
        assert restarted["langmem"]["memories"] == first["langmem"]["memories"]
        with PostgresStore.from_conn_string(store_url) as store:  # SUMER's bank: the document's pieces, stored once
            namespaces = store.list_namespaces()
            assert any(namespace[0] == "langmem" for namespace in namespaces)
            bank = [namespace for namespace in namespaces if namespace[0] != "langmem" and namespace[0] != "langmem_sessions"]
            assert bank and all(len(store.search(namespace, limit=1000)) > 0 for namespace in bank)
