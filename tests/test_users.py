"""Per-user memory as a library: every memory graph takes the user the same way
(``context={"user_id": ...}``), keeps each user's memories apart, and under a server's
authenticated user refuses a ``user_id`` naming someone else (agents/users.py).

The scripted oracle of tests/test_nesting.py plays the model: these are plumbing tests.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from oracle import DOCUMENT, QUESTION, graph_for

# What a LangGraph server puts in a run's config for a user it authenticated.
SIGNED_IN_ALICE = {"configurable": {"langgraph_auth_user": SimpleNamespace(identity="alice", is_authenticated=True,
                                                                           display_name="alice", permissions=())}}
BOB_DOCUMENT = DOCUMENT.replace("4242", "1717")


@pytest.mark.parametrize("name", ["sumer", "langmem", "agemem"])
def test_two_users_of_one_conversation_id_keep_their_own_memories(name, smollm2_codec):
    """SUMER refused Bob's document (Alice's text in the error); LangMem answered Bob from Alice's memories."""
    graph = graph_for(name, smollm2_codec)
    ids = {} if name == "agemem" else {"conversation_id": "shared"}  # AgeMem's memory is the user's, no conversation
    alice = graph.invoke({"question": QUESTION, "document": DOCUMENT, **ids}, context={"user_id": "alice"})
    bob = graph.invoke({"question": QUESTION, "document": BOB_DOCUMENT, **ids}, context={"user_id": "bob"})
    assert (alice["answer"], bob["answer"]) == ("4242", "1717")
    # The same user asking again reads the memories already made.
    again = graph.invoke({"question": QUESTION, "document": DOCUMENT, **ids}, context={"user_id": "alice"})
    assert again["answer"] == "4242"
    if name == "langmem":  # Bob extracted the sessions of his own document; Alice's second run, none
        assert alice["sessions_extracted"] == bob["sessions_extracted"] > 0 == again["sessions_extracted"]


@pytest.mark.parametrize("name", ["memagent", "sumer", "langmem", "agemem"])
def test_a_signed_in_user_cannot_name_another(name, smollm2_codec):
    graph = graph_for(name, smollm2_codec)
    with pytest.raises(PermissionError, match="context user_id 'bob' is not the signed-in user"):
        graph.invoke({"question": QUESTION, "document": DOCUMENT}, SIGNED_IN_ALICE, context={"user_id": "bob"})
    # Naming oneself, or nobody, is the signed-in user.
    assert graph.invoke({"question": QUESTION, "document": DOCUMENT}, SIGNED_IN_ALICE, context={"user_id": "alice"})["answer"] == "4242"


def test_signed_in_memories_sit_under_the_identity_not_the_content(smollm2_codec):
    """LangMem's memories of a signed-in run are Alice's; an anonymous run of the same document extracts its own."""
    graph = graph_for("langmem", smollm2_codec)
    signed_in = graph.invoke({"question": QUESTION, "document": DOCUMENT}, SIGNED_IN_ALICE)
    anonymous = graph.invoke({"question": QUESTION, "document": DOCUMENT})
    assert signed_in["conversation_id"] == anonymous["conversation_id"]
    assert signed_in["sessions_extracted"] == anonymous["sessions_extracted"] > 0
