"""Who is asking, as every screen and message says it (#40)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.protocol.asker import asker_label, session_label


@pytest.mark.parametrize(
    ("session_key", "agent_id", "shown"),
    [
        ("claude-code:~/code/shop-api", "claude-code/3f2a9c1e", "Claude Code · shop-api"),
        ("codex:/home/ann/work/billing/", "codex/0a1b2c3d", "Codex · billing"),
        ("cursor:C:\\Users\\ann\\site", "cursor/99", "Cursor · site"),
        ("main", "codex/1a2b3c4d", "Codex · main"),  # /mcp without a header
        ("main", None, "main"),  # a Python agent's own key
        ("shop", "build-bot", "shop"),  # an agentId that names no program
        ("claude-code:…/very/long/path/to/repo", "claude-code/1", "Claude Code · repo"),
        ("https://example.com/x", None, "https://example.com/x"),  # not program:path
    ],
)
def test_who_is_asking(session_key, agent_id, shown):
    assert asker_label(session_key, agent_id) == shown


@given(st.text(min_size=1, max_size=200), st.one_of(st.none(), st.text(max_size=200)))
def test_any_key_gives_a_label_that_is_never_empty(session_key, agent_id):
    label = asker_label(session_key, agent_id)
    assert label and session_label(session_key)


@pytest.mark.parametrize(
    ("folder", "shown"),
    [
        ("/home/ann/code/shop-api", "Claude Code · shop-api"),
        ("/home/ann", "Claude Code · ~"),
        ("/srv/repos/billing", "Claude Code · billing"),
        ("/srv/" + "deep/" * 60 + "repo", "Claude Code · repo"),  # cut to the limit, end kept
    ],
)
def test_the_key_the_agent_side_makes_is_the_one_the_screens_read(folder, shown):
    from app.protocol import limits
    from app.protocol.asker import client_slug, project_session_key

    key = project_session_key(client_slug("Claude Code"), folder, "/home/ann")
    assert len(key) <= limits.MAX_SESSION_KEY_CHARS
    assert session_label(key) == shown
