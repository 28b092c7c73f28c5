"""The one place the agent tools read their environment: `ask_user()`, `ask-user ask | mcp |
claude-hook | setup`. Each entry point reads it once (`AgentEnvironment.read()`) and passes
it on; nothing else in `app/agent` looks at `os.environ`.

One precedence for the gateway and the token: what the caller gives (`token=` in Python, a
flag), then the environment, then what a gateway on this machine wrote in its data folder,
then the default address. The other agents' own variables (where Claude Code, Codex, Gemini
CLI, Copilot CLI, opencode and Claude Desktop keep their settings; Claude Code's project
folder) are read here too."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from app.protocol.local_gateway import (
    AGENT_TOKEN_ENV,
    DATA_DIR_ENV,
    GATEWAY_URL_ENV,
    SESSION_KEY_ENV,
    gateway_data_dir,
    read_local_gateway,
)

DEFAULT_GATEWAY_URL = "http://127.0.0.1:8765"


@dataclass(frozen=True)
class AgentEnvironment:
    """The variables, by meaning; None where unset or empty."""

    gateway_url: str | None = None  # ASK_USER_GATEWAY_URL
    token: str | None = None  # ASK_USER_AGENT_TOKEN
    session_key: str | None = None  # ASK_USER_SESSION_KEY
    gateway_data: str | None = None  # ASK_USER_GATEWAY_DATA: this machine's gateway's folder
    claude_config_dir: str | None = None  # CLAUDE_CONFIG_DIR
    claude_project_dir: str | None = None  # CLAUDE_PROJECT_DIR, set for Claude Code's hooks
    codex_home: str | None = None  # CODEX_HOME
    gemini_cli_home: str | None = None  # GEMINI_CLI_HOME (Gemini CLI's ~/.gemini lives in it)
    copilot_home: str | None = None  # COPILOT_HOME (Copilot CLI's settings folder)
    appdata: str | None = None  # APPDATA (Windows: Claude Desktop's settings)
    xdg_config_home: str | None = None  # XDG_CONFIG_HOME (Linux: Claude Desktop's settings)

    @classmethod
    def read(cls, env: Mapping[str, str] | None = None) -> AgentEnvironment:
        env = os.environ if env is None else env
        return cls(**{f.name: env.get(_VARIABLES[f.name]) or None for f in fields(cls)})

    def data_dir(self) -> Path | None:
        """Where a gateway on this machine keeps its files (None where that cannot be known:
        an install without the app's dependencies has no platformdirs)."""
        try:
            return gateway_data_dir(self.gateway_data)
        except ImportError:
            return None

    def local_gateway(self) -> dict[str, str]:
        """The address and agent token a gateway on this machine wrote, where it did."""
        data_dir = self.data_dir()
        if data_dir is None:
            return {}
        local = read_local_gateway(data_dir)
        found = {"url": local.local_url, "token": local.token("agent")}
        return {k: v for k, v in found.items() if v}


_VARIABLES = {
    "gateway_url": GATEWAY_URL_ENV,
    "token": AGENT_TOKEN_ENV,
    "session_key": SESSION_KEY_ENV,
    "gateway_data": DATA_DIR_ENV,
    "claude_config_dir": "CLAUDE_CONFIG_DIR",
    "claude_project_dir": "CLAUDE_PROJECT_DIR",
    "codex_home": "CODEX_HOME",
    "gemini_cli_home": "GEMINI_CLI_HOME",
    "copilot_home": "COPILOT_HOME",
    "appdata": "APPDATA",
    "xdg_config_home": "XDG_CONFIG_HOME",
}
