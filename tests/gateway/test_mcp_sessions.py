"""`/mcp` sessions belong to the agent token that opened them, and each token and person has
only a share of them (#39): over HTTP to a real gateway, as a hostile agent would do it."""

from __future__ import annotations

import httpx
import pytest

from app.protocol import limits
from tests.support import ADMIN_TOKEN, AGENT_TOKEN, OTHER_AGENT_TOKEN
from tests.support import MCP_INITIALIZE as INITIALIZE

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _open(gateway, token: str) -> httpx.Response:
    return gateway.client(token).post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)


def _session(gateway, token: str) -> str:
    opened = _open(gateway, token)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    sent = _in_session(gateway, token, session).post("/mcp", json=initialized)
    assert sent.status_code == 202, sent.text
    return session


def _in_session(gateway, token: str, session: str) -> httpx.Client:
    http = gateway.client(token)
    http.headers.update({**MCP_HEADERS, "Mcp-Session-Id": session})
    return http


def _tools(http: httpx.Client) -> httpx.Response:
    return http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})


def test_a_session_answers_only_the_token_that_opened_it(gateway):
    session = _session(gateway, AGENT_TOKEN)
    stranger = _in_session(gateway, OTHER_AGENT_TOKEN, session)
    assert _tools(stranger).status_code == 404
    assert stranger.delete("/mcp").status_code == 404
    owner = _in_session(gateway, AGENT_TOKEN, session)
    listed = _tools(owner)
    assert listed.status_code == 200 and "ask_user" in listed.text
    assert owner.delete("/mcp").status_code == 200
    assert _tools(owner).status_code == 404  # ended by its owner: gone


@pytest.fixture
def small_shares(monkeypatch):
    monkeypatch.setattr(limits, "MAX_MCP_SESSIONS_PER_TOKEN", 4)
    monkeypatch.setattr(limits, "MAX_MCP_SESSIONS_PER_PERSON", 6)


def test_one_token_uses_up_only_its_own_share(gateway, small_shares):
    for _ in range(4):
        _session(gateway, AGENT_TOKEN)
    refused = _open(gateway, AGENT_TOKEN)
    assert refused.status_code == 429, refused.text
    assert "this agent token has 4 MCP sessions open" in refused.json()["error"]["message"]
    assert _open(gateway, OTHER_AGENT_TOKEN).status_code == 200  # another token goes on
    # An ended session frees its place.
    last = _session(gateway, OTHER_AGENT_TOKEN)
    admin = gateway.client(ADMIN_TOKEN)
    bob = admin.post("/v1/people", json={"name": "Bob"}).json()["personId"]
    bobs = admin.post(f"/v1/people/{bob}/agent-tokens").json()["token"]
    assert _open(gateway, bobs).status_code == 200  # another person goes on too
    assert _in_session(gateway, OTHER_AGENT_TOKEN, last).delete("/mcp").status_code == 200
    assert _open(gateway, OTHER_AGENT_TOKEN).status_code == 200


def test_one_persons_tokens_together_use_up_only_their_share(gateway, small_shares):
    admin = gateway.client(ADMIN_TOKEN)
    bob = admin.post("/v1/people", json={"name": "Bob"}).json()["personId"]
    tokens = [admin.post(f"/v1/people/{bob}/agent-tokens").json()["token"] for _ in range(3)]
    for token in tokens[:2]:
        for _ in range(3):
            _session(gateway, token)
    refused = _open(gateway, tokens[2])
    assert refused.status_code == 429, refused.text
    assert "this person's agents have 6 MCP sessions open" in refused.json()["error"]["message"]
    assert _open(gateway, AGENT_TOKEN).status_code == 200  # the default person is untouched


def test_the_sdks_own_refusals_are_what_the_document_says(gateway):
    """#39: a wrong Content-Type got a 400 with no Content-Type at all, and the document
    described /mcp's errors as the gateway's own shape, not JSON-RPC's."""
    document = gateway.client(None).get("/openapi.json").json()
    described = document["paths"]["/mcp"]["post"]["responses"]
    wrong = gateway.client(AGENT_TOKEN).post(
        "/mcp", content=b"hello", headers={**MCP_HEADERS, "Content-Type": "text/plain"}
    )
    assert wrong.status_code == 400
    assert wrong.headers["content-type"].startswith("text/plain")
    assert "text/plain" in described["400"]["content"]
    no_session = gateway.client(AGENT_TOKEN).get("/mcp", headers=MCP_HEADERS)
    assert no_session.status_code == 400 and no_session.json()["error"]["code"] == -32600
    schemas = document["components"]["schemas"]
    assert {"JsonRpcMessage", "JsonRpcError"} <= set(schemas)
    assert "429" in described and "202" in described
