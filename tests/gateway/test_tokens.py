"""Tokens a gateway starts with: refused when short or unreadable, an admin token added once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from app.gateway import load_tokens
from app.gateway.config import ConfigError
from app.gateway.settings import GatewaySettings


def test_env_tokens_shorter_than_16_characters_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"ASK_USER_DEVICE_TOKENS: 1 token.*16 characters"):
        load_tokens(
            tmp_path,
            GatewaySettings(agent_tokens="x" * 16, device_tokens="short").named_tokens(),
        )
    with pytest.raises(ConfigError, match="ASK_USER_ADMIN_TOKENS"):
        load_tokens(tmp_path, GatewaySettings(admin_tokens="x" * 15).named_tokens())
    assert not (tmp_path / "tokens.json").exists()  # nothing made on the way out


def test_admin_tokens_come_from_the_environment(tmp_path):
    tokens = load_tokens(
        tmp_path, GatewaySettings(admin_tokens="admin-token-for-tests").named_tokens()
    )
    assert tokens.admin == ("admin-token-for-tests",) and tokens.agent == ()


def test_a_tokens_file_from_before_the_admin_role_gets_one(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"agent": ["agt_" + "a" * 20], "device": ["dev_" + "d" * 20]}))
    tokens = load_tokens(tmp_path)
    assert tokens.agent == ("agt_" + "a" * 20,) and len(tokens.admin) == 1
    assert tokens.admin[0].startswith("adm_") and len(tokens.admin[0]) >= 16
    assert json.loads(path.read_text())["admin"] == list(tokens.admin)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_tokens(tmp_path) == tokens  # made once


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{not json", "not readable JSON"),
        ('{"agent": "abc"}', "'agent' must be a list"),
        ('{"agent": [], "device": ["device-token-0123456789"]}', "'agent' list is empty"),
    ],
)
def test_a_broken_tokens_file_is_named_not_a_traceback(tmp_path, content, problem):
    (tmp_path / "tokens.json").write_text(content)
    with pytest.raises(ConfigError, match=problem):
        load_tokens(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    done = subprocess.run(
        [sys.executable, "-m", "app", "gateway", "--data-dir", str(tmp_path), "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"error: {tmp_path / 'tokens.json'}" in done.stderr and problem in done.stderr


def test_an_existing_open_data_folder_is_narrowed_to_its_owner(tmp_path):
    """Every question and answer is in the store: a 0755 data folder becomes 0700, the
    database 0600, also when the folder was there before the gateway."""
    from app.gateway.store.sqlite import PromptStore

    folder = tmp_path / "data"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    store = PromptStore(folder / "gateway.sqlite3")
    try:
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        for path in folder.glob("gateway.sqlite3*"):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    finally:
        store.close_now()


def test_a_stale_temporary_tokens_file_does_not_leak_its_mode(tmp_path):
    """A crash can leave tokens.json.tmp behind with any mode; the next write is 0600 from
    its first byte (#23, 14)."""
    from app.gateway.config import load_tokens

    folder = tmp_path / "data"
    folder.mkdir(mode=0o700)
    stale = folder / "tokens.json.tmp"
    stale.write_text("{}")
    os.chmod(stale, 0o644)
    tokens = load_tokens(folder)
    assert tokens.file is not None
    assert stat.S_IMODE(os.stat(tokens.file).st_mode) == 0o600
