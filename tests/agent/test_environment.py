"""The agent tools read their environment in one place (#41), with one precedence for the
gateway and the token: what the caller gives, then the environment, then what a gateway on
this machine wrote, then the default address."""

from __future__ import annotations

import argparse

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


@pytest.mark.parametrize(
    ("tokens", "info"),
    [
        ('{"agent": "agt_not_a_list"}', '{"localUrl": 8765}'),
        ("[1, 2]", "[]"),
        ("not json", "{"),
        ('{"agent": [null, 3]}', '{"localUrl": ""}'),
    ],
)
def test_a_local_gateways_files_wrongly_shaped_are_not_there(tmp_path, tokens, info):
    """#55: one reader of a local gateway's files for every process that is not the gateway
    (the agent tools, the admin commands, the app), one policy: what is unreadable or wrongly
    shaped is absent. Before, `{"agent": "agt_…"}` gave the agent tools the token "a"."""
    from app.gateway.admin import AdminError, _connect
    from app.protocol.local_gateway import read_local_gateway

    (tmp_path / "tokens.json").write_text(tokens)
    (tmp_path / "gateway.json").write_text(info)
    local = read_local_gateway(tmp_path)
    assert (local.local_url, local.token("agent"), local.token("admin")) == (None, None, None)
    assert AgentEnvironment.read({"ASK_USER_GATEWAY_DATA": str(tmp_path)}).local_gateway() == {}
    with pytest.raises(AskUserError) as refused:
        settings(environment=AgentEnvironment.read({"ASK_USER_GATEWAY_DATA": str(tmp_path)}))
    assert refused.value.code == "no_token"
    with pytest.raises(AdminError, match="no admin token"):
        _connect(argparse.Namespace(data_dir=str(tmp_path), gateway_url=None), env={})


def test_a_local_gateways_files_give_its_address_and_each_roles_token(tmp_path):
    from app.protocol.local_gateway import read_local_gateway

    tokens = load_tokens(tmp_path)
    write_local_info(tmp_path, "http://127.0.0.1:9911", "http://127.0.0.1:8550")
    local = read_local_gateway(tmp_path)
    assert local.local_url == "http://127.0.0.1:9911"
    assert local.web_app_url == "http://127.0.0.1:8550"
    assert (local.token("agent"), local.token("admin")) == (tokens.agent[0], tokens.admin[0])
