"""Faults a probe of the gateway found that need no token (#23), each over real sockets: a
client that reads nothing, bodies that never come, headers that come all at once, a client
that leaves mid-pipeline, an Upgrade header, a forged log line, and a 405 without Allow."""

from __future__ import annotations

import json
import logging
import signal
import socket
import struct
import time
from urllib.parse import urlsplit

import httpx
import pytest

from app import http_deadlines
from tests.support import AGENT_TOKEN, DEVICE_TOKEN, GatewayProcess, start_gateway, wait_until


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=20)


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def quick_bodies(monkeypatch, tmp_path):
    monkeypatch.setattr(http_deadlines, "BODY_TIMEOUT_SECONDS", 0.5)
    running = start_gateway(tmp_path)
    yield running
    running.stop()


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def test_a_client_that_reads_nothing_cannot_grow_the_gateway(tmp_path):
    """20,000 pipelined GET /openapi.json on one connection that never reads: the gateway
    stops reading it once its answers back up (it grew by 1 GB before), and others are
    served meanwhile."""
    gateway = GatewayProcess(tmp_path / "data", log_level="warning").start()
    try:
        before = _rss_mb(gateway.process.pid)
        sock = _connect(gateway.url)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        batch = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 1000
        sent, pending = 0, memoryview(b"")
        deadline = time.monotonic() + 30
        while sent < 20 and time.monotonic() < deadline:  # as much as the kernel takes
            if not pending:
                pending, sent = memoryview(batch), sent + 1
            try:
                pending = pending[sock.send(pending) :]
            except BlockingIOError:
                time.sleep(0.01)
        # Another client is answered meanwhile.
        assert httpx.get(f"{gateway.url}/v1/health", timeout=10).status_code == 200
        grown = _rss_mb(gateway.process.pid) - before
        assert grown < 150, f"the gateway grew by {grown} MB"
        sock.close()
    finally:
        gateway.kill()


def test_a_get_declaring_a_body_that_never_comes_is_closed(quick_bodies):
    for framing in (b"Content-Length: 1000000000\r\n", b"Transfer-Encoding: chunked\r\n"):
        sock = _connect(quick_bodies.url)
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\n")
        answer = _read_all(sock)  # returns when the gateway closes the connection
        assert answer.startswith(b"HTTP/1.1 200"), answer  # answered, then let go


def test_a_post_whose_body_never_completes_gets_408(quick_bodies):
    sock = _connect(quick_bodies.url)
    sock.sendall(
        b"POST /v1/devices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"code": '
    )
    answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"code":"request_timeout"' in answer
    assert quick_bodies.client(None).get("/v1/health").status_code == 200


def test_a_refused_token_is_answered_before_any_body_is_read(gateway):
    sock = _connect(gateway.url)
    sock.sendall(
        b"POST /v1/prompts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope-nope-nope\r\n"
        b"Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    sock.settimeout(10)
    answer = sock.recv(65536)  # no body sent: a 401 comes all the same, and no 100 Continue
    assert answer.startswith(b"HTTP/1.1 401"), answer


def test_headers_over_the_limit_in_the_read_that_ends_them_get_431(gateway):
    sock = _connect(gateway.url)
    big = b"X-Pad: " + b"a" * 40_000 + b"\r\n"
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
    answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
    assert b'"headers_too_large"' in answer


def test_a_client_leaving_mid_pipeline_is_let_go_without_an_error(gateway, caplog):
    caplog.set_level(logging.WARNING)
    for _ in range(10):
        sock = _connect(gateway.url)
        sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 300)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, with answers still being written
    assert gateway.client(None).get("/v1/health").status_code == 200
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


def test_an_upgrade_header_is_an_ordinary_request(gateway, caplog):
    caplog.set_level(logging.WARNING)
    response = gateway.client(None).get(
        "/v1/health",
        headers={"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                 "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
    )  # fmt: skip
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_path_cannot_forge_a_log_line(gateway, caplog):
    caplog.set_level(logging.INFO, logger="ask_user.gateway")
    forged = "/x%0A2026-12-03 00:00:00,000 INFO forged"
    assert gateway.client(None).get(forged).status_code == 404
    wait_until(lambda: any("forged" in r.getMessage() for r in caplog.records))
    lines = [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]
    assert lines and all("\n" not in line and "%0A" in line for line in lines), lines


def test_405_names_the_methods_allowed(gateway):
    response = gateway.client(DEVICE_TOKEN).delete("/v1/events")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_reply_of_five_thousand_digits_is_read_as_words(gateway):
    record = gateway.create()
    response = gateway.device.post(
        f"/v1/prompts/{record['id']}/reply", json={"text": "7" * 5000, "deviceId": "d"}
    )
    assert response.status_code in (200, 422), response.text  # it was a 500


def test_an_upload_still_coming_when_sigterms_grace_ends_gets_503(tmp_path):
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        sock = _connect(gateway.url)
        sock.sendall(
            b"POST /v1/devices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"code": '
        )
        # The loop has read what came before this answer (the upload is in flight).
        assert httpx.get(f"{gateway.url}/v1/health", timeout=10).status_code == 200
        gateway.process.send_signal(signal.SIGTERM)
        answer = _read_all(sock)
        gateway.process.wait(20)
    finally:
        gateway.kill()
    assert answer.startswith(b"HTTP/1.1 503"), answer
    assert b'"code":"unavailable"' in answer
    assert "Traceback" not in gateway.log()


def test_a_long_poll_pipelined_behind_a_post_lets_the_requests_behind_it_go(gateway):
    """POST, then a long-poll, then health, in one packet: the poll (served the ASGI way,
    behind the POST) answers at once with an empty page, so health is not held for its wait."""
    from tests.gateway.test_answered_at_once import Raw, _cursor, _parked, get

    cursor = _cursor(gateway)
    body = b'{"reason": "test"}'
    post = (  # a change that makes no event: the poll has nothing to answer with but empty
        "POST /v1/runs/no-such-run/cancel HTTP/1.1\r\nHost: t\r\n"
        f"Authorization: Bearer {AGENT_TOKEN}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    raw = Raw(gateway.url)
    raw.sock.settimeout(15)  # far below the poll's 60 s: a held health would time out here
    raw.send(post, get(f"/v1/events?after={cursor}&wait=60"), get("/v1/health", token=None))
    assert raw.response()[0] == 200  # the run's cancel
    status, _, page = raw.response()
    assert status == 200 and json.loads(page)["events"] == []
    assert raw.response()[0] == 200  # health, not held for a minute
    # And when the request behind it comes later, while the poll waits:
    raw.send(post, get(f"/v1/events?after={cursor}&wait=60"))
    assert raw.response()[0] == 200
    wait_until(lambda: _parked(gateway) == 1)
    raw.send(get("/v1/health", token=None))
    assert json.loads(raw.response()[2])["events"] == []
    assert raw.response()[0] == 200
    raw.close()
