"""Integration tests that start real servers on loopback (see ``servers.py``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from servers import ServerUnavailable, openai_compatible_server, postgres_server


def _enter_or_skip(stack: contextlib.ExitStack, server: contextlib.AbstractContextManager[str]) -> str:
    """Start ``server`` inside ``stack``; skip the test if it cannot run on this machine."""
    try:
        return stack.enter_context(server)
    except ServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.server
def test_postgres_server_serves_langgraph_checkpointer() -> None:
    psycopg = pytest.importorskip("psycopg")
    from langgraph.checkpoint.postgres import PostgresSaver

    with contextlib.ExitStack() as stack:
        url = _enter_or_skip(stack, postgres_server())
        with psycopg.connect(url) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
        with psycopg.connect(url) as conn:
            tables = {row[0] for row in conn.execute("select tablename from pg_tables")}
        assert {"checkpoints", "checkpoint_writes", "checkpoint_blobs"} <= tables


@pytest.mark.server
def test_openai_compatible_server_answers_chat_openai(embedded_model_dir: str | Path) -> None:
    from langchain_openai import ChatOpenAI

    with contextlib.ExitStack() as stack:
        base_url = _enter_or_skip(stack, openai_compatible_server(embedded_model_dir))
        # The server is pinned to the directory and only accepts that exact name.
        llm = ChatOpenAI(
            model=str(embedded_model_dir), base_url=base_url, api_key="EMPTY", max_tokens=8
        )
        reply = llm.invoke("Say hi")
        assert isinstance(reply.content, str) and reply.content.strip()
        assert reply.usage_metadata is not None
        assert reply.usage_metadata["output_tokens"] >= 1
