"""`ask-user setup claude-code`: what it writes into Claude Code's settings, run as a command
against a temporary home and project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.agent.setup import MCP_TOOL_TIMEOUT_MS, hook_timeout
from app.protocol import limits


def _setup(
    home: Path, *args: str, cwd: Path | None = None, client: str = "claude-code"
) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("ASK_USER_", "CLAUDE_", "CODEX_", "XDG_", "APPDATA", "GEMINI_", "COPILOT_")
        )
    }
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "app", "setup", client, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_user_scope_writes_the_hook_and_the_server_with_absolute_commands(tmp_path):
    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    other_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}
    settings_path.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [other_hook]}}))
    servers_path = tmp_path / ".claude.json"
    servers_path.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "n": 1}))
    servers_path.chmod(0o600)

    for _ in range(2):  # a second run replaces what the first wrote
        done = _setup(tmp_path, "--timeout", "600", "--gateway-url", "http://gw.lan:8765")
        assert done.returncode == 0, done.stderr

    settings = json.loads(settings_path.read_text())
    assert settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"][0] == other_hook
    [ours] = settings["hooks"]["PreToolUse"][1:]
    assert ours["matcher"] == "AskUserQuestion"
    [hook] = ours["hooks"]
    command = hook["command"].split()
    assert Path(command[0]).is_absolute() and command[-3:] == ["claude-hook", "--timeout", "600"]
    assert hook["timeout"] == 1260  # above the prompt's own 600 s, moved on by up to 600 s
    assert settings["env"]["MCP_TOOL_TIMEOUT"] == str(MCP_TOOL_TIMEOUT_MS)
    # The interactive UI keeps the call in the foreground past 120 s (#51)
    assert settings["env"]["CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS"] == "0"
    assert settings["env"]["ASK_USER_GATEWAY_URL"] == "http://gw.lan:8765"
    assert settings["permissions"]["allow"] == ["mcp__ask-user__ask_user"]  # once, after 2 runs

    servers = json.loads(servers_path.read_text())
    assert servers["n"] == 1 and servers["mcpServers"]["other"] == {"command": "x"}
    server = servers["mcpServers"]["ask-user"]
    assert Path(server["command"]).is_absolute() and server["args"][-1] == "mcp"
    assert server["env"] == {"ASK_USER_GATEWAY_URL": "http://gw.lan:8765"}
    assert servers_path.stat().st_mode & 0o777 == 0o600


def test_print_shows_the_files_and_writes_nothing(tmp_path):
    done = _setup(tmp_path, "--print")
    assert done.returncode == 0, done.stderr
    assert f"# {tmp_path / '.claude' / 'settings.json'}" in done.stdout
    assert '"AskUserQuestion"' in done.stdout and '"ask-user"' in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_project_scope_writes_into_the_project_and_never_a_token(tmp_path):
    home, project = tmp_path / "home", tmp_path / "shop"
    home.mkdir()
    project.mkdir()
    done = _setup(home, "--scope", "project", cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["ask-user"]
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "AskUserQuestion"
    assert list(home.iterdir()) == []

    refused = _setup(home, "--scope", "project", "--token", "agent-token-x", cwd=project)
    assert refused.returncode == 1 and "--token" in refused.stderr
    assert "agent-token-x" not in (project / ".mcp.json").read_text()


def test_a_broken_settings_file_is_named_and_left_alone(tmp_path):
    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    settings_path.write_text("{not json")
    done = _setup(tmp_path)
    assert done.returncode == 1
    assert str(settings_path) in done.stderr and "not valid JSON" in done.stderr
    assert settings_path.read_text() == "{not json"
    assert not (tmp_path / ".claude.json").exists()


def test_every_json_and_toml_snippet_of_the_docs_parses_and_agents_match_what_setup_writes():
    """Copy-paste setup (#45): every JSON and TOML block in the README and docs/ parses; in the
    agents' page the hook block says what `setup claude-code` writes, every server starts
    `/abs/ask-user mcp`, and none holds a placeholder like "..."."""
    import re
    import tomllib

    from app.agent.setup import CODEX_WAITING, our_hooks, with_hook

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    blocks = {}
    for page in pages:
        for kind, block in re.findall(r"```(json|toml)\n(.*?)```", page.read_text(), re.S):
            parsed = json.loads(block) if kind == "json" else tomllib.loads(block)
            blocks.setdefault(page.name, []).append((block, parsed))
    agents = blocks["agents.md"]
    assert len(agents) >= 4
    claude_block, codex_block = [p for _, p in agents if "hooks" in p]
    timeout = hook_timeout(limits.DEFAULT_TIMEOUT_SECONDS)
    written = with_hook({}, "/abs/ask-user claude-hook", timeout)
    assert claude_block["hooks"] == written["hooks"]
    codex = our_hooks("/abs/ask-user codex-hook", timeout, "request_user_input", CODEX_WAITING)
    assert codex_block["hooks"] == {event: [group] for event, group in codex.items()}
    for text, config in agents:
        assert '"..."' not in text and '= "..."' not in text, text
        for server in (config.get("mcpServers") or config.get("mcp_servers") or {}).values():
            if "command" in server:
                assert server["command"] == "/abs/ask-user" and server["args"][0] == "mcp"


CODEX_BEFORE = """# my Codex settings
model = "o4"  # the one I like

[mcp_servers.other]
command = "other-server"
args = ["--fast"]

[profiles.work]
approval_policy = "on-request"
"""


def test_codex_gets_a_server_that_works_in_codex_exec_and_keeps_the_rest(tmp_path):
    """#40: required at start (the first turn sees the tool), calls approved (`codex exec`
    refused them), a tool timeout past the longest prompt (Codex stops at 300 s), and the data
    folder in its env (Codex passes stdio servers none of the shell's variables)."""
    import tomllib

    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_BEFORE)
    done = _setup(tmp_path, client="codex")
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    ours = text[text.index("[mcp_servers.ask-user]") : text.index("[profiles.work]")]
    assert text.replace(ours, "") == CODEX_BEFORE  # every byte that was there, comments too
    assert (path.parent / "config.toml.bak").read_text() == CODEX_BEFORE
    config = tomllib.loads(text)
    assert config["model"] == "o4" and config["profiles"]["work"]["approval_policy"]
    assert config["mcp_servers"]["other"] == {"command": "other-server", "args": ["--fast"]}
    server = config["mcp_servers"]["ask-user"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["mcp"]
    assert server["required"] is True
    assert server["default_tools_approval_mode"] == "approve"
    assert server["tool_timeout_sec"] > 3600
    assert server["env"] == {
        "ASK_USER_GATEWAY_DATA": str(tmp_path / ".local" / "share" / "ask-user")
    }
    again = _setup(tmp_path, client="codex")
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert path.read_text() == text


def test_codex_gets_its_hooks_beside_the_others_and_is_told_to_trust_them(tmp_path):
    """#54: request_user_input, every approval and Stop go to `ask-user codex-hook`, with the
    line Codex shows while the card waits; the user's own hooks stay; once is enough."""
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    theirs = {"type": "command", "command": "notify-send codex", "timeout": 5}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}, "other": 1}))
    done = _setup(tmp_path, client="codex")
    assert done.returncode == 0, done.stderr
    assert '"Trust all and continue"' in done.stdout
    written = json.loads(path.read_text())
    assert written["other"] == 1
    hooks = written["hooks"]
    assert set(hooks) == {"PreToolUse", "PermissionRequest", "Stop"}
    assert hooks["Stop"][0] == {"hooks": [theirs]}
    [asking] = hooks["PreToolUse"]
    assert asking["matcher"] == "request_user_input"
    [hook] = asking["hooks"]
    assert hook["command"].endswith(" codex-hook")
    assert Path(hook["command"].split()[0]).is_absolute()
    assert hook["timeout"] == hook_timeout(limits.DEFAULT_TIMEOUT_SECONDS)
    assert hook["statusMessage"] == "Waiting for your answer on your phone (Ask User)"
    assert "matcher" not in hooks["PermissionRequest"][0]  # every approval
    assert hooks["Stop"][1]["hooks"][0]["command"] == hook["command"]
    again = _setup(tmp_path, client="codex")
    assert again.returncode == 0 and path.read_text() == json.dumps(written, indent=2) + "\n"


def test_a_broken_codex_file_is_named_and_left_alone(tmp_path):
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text("model = \n")
    done = _setup(tmp_path, client="codex")
    assert done.returncode == 1 and str(path) in done.stderr and "not valid TOML" in done.stderr
    assert path.read_text() == "model = \n"


@pytest.mark.parametrize(
    ("client", "where"),
    [
        ("cursor", Path(".cursor") / "mcp.json"),
        ("claude-desktop", Path(".config") / "Claude" / "claude_desktop_config.json"),
    ],
)
def test_desktop_clients_get_a_server_with_no_placeholder(tmp_path, client, where):
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    before = {"mcpServers": {"other": {"command": "x"}}, "globalShortcut": "Ctrl+Space"}
    path.write_text(json.dumps(before))
    done = _setup(tmp_path, client=client)
    assert done.returncode == 0, done.stderr
    config = json.loads(path.read_text())
    assert config["globalShortcut"] == "Ctrl+Space"
    assert config["mcpServers"]["other"] == {"command": "x"}
    server = config["mcpServers"]["ask-user"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["mcp"]
    assert server["env"] == {
        "ASK_USER_GATEWAY_DATA": str(tmp_path / ".local" / "share" / "ask-user")
    }
    assert "..." not in path.read_text()
    assert json.loads((path.parent / (path.name + ".bak")).read_text()) == before
    assert "unchanged" in _setup(tmp_path, client=client).stdout


def test_project_scope_where_a_client_has_none_is_refused(tmp_path):
    for client in ("codex", "claude-desktop"):
        done = _setup(tmp_path, "--scope", "project", client=client)
        assert done.returncode == 1 and "use the user scope" in done.stderr
    done = _setup(tmp_path, "--scope", "project", "--project-dir", str(tmp_path), client="cursor")
    assert done.returncode == 0, done.stderr
    server = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]["ask-user"]
    assert "env" not in server  # a project's file is shared: no paths of this machine


def test_the_apps_hint_for_agents_runs_as_printed(tmp_path):
    """The app printed `export …=<the agent token in …>`, which no shell can run (#40): the
    hint is now the one command, and it runs as printed."""
    import shlex

    from app.launch import point_an_agent

    line = point_an_agent()
    command = shlex.split(line.split(": ", 1)[1].split("   ")[0])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_USER_", "CLAUDE_"))}
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [*command, "--print"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "mcpServers" in done.stdout and "claude-hook" in done.stdout


# ---- Gemini CLI, opencode, Copilot CLI (#51) --------------------------------------------------


def _server_of(client: str, home: Path) -> dict:
    where = {
        "gemini": (home / ".gemini" / "settings.json", "mcpServers"),
        "opencode": (home / ".config" / "opencode" / "opencode.json", "mcp"),
        "copilot": (home / ".copilot" / "mcp-config.json", "mcpServers"),
    }
    path, key = where[client]
    return json.loads(path.read_text())[key]


@pytest.mark.parametrize("client", ["gemini", "opencode", "copilot"])
def test_each_terminal_agent_gets_its_own_file_in_its_own_shape(tmp_path, client):
    for _ in range(2):  # idempotent
        done = _setup(tmp_path, "--gateway-url", "http://gw.lan:8765", client=client)
        assert done.returncode == 0, done.stderr
    servers = _server_of(client, tmp_path)
    server = servers["ask-user"]
    if client == "opencode":
        assert server["type"] == "local" and server["enabled"] is True
        assert Path(server["command"][0]).is_absolute() and server["command"][-1] == "mcp"
        assert server["environment"] == {"ASK_USER_GATEWAY_URL": "http://gw.lan:8765"}
    else:
        assert Path(server["command"]).is_absolute() and server["args"][-1] == "mcp"
        assert server["env"] == {"ASK_USER_GATEWAY_URL": "http://gw.lan:8765"}
    if client == "gemini":  # Gemini cuts every call at 600 s unless told otherwise
        assert server["timeout"] == MCP_TOOL_TIMEOUT_MS and server["trust"] is True
    if client == "copilot":
        assert server["type"] == "local" and server["tools"] == ["*"]
    assert "unchanged" in done.stdout


def test_an_existing_gemini_file_keeps_its_own_content(tmp_path):
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    mine = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "mcpServers": {"other": {"command": "x"}}}  # fmt: skip
    path.write_text(json.dumps(mine))
    assert _setup(tmp_path, client="gemini").returncode == 0
    written = json.loads(path.read_text())
    assert written["security"] == mine["security"]
    assert written["mcpServers"]["other"] == {"command": "x"}
    server = written["mcpServers"]["ask-user"]
    assert "ASK_USER_GATEWAY_DATA" in server["env"]  # no URL given: this machine's gateway


# ---- the user's own files (#52) ----------------------------------------------------------------


def test_a_token_makes_the_files_and_their_backups_private(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}")
    servers = tmp_path / ".claude.json"
    servers.write_text("{}")
    for path in (settings, servers):
        path.chmod(0o644)
    assert _setup(tmp_path, "--token", "a-secret-agent-token").returncode == 0
    for path in (settings, servers, *(p.with_name(p.name + ".bak") for p in (settings, servers))):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert "a-secret-agent-token" in settings.read_text()


def test_a_symlinked_file_is_written_through_and_stays_a_link(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude.json"
    target.write_text(json.dumps({"mine": 1}))
    link = tmp_path / ".claude.json"
    link.symlink_to(target)
    assert _setup(tmp_path).returncode == 0
    assert link.is_symlink()
    data = json.loads(target.read_text())
    assert data["mine"] == 1 and "ask-user" in data["mcpServers"]


def test_the_backup_keeps_the_original_and_is_never_followed(tmp_path):
    servers = tmp_path / ".claude.json"
    servers.write_text(json.dumps({"original": True}))
    assert _setup(tmp_path, "--timeout", "600").returncode == 0
    assert _setup(tmp_path, "--timeout", "700").returncode == 0  # a second change
    backup = tmp_path / ".claude.json.bak"
    assert json.loads(backup.read_text()) == {"original": True}  # the pre-setup original

    settings = tmp_path / ".claude" / "settings.json"
    precious = tmp_path / "precious.txt"
    precious.write_text("do not overwrite")
    settings.with_name("settings.json.bak").unlink()
    settings.with_name("settings.json.bak").symlink_to(precious)
    assert _setup(tmp_path, "--timeout", "800").returncode == 0
    assert precious.read_text() == "do not overwrite"


def test_a_read_only_file_is_refused_and_left_alone(tmp_path):
    servers = tmp_path / ".claude.json"
    servers.write_text("{}")
    servers.chmod(0o444)
    done = _setup(tmp_path)
    assert done.returncode == 1 and "read-only" in done.stderr and ".claude.json" in done.stderr
    assert servers.read_text() == "{}"


@pytest.mark.parametrize(
    ("client", "relative", "content", "key"),
    [
        ("claude-code", ".claude/settings.json", {"hooks": "abc"}, "hooks"),
        ("claude-code", ".claude/settings.json", {"env": "ab"}, "env"),
        ("claude-code", ".claude/settings.json", {"permissions": {"allow": "Bash"}},
         "permissions.allow"),
        ("claude-code", ".claude/settings.json", {"hooks": {"Stop": {"x": 1}}}, "hooks.Stop"),
        ("claude-code", ".claude.json", {"mcpServers": "oops"}, "mcpServers"),
        ("codex", ".codex/config.toml", 'mcp_servers = "x"\n', "mcp_servers"),
        ("opencode", ".config/opencode/opencode.json", {"mcp": []}, "mcp"),
    ],
)  # fmt: skip
def test_a_wrongly_shaped_file_is_refused_naming_the_file_and_key(
    tmp_path, client, relative, content, key
):
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content)
    path.write_text(text)
    done = _setup(tmp_path, client=client)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert str(path) in line and f'"{key}"' in line, line
    assert path.read_text() == text


def test_a_file_rewritten_while_setup_runs_keeps_the_other_writers_change(tmp_path, monkeypatch):
    """Claude Code rewrites ~/.claude.json often: a change between setup's read and its write
    is read again, not undone."""
    import argparse

    from app.agent import settings_files, setup

    servers = tmp_path / ".claude.json"
    servers.write_text(json.dumps({"numStartups": 1}))
    real_write = settings_files.write
    raced = []

    def racing_write(path, text, before, **kw):
        if path == servers and not raced:
            raced.append(path)
            servers.write_text(json.dumps({"numStartups": 2}))  # Claude Code, meanwhile
        return real_write(path, text, before, **kw)

    for name in ("CLAUDE_CONFIG_DIR", "ASK_USER_GATEWAY_URL", "ASK_USER_AGENT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(setup, "write", racing_write)
    args = argparse.Namespace(agent="claude-code", scope="user", project_dir=".", print=False,
                              timeout=None, gateway_url=None, token=None)  # fmt: skip
    said = setup._apply(args)
    data = json.loads(servers.read_text())
    assert raced and data["numStartups"] == 2 and "ask-user" in data["mcpServers"], said
