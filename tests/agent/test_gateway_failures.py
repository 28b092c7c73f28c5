"""When the gateway fails, the agent side steps aside in seconds (#52): the hooks make no
decision (Claude Code asks in its terminal) and exit 0 with one line on stderr; `ask-user ask`
and `ask_user()` end with a clear error. Against servers that misbehave on purpose: one that
accepts and never answers, one that cannot write (503), one that is not the gateway (HTML)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support import AGENT_TOKEN

from .test_claude_hook import DATABASE, _hook_input

# Hangs are what these tests catch: a hook that gave up waits far less than this (it took
# 45 s against a silent server, and 1,560 s against a 503, before).
HANG = 20


class _Silent:
    """Accepts connections and never says a word."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.socket.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        for held in self.held:
            held.close()
        self.socket.close()


class _Answering(ThreadingHTTPServer):
    """Answers every request with the same status and body."""

    def __init__(self, status: int, body: bytes, content_type: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                self._answer()

            def _answer(self) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


SERVERS = {
    "silent": _Silent,
    "full-disk-503": lambda: _Answering(
        503, b'{"error":{"code":"unavailable","message":"disk full"}}', "application/json"
    ),
    "html-200": lambda: _Answering(200, b"<html><body>Welcome to nginx</body></html>", "text/html"),
    "wrong-json-200": lambda: _Answering(200, b'{"hello": "world"}', "application/json"),
}


@pytest.fixture(params=list(SERVERS))
def failing(request) -> Iterator[Any]:
    server = SERVERS[request.param]()
    yield server
    server.close()


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_USER_", "CLAUDE_"))}
    env.update(ASK_USER_GATEWAY_URL=url, ASK_USER_AGENT_TOKEN=AGENT_TOKEN)
    return env


def _run(args: list[str], stdin: str, url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *args], input=stdin, env=_env(url),
        capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip


@pytest.mark.parametrize(
    "hook",
    [
        _hook_input(DATABASE),
        {"session_id": "s1", "cwd": "/home/dev/code/shop", "hook_event_name": "Stop",
         "stop_hook_active": False},
    ],
    ids=["pre-tool-use", "stop"],
)  # fmt: skip
def test_both_hooks_make_no_decision_and_say_one_line(failing, hook):
    done = _run(["claude-hook"], json.dumps(hook), failing.url)
    assert done.returncode == 0 and done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2, done.stderr  # what failed, and what happens now
    assert lines[-1].startswith(("ask-user:", "warning:")), done.stderr


def test_ask_ends_with_a_clear_error_when_the_gateway_cannot_write(failing):
    done = subprocess.run(
        [sys.executable, "-m", "app", "ask", "--question", "Deploy?", "--option", "Yes",
         "--option", "No"],
        env=_env(failing.url), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error:"), done.stderr


def test_the_stop_hook_lets_a_continued_stop_through(gateway):
    """Claude Code sets stop_hook_active when a stop hook already kept it going: the next
    stop goes through, whatever is waiting, so it can never loop."""
    from .test_claude_hook import PROJECT

    hook = {"session_id": "s1", "cwd": PROJECT, "hook_event_name": "Stop", "stop_hook_active": True}
    prompt = gateway.create(sessionKey=f"claude-code:{PROJECT}", timeoutSeconds=30)
    gateway.clock.advance(31)
    from tests.support import device_post

    device_post(gateway.url, prompt["id"], "late-answer", {"answers": {"deploy_target": ["x"]}})
    done = _run(["claude-hook"], json.dumps(hook), gateway.url)
    assert (done.returncode, done.stdout) == (0, "")
    hook["stop_hook_active"] = False
    blocked = _run(["claude-hook"], json.dumps(hook), gateway.url)
    assert json.loads(blocked.stdout)["decision"] == "block"
    again = _run(["claude-hook"], json.dumps(hook), gateway.url)
    assert again.stdout == ""  # once per late answer


def test_a_gateway_url_without_a_scheme_is_refused_at_once():
    """#53: it retried for 15 s before failing; Settings refuses it at once, so does `ask`."""
    env = _env("http://unused")
    env.pop("ASK_USER_GATEWAY_URL")
    done = subprocess.run(
        [sys.executable, "-m", "app", "ask", "--gateway-url", "127.0.0.1:19001",
         "--question", "Deploy?", "--option", "Yes", "--option", "No"],
        env=env, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error:") and "http://" in line and "127.0.0.1:19001" in line


def test_a_timeout_out_of_range_is_said_not_silently_changed(gateway):
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "ask", "--timeout", "10", "--question", "Deploy?",
         "--option", "Yes", "--option", "No"],
        env=_env(gateway.url), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    from tests.support import device_post, next_pending

    prompt = next_pending(gateway.url)
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"answer": ["Yes"]}})
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "10 s became 30 s" in err


def test_a_waiting_ask_says_once_that_it_lost_the_gateway_then_gets_the_answer(tmp_path):
    """#53: while the gateway was gone a waiting `ask-user ask` said nothing for a minute."""
    from tests.support import GatewayProcess, device_post, next_pending, wait_until

    gateway = GatewayProcess(tmp_path / "gw").start()
    err_path = tmp_path / "err"
    with err_path.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "app", "ask", "--question", "Deploy?", "--option", "Yes",
             "--option", "No"],
            env=_env(gateway.url), text=True, stdout=subprocess.PIPE, stderr=err,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        prompt = next_pending(gateway.url)
        # Its create answered (logged once the response is out): now it is waiting.
        wait_until(lambda: "POST /v1/prompts 201" in gateway.log(), 30, 0.05)
        gateway.kill()
        wait_until(lambda: "lost the gateway" in err_path.read_text(), 30, 0.1)
        gateway.start()
        device_post(gateway.url, prompt["id"], "answer", {"answers": {"answer": ["Yes"]}})
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 0 and '"answer": ["Yes"]' in out
        said = err_path.read_text()
        assert said.count("lost the gateway") == 1 and "Traceback" not in said, said
    finally:
        if process.poll() is None:
            process.kill()
        gateway.kill()
