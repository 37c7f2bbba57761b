"""Integration tests that start real servers on loopback (see ``servers.py``)."""

from __future__ import annotations

import contextlib
import pytest

from servers import ServerUnavailable, postgres_server


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
