"""The agent tools read their environment in one place (#41), with one precedence for the
gateway and the token: what the caller gives, then the environment, then what a gateway on
this machine wrote, then the default address."""

from __future__ import annotations

import pytest

from app.agent.client import AgentSettings, AskUserError, settings
from app.agent.environment import DEFAULT_GATEWAY_URL, AgentEnvironment
from app.gateway.config import load_tokens, write_local_info


def test_the_variables_are_read_by_meaning_and_an_empty_one_is_unset():
    env = AgentEnvironment.read(
        {
            "ASK_USER_GATEWAY_URL": "http://gw:1",
            "ASK_USER_AGENT_TOKEN": "",
            "ASK_USER_SESSION_KEY": "shop",
            "CODEX_HOME": "/c",
            "UNRELATED": "x",
        }
    )
    assert (env.gateway_url, env.token, env.session_key, env.codex_home) == (
        "http://gw:1",
        None,
        "shop",
        "/c",
    )


def test_given_then_environment_then_the_local_gateway_then_the_default(tmp_path):
    folder = tmp_path / "gateway"
    local_token = load_tokens(folder).agent[0]
    write_local_info(folder, "http://127.0.0.1:9001")
    local = AgentEnvironment(gateway_data=str(folder))
    assert settings(environment=local) == AgentSettings("http://127.0.0.1:9001", local_token)
    named = AgentEnvironment(
        gateway_url="http://env:2/", token="env-token", gateway_data=str(folder)
    )
    found = settings(environment=named)
    assert (found.gateway_url, found.token) == ("http://env:2", "env-token")
    given = settings("http://given:3", "given-token", named)
    assert (given.gateway_url, given.token) == ("http://given:3", "given-token")
    nothing_local = AgentEnvironment(gateway_data=str(tmp_path / "none"), token="t")
    assert settings(environment=nothing_local).gateway_url == DEFAULT_GATEWAY_URL


def test_no_token_anywhere_says_where_one_would_come_from(tmp_path):
    with pytest.raises(AskUserError) as raised:
        settings(environment=AgentEnvironment(gateway_data=str(tmp_path / "none")))
    assert raised.value.code == "no_token"
    assert "ASK_USER_AGENT_TOKEN" in str(raised.value)
    assert str(tmp_path / "none" / "tokens.json") in str(raised.value)
