"""The gateway's settings (#41): one precedence — a flag, then the environment, then files,
then the default — read once; a wrong value names its flag and its variable and starts
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from app.gateway.settings import GatewaySettings, env_name
from tests.support import TOKENS, GatewayProcess, free_port, wait_until


@pytest.fixture
def clean_env(monkeypatch):
    for name in [n for n in os.environ if n.startswith("ASK_USER_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_a_flag_wins_over_the_environment_which_wins_over_the_default(clean_env):
    assert GatewaySettings().database_pool_size == 10
    clean_env.setenv("ASK_USER_DATABASE_POOL_SIZE", "4")
    clean_env.setenv("ASK_USER_NOTIFY", "json://a  ntfy://b")
    assert GatewaySettings().database_pool_size == 4
    assert GatewaySettings(database_pool_size="7").database_pool_size == 7
    assert GatewaySettings().notify_urls == ("json://a", "ntfy://b")
    clean_env.setenv("ASK_USER_DATABASE_POOL_SIZE", "")  # empty counts as unset
    assert GatewaySettings().database_pool_size == 10


def test_the_data_directory_has_the_variable_the_agent_tools_read(clean_env, tmp_path):
    assert env_name("data_dir") == "ASK_USER_GATEWAY_DATA"
    clean_env.setenv("ASK_USER_GATEWAY_DATA", str(tmp_path / "env"))
    assert GatewaySettings().data_dir == tmp_path / "env"
    assert GatewaySettings(data_dir=tmp_path / "flag").data_dir == tmp_path / "flag"


def test_tokens_are_split_by_role():
    settings = GatewaySettings(agent_tokens=" a1 ,a2", device_tokens="d1", admin_tokens="")
    assert settings.named_tokens() == {"agent": ("a1", "a2"), "device": ("d1",), "admin": ()}


def _run_gateway(tmp_path, *flags: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    return subprocess.run(
        [sys.executable, "-m", "app", "gateway", "--data-dir", str(tmp_path / "data"), *flags],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("flags", "env", "said"),
    [
        (
            (),
            {"ASK_USER_DATABASE_POOL_SIZE": "0"},
            "--database-pool-size / ASK_USER_DATABASE_POOL_SIZE: Input should be greater than 0",
        ),
        (("--port", "http"), {}, "--port / ASK_USER_PORT: Input should be a valid integer"),
        (
            ("--log-level", "loud"),
            {},
            "--log-level / ASK_USER_LOG_LEVEL: Input should be 'debug', 'info', 'warning' or",
        ),
    ],
)
def test_a_wrong_setting_names_its_flag_and_variable_and_starts_nothing(tmp_path, flags, env, said):
    done = _run_gateway(tmp_path, *flags, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr
    assert not (tmp_path / "data").exists()  # no tokens made, no store opened


def test_the_real_gateway_listens_where_the_environment_says_unless_a_flag_says_otherwise(
    tmp_path,
):
    env_port = free_port()
    gateway = GatewayProcess(tmp_path / "data", extra_env={"ASK_USER_PORT": str(env_port)})
    gateway.start()  # its --port flag wins
    try:
        assert httpx.get(f"{gateway.url}/v1/health").status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{env_port}/v1/health", timeout=2)
        # The tokens came from the environment, so no tokens.json was written.
        assert not (tmp_path / "data" / "tokens.json").exists()
        made = httpx.post(
            f"{gateway.url}/v1/prompts",
            headers={"Authorization": f"Bearer {TOKENS.agent[0]}"},
            json={
                "sessionKey": "s",
                "questions": [
                    {
                        "id": "q",
                        "header": "Q",
                        "question": "Which?",
                        "options": [{"label": "A"}, {"label": "B"}],
                    }
                ],
            },
        )
        assert made.status_code in (200, 201), made.text
    finally:
        gateway.terminate()
    # Without the flag, the variable decides; tokens.json is made when no token is given.
    base = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "gateway", "--data-dir", str(tmp_path / "data2")],
        env={**base, "ASK_USER_PORT": str(env_port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _healthy(env_port, process), timeout=20)
        tokens = json.loads((tmp_path / "data2" / "tokens.json").read_text())
        assert set(tokens) == {"agent", "device", "admin"}
    finally:
        process.terminate()
        process.wait(10)


def _healthy(port: int, process: subprocess.Popen) -> bool:
    assert process.poll() is None, "the gateway exited"
    try:
        return httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_a_port_in_use_is_said_before_any_line_that_says_it_serves(tmp_path):
    """#53 (8): `gateway --port <busy>` printed "Ask User gateway on …", its tokens and its
    pairing hint, then failed; and it wrote its address over the running gateway's."""
    running = GatewayProcess(tmp_path / "running").start()
    try:
        local = tmp_path / "data" / "gateway.json"
        done = _run_gateway(tmp_path, "--port", str(running.port), env={})
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"error: cannot listen on 127.0.0.1:{running.port}" in done.stderr
        assert done.stdout == ""  # nothing said about serving
        assert not local.exists()  # nor written for the commands of this machine to find
        assert httpx.get(f"{running.url}/v1/health").status_code == 200
    finally:
        running.terminate()
