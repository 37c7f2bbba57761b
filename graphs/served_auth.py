"""Authentication and per-user authorization for the served graphs (``langgraph.json``'s ``auth``).

LangGraph's own mechanism (``langgraph_sdk.Auth``): the server calls :func:`authenticate` on
every request and the handlers below on every thread, run, cron, assistant and store access.

**Tokens.** ``MEMAGENT_AUTH_TOKENS_FILE`` names a file of ``<user_id> <token>`` lines (``#``
starts a comment); a client sends ``Authorization: Bearer <token>``. Enough for one team; the
file is read when the server starts. Make a token with
``python -c "import secrets; print(secrets.token_urlsafe(32))"``.

**What a user sees.** Threads, runs and crons carry their creator in ``metadata["owner"]`` and
are visible only to that user; assistants likewise, besides the server's own (one per graph).
Store items must sit under a namespace that starts with the user id (the graphs keep every
memory so: :mod:`langgraph_memagent.agents.users`). Inside a run the graphs use the
authenticated identity, never a ``user_id`` the client sends.

**Without a token file the server is open**: every client is the unauthenticated user
``anonymous`` and sees every thread and memory, and a ``context`` ``user_id`` is taken at its
word. The server logs a warning saying so when it starts.

**A real identity provider.** Replace :func:`authenticate` with one that validates your
provider's token (a JWT's signature, issuer and audience) and returns ``{"identity": <its
subject>}``; the authorization handlers stay as they are.

Example (``langgraph.json``):

    "auth": {"path": "langgraph_memagent.graphs.served_auth:auth", "disable_studio_auth": true}
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

from ..agents.users import ANONYMOUS, check_user_label

logger = logging.getLogger(__name__)

TOKENS_FILE_VARIABLE = "MEMAGENT_AUTH_TOKENS_FILE"
MIN_TOKEN_CHARACTERS = 16  # a shorter token is guessable; secrets.token_urlsafe(32) gives 43
OWNER = "owner"  # the metadata key holding a resource's user


def read_tokens(path: str | Path) -> dict[str, str]:
    """The token file's ``{token: user_id}``; a bad file is one clear error naming its line.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as file:
    ...     _ = file.write("# team tokens\\nalice 4f8d1c0e9b7a6d5c3e2f\\n")
    >>> read_tokens(file.name)
    {'4f8d1c0e9b7a6d5c3e2f': 'alice'}
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{TOKENS_FILE_VARIABLE}={str(path)!r}: cannot read the token file ({type(error).__name__}: {error})") from None
    tokens: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        where = f"{path}: line {number}"
        if len(fields) != 2:
            raise ValueError(f"{where}: expected '<user_id> <token>', got {len(fields)} fields")
        user, token = fields
        check_user_label(user, f"{where}: user_id")
        if user == ANONYMOUS:
            raise ValueError(f"{where}: user_id {ANONYMOUS!r} is reserved for clients of an open server")
        if len(token) < MIN_TOKEN_CHARACTERS:
            raise ValueError(f"{where}: the token of {user!r} has {len(token)} characters, expected at least {MIN_TOKEN_CHARACTERS}")
        if token in tokens:
            raise ValueError(f"{where}: the token of {user!r} is also {tokens[token]!r}'s; every token must be unique")
        tokens[token] = user
    if not tokens:
        raise ValueError(f"{path}: no '<user_id> <token>' line; a server with no users would refuse every request")
    return tokens


def configured_tokens(environ: Mapping[str, str] = os.environ) -> dict[str, str] | None:
    """The tokens of ``MEMAGENT_AUTH_TOKENS_FILE``, or ``None`` (the server is open) when unset.

    >>> configured_tokens({}) is None
    True
    """
    path = environ.get(TOKENS_FILE_VARIABLE, "").strip()
    return read_tokens(path) if path else None


def user_of(tokens: Mapping[str, str], authorization: str | None) -> str:
    """The user an ``Authorization: Bearer <token>`` header names, or a 401 saying what is wrong.

    Every token is compared in constant time, so the time taken says nothing of a near miss.

    >>> user_of({"4f8d1c0e9b7a6d5c3e2f": "alice"}, "Bearer 4f8d1c0e9b7a6d5c3e2f")
    'alice'
    >>> user_of({"4f8d1c0e9b7a6d5c3e2f": "alice"}, None)
    Traceback (most recent call last):
    ...
    langgraph_sdk.auth.exceptions.HTTPException: 401: this server needs 'Authorization: Bearer <token>' (see MEMAGENT_AUTH_TOKENS_FILE)
    """
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Auth.exceptions.HTTPException(401, detail=f"this server needs 'Authorization: Bearer <token>' (see {TOKENS_FILE_VARIABLE})")
    given = token.strip().encode()
    found = None
    for known, user in tokens.items():
        if hmac.compare_digest(given, known.encode()):
            found = user
    if found is None:
        raise Auth.exceptions.HTTPException(401, detail="unknown token")
    return found


TOKENS = configured_tokens()
if TOKENS is None:
    logger.warning(
        "\n%s\nTHE SERVER IS OPEN: %s is not set, so every client is the user %r and can read, continue and delete "
        "every thread, run and memory. Set it to a file of '<user_id> <token>' lines (docs/security.md).\n%s",
        "!" * 78, TOKENS_FILE_VARIABLE, ANONYMOUS, "!" * 78,
    )

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The token's user; with no token file every client is the unauthenticated ``anonymous``."""
    if TOKENS is None:
        return {"identity": ANONYMOUS, "is_authenticated": False}
    return {"identity": user_of(TOKENS, authorization), "is_authenticated": True}


def _stamp(value: Any, user: str) -> None:
    """Record the user as the owner of what is being created."""
    if isinstance(value, dict):
        metadata = value.get("metadata")
        if not isinstance(metadata, dict):
            metadata = value["metadata"] = {}
        metadata[OWNER] = user


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | bool:
    """Threads, runs and crons: created with their owner, then seen, changed and run by that owner only."""
    if not ctx.user.is_authenticated:
        return True  # the open server: nothing to separate
    if ctx.action in ("create", "create_run"):
        _stamp(value, ctx.user.identity)
    return {OWNER: ctx.user.identity}


@auth.on.assistants
async def own_or_server_assistants(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | bool:
    """Assistants: the server's (one per graph) are read by all; a user's own are seen and changed by that user."""
    if not ctx.user.is_authenticated:
        return True
    if ctx.action in ("read", "search"):
        return {"$or": [{OWNER: ctx.user.identity}, {"created_by": "system"}]}
    if ctx.action == "create":
        _stamp(value, ctx.user.identity)
    return {OWNER: ctx.user.identity}


@auth.on.store()
async def own_namespaces(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Store items: only under namespaces that start with the user id (an empty prefix is the user's own)."""
    if not ctx.user.is_authenticated:
        return True
    namespace = tuple(value.get("namespace") or ())
    if not namespace:
        value["namespace"] = (ctx.user.identity,)
    elif namespace[0] != ctx.user.identity:
        raise Auth.exceptions.HTTPException(403, detail=f"store namespaces of this user start with {ctx.user.identity!r}")
    return True
