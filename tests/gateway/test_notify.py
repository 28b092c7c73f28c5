"""New prompts announced through the real Apprise to local receivers; never on the create path."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support import AGENT_TOKEN, GatewayProcess, client, prompt_body, wait_until


class Receiver:
    """An HTTP endpoint that records the JSON posted to it: by Apprise's json:// notifier
    (`url`), or, as an ntfy server, what the gateway publishes (`url_as("ntfy://tk_…@", "/t")`).
    `received` holds the bodies, `requests` each one's path and headers too."""

    def __init__(self) -> None:
        received, requests = self.received, self.requests = [], []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                received.append(body)
                requests.append((self.path, dict(self.headers), body))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"id":"m1"}')  # what ntfy answers; Apprise ignores it

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = self.url_as("json://", "/hook")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url_as(self, scheme_and_user: str, path: str) -> str:
        return f"{scheme_and_user}127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Silent:
    """Accepts connections and never answers: a notifier that hangs."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"json://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)

    def still_waiting(self) -> bool:
        """The notifier's request is open: it has not had (nor given up on) an answer."""
        conn = self.connections[0]
        conn.setblocking(False)
        try:
            return conn.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return True

    def close(self) -> None:
        self.sock.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _gateway(tmp_path, notify: str) -> GatewayProcess:
    return GatewayProcess(tmp_path / "data", extra_env={"ASK_USER_NOTIFY": notify}).start()


def test_each_new_prompt_is_announced_with_its_link(tmp_path, receiver):
    gateway = _gateway(tmp_path, receiver.url)
    try:
        agent = client(gateway.url, AGENT_TOKEN)
        body = prompt_body(session="codex:~/code/shop-api")
        body["questions"].append(
            {
                "id": "notify",
                "header": "Notify",
                "question": "Who should hear of it?",
                "options": [{"label": "The team"}, {"label": "Nobody"}],
                "multiSelect": True,
            }
        )
        record = agent.post("/v1/prompts", json=body).json()
        wait_until(lambda: receiver.received, timeout=20)
        (message,) = receiver.received
        assert message["title"] == "Codex · shop-api: Target"  # who asks, first (#40)
        text = message["message"]
        for part in (
            "Where should this deploy?",
            "Staging (Recommended)",
            "Production",
            "Who should hear of it?",
            "The team",
            f"askuser://prompt/{record['id']}",
        ):
            assert part in text
        agent.post("/v1/prompts", json=prompt_body(session="other"))
        wait_until(lambda: len(receiver.received) == 2, timeout=20)
    finally:
        gateway.terminate()


def test_a_notifier_that_never_answers_delays_no_create_and_no_other_notifier(tmp_path, receiver):
    silent = Silent()
    gateway = _gateway(tmp_path, f"{silent.url} {receiver.url}")
    try:
        agent = client(gateway.url, AGENT_TOKEN)
        assert agent.post("/v1/prompts", json=prompt_body(session="a")).status_code == 201
        wait_until(lambda: silent.connections, timeout=20)  # the first announcement hangs
        created = agent.post("/v1/prompts", json=prompt_body(session="b"))
        assert created.status_code == 201
        assert silent.still_waiting()  # the create returned while that notifier still hangs
        wait_until(lambda: len(receiver.received) == 2, timeout=20)
        assert silent.still_waiting()  # and the other notifier heard of both meanwhile
    finally:
        gateway.terminate()
        silent.close()


def test_a_failing_notifier_is_logged_without_its_secrets(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    gateway = _gateway(tmp_path, f"json://alice:s3cret-pass@127.0.0.1:{closed_port}/hook")
    try:
        agent = client(gateway.url, AGENT_TOKEN)
        assert agent.post("/v1/prompts", json=prompt_body()).status_code == 201
        wait_until(lambda: "notification to json://" in gateway.log(), timeout=30)
        assert "s3cret-pass" not in gateway.log()
        assert agent.get("/v1/health").status_code == 200  # and the gateway serves on
    finally:
        gateway.terminate()
