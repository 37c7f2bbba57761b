"""Whose memory a run reads and writes.

Every graph that keeps memory (MemAgent's chunks during a run, SUMER's bank, AgeMem's items,
LangMem's memories) keeps it under a store namespace that starts with the run's user:

- **served with authentication** (``langgraph.json``'s ``auth``, see
  :mod:`langgraph_memagent.graphs.served_auth`), the user is the identity the server
  authenticated, never a value the client sends: a ``context`` ``user_id`` that names
  somebody else is refused;
- **as a library** (or served without tokens, where the server is open), the caller names
  the user the same way in every graph: ``graph.invoke(input, context={"user_id": "alice"})``;
- nobody named: :data:`ANONYMOUS`, one shared user.

Example:
    >>> from types import SimpleNamespace as Runtime
    >>> memory_user(Runtime(context={"user_id": "alice"}, server_info=None))
    'alice'
    >>> memory_user(Runtime(context=None, server_info=None)) is None
    True
    >>> signed_in = Runtime(context={"user_id": "bob"}, server_info=Runtime(user={"identity": "alice", "is_authenticated": True}))
    >>> try:
    ...     memory_user(signed_in)
    ... except PermissionError as refused:
    ...     print(refused)
    context user_id 'bob' is not the signed-in user: a served graph keeps memories under the authenticated user
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

ANONYMOUS = "anonymous"
"""The user of runs that name none (and of every client of a server without tokens)."""


class UserContext(TypedDict, total=False):
    """A memory graph's run context: whose memory the run uses (``context={"user_id": "alice"}``)."""

    user_id: str


def owner_label(runtime: Any) -> str:
    """The first label of the run's memory namespaces: :func:`memory_user`, else :data:`ANONYMOUS`."""
    return memory_user(runtime) or ANONYMOUS


class UserMismatchError(PermissionError, ValueError):
    """A run that names a user other than the signed-in one.

    Also a ``ValueError``: a LangGraph server sends the messages of such errors to the client and
    replaces the others' with "An internal error occurred".
    """


def field_of(value: Any, name: str) -> Any:
    """``value[name]`` or ``value.name``: LangGraph hands users and contexts either way."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def check_user_label(user_id: Any, what: str = "context user_id") -> str:
    """``user_id`` when it can be the first label of a LangGraph store namespace, else a clear error.

    >>> check_user_label("a.b")
    Traceback (most recent call last):
    ...
    ValueError: context user_id must be a non-empty string without '.' (a LangGraph namespace label), got 'a.b'
    """
    if not isinstance(user_id, str) or not user_id.strip() or "." in user_id or "\x00" in user_id:
        raise ValueError(f"{what} must be a non-empty string without '.' (a LangGraph namespace label), got {user_id!r}")
    return user_id


def signed_in_user(runtime: Any) -> str | None:
    """The identity a LangGraph server authenticated for this run, or ``None`` (library use, open server)."""
    user = field_of(field_of(runtime, "server_info"), "user")
    if user is None or not field_of(user, "is_authenticated"):
        return None
    return check_user_label(field_of(user, "identity"), "the authenticated identity")


def memory_user(runtime: Any) -> str | None:
    """The run's user: the server's authenticated identity, else the context's ``user_id``, else ``None``.

    A context ``user_id`` beside an authenticated identity must be that identity.
    """
    asked = field_of(field_of(runtime, "context"), "user_id")
    if asked is not None:
        check_user_label(asked)
    signed_in = signed_in_user(runtime)
    if signed_in is None:
        return asked
    if asked is not None and asked != signed_in:
        raise UserMismatchError(
            f"context user_id {asked!r} is not the signed-in user: a served graph keeps memories under the authenticated user"
        )
    return signed_in
