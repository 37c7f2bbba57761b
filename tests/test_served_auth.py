"""The token file and the bearer check of graphs/served_auth.py (the server-level behaviour is
tests/test_langgraph_server.py's, with a real ``langgraph dev``)."""

from __future__ import annotations

import pytest
from langgraph_sdk.auth.exceptions import HTTPException

from langgraph_memagent.graphs.served_auth import configured_tokens, read_tokens, user_of

GOOD = "alice 4f8d1c0e9b7a6d5c3e2f\nbob   9a8b7c6d5e4f3a2b1c0d  # Bob's laptop\n"


def test_a_token_file_names_each_users_token(tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_text("# team\n\n" + GOOD)
    tokens = configured_tokens({"MEMAGENT_AUTH_TOKENS_FILE": str(path)})
    assert tokens == {"4f8d1c0e9b7a6d5c3e2f": "alice", "9a8b7c6d5e4f3a2b1c0d": "bob"}
    assert user_of(tokens, "Bearer 9a8b7c6d5e4f3a2b1c0d") == "bob"
    assert user_of(tokens, "bearer   4f8d1c0e9b7a6d5c3e2f ") == "alice"


@pytest.mark.parametrize("content, message", [
    ("alice\n", "line 1: expected '<user_id> <token>', got 1 fields"),
    ("alice short\n", "line 1: the token of 'alice' has 5 characters, expected at least 16"),
    (GOOD + "carol 4f8d1c0e9b7a6d5c3e2f\n", "line 3: the token of 'carol' is also 'alice''s"),
    ("a.b 4f8d1c0e9b7a6d5c3e2f\n", "line 1: user_id must be a non-empty string without '.'"),
    ("anonymous 4f8d1c0e9b7a6d5c3e2f\n", "user_id 'anonymous' is reserved"),
    ("# nobody\n", "no '<user_id> <token>' line"),
])
def test_a_bad_token_file_stops_the_server_with_one_line(tmp_path, content, message):
    path = tmp_path / "tokens.txt"
    path.write_text(content)
    with pytest.raises(ValueError) as refused:
        read_tokens(path)
    assert message in str(refused.value) and str(path) in str(refused.value)
    with pytest.raises(ValueError, match="cannot read the token file"):
        read_tokens(tmp_path / "absent.txt")


@pytest.mark.parametrize("header, detail", [(None, "needs 'Authorization: Bearer <token>'"), ("Basic YWxpY2U=", "needs"),
                                             ("Bearer", "needs"), ("Bearer 4f8d1c0e9b7a6d5c3e2e", "unknown token")])
def test_a_missing_or_unknown_token_is_a_401(header, detail):
    with pytest.raises(HTTPException) as refused:
        user_of({"4f8d1c0e9b7a6d5c3e2f": "alice"}, header)
    assert refused.value.status_code == 401 and detail in refused.value.detail
