"""The served graphs (graphs/served.py, langgraph.json): in-process checks, then a real
``langgraph dev`` server on loopback driven through the LangGraph SDK client, with two users
holding their own tokens (graphs/served_auth.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langgraph_memagent.agents.tokenizers import chunk_text
from langgraph_memagent.graphs.served import build_served_infmem, build_served_memagent, served_codec, served_model, served_tokenizer
from scripted_model import ScriptedChatModel
from servers import ServerUnavailable, langgraph_dev_server, postgres_server

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


def test_served_infmem_fits_the_embedded_window_and_reads_its_budgets_from_env(smollm2_codec) -> None:
    from langgraph_memagent.agents.loading import load_chat_model

    # The default served budgets (MemAgent's paper budgets, InfMem's served ones) fit the embedded model's 8K window.
    graph = build_served_infmem(load_chat_model("smollm2-135m"), smollm2_codec, {})
    assert (graph.memagent_config.chunk_tokens, graph.memagent_config.prethink_tokens, graph.memagent_config.max_top_k) == (5000, 64, 2)
    assert graph.store is None and graph.checkpointer is None
    env = {"MEMAGENT_CHUNK_TOKENS": "64", "MEMAGENT_PRETHINK_TOKENS": "48", "MEMAGENT_INFMEM_UNIT_TOKENS": "32", "MEMAGENT_INFMEM_TOP_K": "3"}
    config = build_served_infmem(ScriptedChatModel(responder=str), smollm2_codec, env).memagent_config
    assert (config.chunk_tokens, config.prethink_tokens, config.unit_tokens, config.max_top_k) == (64, 48, 32, 3)
    with pytest.raises(ValueError, match="MEMAGENT_INFMEM_TOP_K must be an integer, got 'all'"):
        build_served_infmem(ScriptedChatModel(responder=str), smollm2_codec, {"MEMAGENT_INFMEM_TOP_K": "all"})


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


# Two users of one team, as a token file names them (graphs/served_auth.py).
TOKENS = {"alice": "alice-token-5b8f0c6e2d9a41f3", "bob": "bob-token-93c1e7a05f2d4b86"}


def client_of(url: str, user: str | None = None, timeout: float = 600, **headers: str) -> Any:
    """An SDK client sending ``user``'s token (none: an anonymous client)."""
    from langgraph_sdk import get_sync_client

    if user is not None:
        headers["Authorization"] = f"Bearer {TOKENS[user]}"
    return get_sync_client(url=url, timeout=timeout, headers=headers or None)


def _server_env(model: str, **extra: str) -> dict[str, str]:
    """The environment of a test server serving ``model`` greedily with the small budget, offline."""
    return {
        **os.environ,
        # No network: no CLI analytics, no LangSmith tracing, no hub downloads.
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MEMAGENT_MODEL": model,
        "MEMAGENT_TEMPERATURE": "0",
        **SERVER_BUDGET,
        **extra,
    }


@contextlib.contextmanager
def _authenticated_server(model: str, workdir: Path) -> Iterator[str]:
    """A ``langgraph dev`` server with auth on (the two users of TOKENS) serving ``model`` (skips when not installed)."""
    tokens = workdir / "tokens.txt"
    tokens.write_text("# user token\n" + "".join(f"{user} {token}\n" for user, token in TOKENS.items()))
    try:
        with langgraph_dev_server(workdir, _server_env(model, MEMAGENT_AUTH_TOKENS_FILE=str(tokens))) as url:
            yield url
    except ServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def server_url(embedded_model_dir, tmp_path_factory) -> Iterator[str]:
    """A server of the embedded model: what a user serves, for the tests that read its answers."""
    with _authenticated_server("smollm2-135m", tmp_path_factory.mktemp("langgraph-dev")) as url:
        yield url


@pytest.fixture(scope="module")
def tiny_server_url(tiny_model_dir, tmp_path_factory) -> Iterator[str]:
    """A server of the tiny random Llama (``hf:`` its directory), for the tests of who sees what: they
    check where memories go, not what they say, and the tool graphs' many calls take seconds, not minutes."""
    with _authenticated_server(f"hf:{tiny_model_dir}", tmp_path_factory.mktemp("langgraph-dev-tiny")) as url:
        yield url


@pytest.mark.server
@pytest.mark.embedded
def test_sdk_runs_memagent_on_langgraph_dev(server_url, smollm2_codec) -> None:
    client = client_of(server_url, "alice")
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
    # ...and the chunks lived in the server's store, under the user, only for the run.
    assert client.store.search_items(["alice", "memagent", "documents"])["items"] == []


@pytest.mark.server
@pytest.mark.embedded
@pytest.mark.parametrize("graph_id", ["sumer"])
def test_sdk_runs_tool_graphs_on_langgraph_dev(server_url, graph_id) -> None:
    """SUMER embeds, searches and calls the model without blocking the server's loop (LangMem and AgeMem: below)."""
    client = client_of(server_url, "bob")
    result = client.runs.wait(None, graph_id, input={"question": QUESTION, "document": DOCUMENT}, raise_error=False)
    assert "__error__" not in result, result.get("__error__")
    assert {"answer", "response", "usage"} <= set(result)
    assert isinstance(result["response"], str)
    assert result["usage"]["llm_calls"] >= 1 and result["usage"]["input_tokens"] > 0


@pytest.mark.server
@pytest.mark.embedded
def test_sdk_runs_infmem_on_langgraph_dev_with_its_pieces_in_the_users_store(server_url) -> None:
    client = client_of(server_url, "alice")
    result = client.runs.wait(None, "infmem", input={"question": QUESTION, "document": DOCUMENT}, raise_error=False)
    assert "__error__" not in result, result.get("__error__")
    assert {"answer", "response", "retrieval_history", "early_stop_chunk", "chunks_read", "usage"} <= set(result)
    # A PreThink and a write per chunk read, the answer, and the PreThink that stopped early if one did.
    assert result["usage"]["llm_calls"] == 2 * result["chunks_read"] + 1 + (result["early_stop_chunk"] is not None)
    # Its chunks and passages lived in the server's store, under the user, only for the run.
    for namespace in (["alice", "memagent", "documents"], ["alice", "infmem", "units"]):
        assert client.store.search_items(namespace)["items"] == []


@pytest.mark.server
@pytest.mark.embedded
def test_sdk_bad_input_is_a_readable_run_error(server_url) -> None:
    client = client_of(server_url, "alice", timeout=120)
    result = client.runs.wait(None, "memagent", input={"question": QUESTION, "document": "  "}, raise_error=False)
    assert result["__error__"]["error"] == "ValueError"
    assert "input 'document' must be a non-empty string" in result["__error__"]["message"]


@pytest.mark.server
@pytest.mark.embedded
def test_readme_sdk_block_runs_against_langgraph_dev(server_url, monkeypatch) -> None:
    """The serving page's SDK example, as written, against the real server (only its port differs)."""
    from readme import documentation_blocks

    (block,) = [block for block in documentation_blocks("python") if "langgraph_sdk" in block.code]
    assert "http://127.0.0.1:2024" in block.code
    monkeypatch.setenv("MEMAGENT_TOKEN", TOKENS["alice"])
    namespace = {"text": DOCUMENT}
    exec(compile(block.code.replace("http://127.0.0.1:2024", server_url), block.where, "exec"), namespace)  # noqa: S102
    assert namespace["out"]["chunks_read"] == 2 and "answer" in namespace["out"]


# --------------------------------------------------------------------------- #
# Two users with their own tokens
# --------------------------------------------------------------------------- #

ALICE_DOCUMENT = "Diary of Alice. Alice's bank PIN is 4242. Alice's locker code is 9917. " + "The sky is blue. " * 8
BOB_DOCUMENT = "Notes of Bob. Bob waters the plants on Mondays. " + "The grass is green. " * 8
PIN_QUESTION = "What is Alice's bank PIN?"


def _status(call: Any) -> int:
    """The HTTP status a refused SDK call got."""
    import httpx

    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response.status_code


@pytest.mark.server
@pytest.mark.embedded
def test_anonymous_studio_and_unknown_clients_are_refused(server_url) -> None:
    clients = {
        "no token": client_of(server_url, timeout=60),
        # langgraph dev lets 'x-auth-scheme: langsmith' requests in as the Studio user unless
        # langgraph.json disables it.
        "studio header": client_of(server_url, timeout=60, **{"x-auth-scheme": "langsmith"}),
        "unknown token": client_of(server_url, timeout=60, Authorization="Bearer alice-token-5b8f0c6e2d9a41f4"),
    }
    for name, client in clients.items():
        assert _status(client.threads.search) == 401, name
        assert _status(lambda: client.runs.wait(None, "memagent", input={"question": QUESTION, "document": DOCUMENT})) == 401, name
        assert _status(lambda: client.store.search_items(["alice"])) == 401, name


@pytest.mark.server
@pytest.mark.embedded
def test_users_see_only_their_own_threads_runs_assistants_and_chunks(server_url) -> None:
    alice, bob = client_of(server_url, "alice"), client_of(server_url, "bob")
    thread = alice.threads.create()
    thread_id = thread["thread_id"]
    during_run = {}
    for part in alice.runs.stream(thread_id, "memagent", input={"question": PIN_QUESTION, "document": ALICE_DOCUMENT},
                                  stream_mode="updates"):
        if part.event == "updates" and "update_memory" in (part.data or {}) and not during_run:
            # MemAgent's chunks are in the server's store now, under Alice.
            during_run["alice"] = alice.store.search_items(["alice", "memagent", "documents"])["items"]
            during_run["bob_reads_alice"] = _status(lambda: bob.store.search_items(["alice", "memagent", "documents"]))
            during_run["bob_own"] = bob.store.search_items([])["items"]
    assert any("4242" in item["value"]["text"] for item in during_run["alice"])
    assert during_run["bob_reads_alice"] == 403
    assert "4242" not in json.dumps(during_run["bob_own"])
    assert thread_id in {t["thread_id"] for t in alice.threads.search(limit=100)}
    assert thread_id not in {t["thread_id"] for t in bob.threads.search(limit=100)}
    for read in (bob.threads.get, bob.threads.get_state, bob.threads.get_history, bob.runs.list):
        assert _status(lambda: read(thread_id)) in (403, 404), read
    # Bob can neither continue Alice's thread nor delete it.
    assert _status(lambda: bob.runs.wait(thread_id, "memagent", input={"question": PIN_QUESTION, "document": BOB_DOCUMENT})) in (403, 404)
    assert _status(lambda: bob.threads.delete(thread_id)) in (403, 404)
    assert alice.threads.get_state(thread_id)["values"]["chunks_read"] >= 1
    # The server's assistants are everybody's; a user's own are theirs.
    own = alice.assistants.create("memagent", name="alice-memagent")
    assert {a["graph_id"] for a in bob.assistants.search(limit=100)} == set(json.loads(CONFIG.read_text())["graphs"])
    assert own["assistant_id"] not in {a["assistant_id"] for a in bob.assistants.search(limit=100)}
    assert _status(lambda: bob.assistants.delete(own["assistant_id"])) in (403, 404)
    assert alice.assistants.get(own["assistant_id"])["name"] == "alice-memagent"


@pytest.mark.server
def test_memory_graphs_keep_each_users_memories_apart(tiny_server_url) -> None:
    """The same document (so the same conversation) from another user gets memories of that user's own.

    SUMER and LangMem's ``conversation_id`` case keep users apart by the same owner label
    (agents/users.py) and are tested in process, scripted, in tests/test_users.py: here each
    served tool graph runs once or twice on the tiny random model (on the embedded one they took
    six minutes of the suite)."""
    alice, bob = client_of(tiny_server_url, "alice"), client_of(tiny_server_url, "bob")

    def run(client: Any, graph: str, document: str, **options: Any) -> dict:
        inputs = {"question": PIN_QUESTION, "document": document, **options.pop("input", {})}
        return client.runs.wait(None, graph, input=inputs, raise_error=False, **options)

    # LangMem (its runs here also stand for the tool-graph test above): Bob sending Alice's very
    # document (the same content key, so the same conversation id) extracts memories of his own
    # (had he read her namespace, its sessions would be extracted already and no call made).
    first = run(alice, "langmem", ALICE_DOCUMENT)
    assert "__error__" not in first, first
    by_content = run(bob, "langmem", ALICE_DOCUMENT)
    assert "__error__" not in by_content and by_content["conversation_id"] == first["conversation_id"], by_content
    assert first["sessions_extracted"] >= 1 and by_content["sessions_extracted"] == first["sessions_extracted"], (first, by_content)
    assert by_content["extraction_calls"] >= 1, by_content
    # AgeMem (its run here also stands for the tool-graph test above): Alice's memory is hers, and
    # Bob naming her is refused (tests/test_users.py shows his own memory holds none of hers).
    alices = run(alice, "agemem", ALICE_DOCUMENT, context={"user_id": "alice"})
    assert "__error__" not in alices, alices
    assert isinstance(alices["response"], str) and alices["usage"]["llm_calls"] >= 1
    refused = run(bob, "agemem", BOB_DOCUMENT, context={"user_id": "alice"})
    assert refused["__error__"]["error"] == "UserMismatchError"
    assert "not the signed-in user" in refused["__error__"]["message"]


@pytest.mark.server
def test_served_memories_survive_a_restart_in_postgres(tiny_model_dir, tmp_path) -> None:
    """With ``MEMAGENT_STORE_URL`` LangMem's memories and SUMER's bank live in PostgreSQL: a new
    server, in a fresh working directory (no ``.langgraph_api`` files), finds them. Without a token
    file the server is open, and says so loudly when it starts."""
    from langgraph.store.postgres import PostgresStore

    question = {"question": QUESTION, "document": DOCUMENT}
    with contextlib.ExitStack() as stack:
        try:
            store_url = stack.enter_context(postgres_server())
        except ServerUnavailable as exc:
            pytest.skip(str(exc))
        env = _server_env(f"hf:{tiny_model_dir}", MEMAGENT_STORE_URL=store_url)  # the tiny model: what is stored, not what it says
        runs = []
        for attempt in ("first", "restarted"):
            workdir = tmp_path / attempt
            workdir.mkdir()
            try:
                with langgraph_dev_server(workdir, env) as url:
                    client = client_of(url)  # no token: the open server lets anybody in
                    runs.append({graph: client.runs.wait(None, graph, input=question, raise_error=False) for graph in ("langmem", "sumer")})
            except ServerUnavailable as exc:
                pytest.skip(str(exc))
            assert "THE SERVER IS OPEN: MEMAGENT_AUTH_TOKENS_FILE is not set" in (workdir / "langgraph-dev.log").read_text()
        for run in runs:
            assert all("__error__" not in result for result in run.values()), run
        first, restarted = runs
        assert first["langmem"]["sessions_extracted"] == 1 and first["langmem"]["memories"] >= 1
        # After the restart LangMem finds the session extracted and its memories: no extraction call.
        assert restarted["langmem"]["sessions_extracted"] == 0 and restarted["langmem"]["extraction_calls"] == 0
        assert restarted["langmem"]["memories"] == first["langmem"]["memories"]
        with PostgresStore.from_conn_string(store_url) as store:  # SUMER's bank: the document's pieces, stored once
            namespaces = store.list_namespaces()
            # Every memory sits under its user, here the open server's one user.
            assert {namespace[0] for namespace in namespaces} == {"anonymous"}
            assert any(namespace[1] == "langmem" for namespace in namespaces)
            bank = [namespace for namespace in namespaces if namespace[1] not in ("langmem", "langmem_sessions")]
            assert bank and all(len(store.search(namespace, limit=1000)) > 0 for namespace in bank)
