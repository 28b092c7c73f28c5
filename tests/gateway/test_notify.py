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


def test_a_reminder_when_a_fifth_of_the_time_is_left_once_and_only_while_pending(
    tmp_path, receiver
):
    """#44: one reminder per prompt on each notifier, with the same link, when a fifth of its
    time is left; none for a prompt answered before, or asked for less than a minute. The
    notifier's queue is in order: once a later prompt's announcement is in, any reminder queued
    before it is too."""
    from tests.support import start_gateway

    gateway = start_gateway(tmp_path / "gateway", notify_urls=(receiver.url,))
    try:
        reminded = gateway.create(sessionKey="reminded", timeoutSeconds=60)
        gateway.create(sessionKey="short", timeoutSeconds=30)
        answered = gateway.create(sessionKey="answered", timeoutSeconds=300)
        wait_until(lambda: len(receiver.received) == 3, timeout=20)
        answer = {"answers": {"deploy_target": ["Production"]}}
        done = gateway.device.post(f"/v1/prompts/{answered['id']}/answer", json=answer)
        assert done.status_code == 200, done.text
        announced = next(m for m in receiver.received if m["message"].find(reminded["id"]) >= 0)

        def reminders() -> list[dict]:
            return [m for m in receiver.received if m["title"].startswith("Reminder")]

        gateway.clock.advance(47)  # 12 s left of 60: not yet a fifth
        gateway.create(sessionKey="marker-1")
        wait_until(lambda: len(receiver.received) == 4, timeout=20)
        assert reminders() == []
        gateway.clock.advance(2)  # 11 s left: a fifth or less
        wait_until(reminders, timeout=20)
        [reminder] = reminders()
        assert reminder["title"] == f"Reminder, 1 min left — {announced['title']}"
        assert (
            announced["message"].split("Answer: ")[1] == reminder["message"].split("Answer: ")[1]
        )  # the same answer link and app link
        gateway.clock.advance(300)  # past every deadline but the markers'
        gateway.create(sessionKey="marker-2")
        wait_until(lambda: any("marker-2" in m["title"] for m in receiver.received), timeout=20)
        assert len(reminders()) == 1
    finally:
        gateway.stop()


def test_no_reminder_once_the_person_is_answering(tmp_path, receiver):
    """#44: a reminder interrupts nobody who has started answering: the app said so (whether or
    not the deadline moved), here on a prompt with time enough left, and on one whose deadline
    the answering moved."""
    from tests.support import start_gateway

    gateway = start_gateway(tmp_path / "gateway", notify_urls=(receiver.url,))
    try:
        early = gateway.create(sessionKey="early", timeoutSeconds=600)
        late = gateway.create(sessionKey="late", timeoutSeconds=60)
        plain = gateway.create(sessionKey="plain", timeoutSeconds=60)
        wait_until(lambda: len(receiver.received) == 3, timeout=20)
        body = {"deviceId": "phone"}
        assert gateway.device.post(f"/v1/prompts/{early['id']}/engaged", json=body).is_success
        gateway.clock.advance(40)  # 20 s left of the minute ones
        moved = gateway.device.post(f"/v1/prompts/{late['id']}/engaged", json=body).json()
        assert moved["originalExpiresAt"] is not None
        gateway.clock.advance(10)  # 10 s left of the minute ones: both their reminders due

        def reminders() -> list[str]:
            return [m["message"] for m in receiver.received if m["title"].startswith("Reminder")]

        def marker(name: str) -> None:  # queued after any reminder due before it
            gateway.create(sessionKey=name)
            wait_until(lambda: any(name in m["title"] for m in receiver.received), timeout=20)

        wait_until(reminders, timeout=20)
        marker("marker-1")
        [reminded] = reminders()
        assert plain["id"] in reminded
        gateway.clock.advance(440)  # the 600 s prompt's reminder due, and it still pending
        marker("marker-2")
        assert len(reminders()) == 1
        assert gateway.device.get(f"/v1/prompts/{early['id']}").json()["status"] == "pending"
    finally:
        gateway.stop()
