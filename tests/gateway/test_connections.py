"""One client cannot stall everyone (#14, 3): oversized headers get 431 at once, and a
connection that does not finish its headers in time is closed; others are served meanwhile."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import pytest

from app import http_deadlines
from tests.support import start_gateway


@pytest.fixture
def quick_headers(monkeypatch, tmp_path):
    monkeypatch.setattr(http_deadlines, "HEADER_TIMEOUT_SECONDS", 0.5)
    running = start_gateway(tmp_path)
    yield running
    running.stop()


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=20)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_huge_header_is_refused_with_431_and_health_is_served_meanwhile(gateway):
    sock = _connect(gateway.url)
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ")
    sent = 0
    try:
        while sent < 50 * 1024 * 1024:  # the gateway closes long before 50 MB
            sock.sendall(b"a" * 65536)
            sent += 65536
            if sent == 65536 * 4:
                assert gateway.client(None).get("/v1/health").status_code == 200
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert sent < 50 * 1024 * 1024
    try:
        answer = _read_all(sock)
    except ConnectionResetError:
        answer = b""  # the refusal can be lost to the reset of the unread bytes
    if answer:
        assert answer.startswith(b"HTTP/1.1 431")
        assert b'"code":"headers_too_large"' in answer


def test_headers_just_over_the_limit_get_a_json_431(gateway):
    sock = _connect(gateway.url)
    many = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(400))  # ~42 KB
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + many)
    answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 431")
    assert answer.endswith(
        b'{"error":{"code":"headers_too_large",'
        b'"message":"the request line and headers are limited to 32768 bytes"}}'
    )


def test_ordinary_headers_under_the_limit_pass(gateway):
    headers = {f"X-H{i}": "v" * 100 for i in range(200)}  # ~22 KB
    assert gateway.client(None).get("/v1/health", headers=headers).status_code == 200


def test_a_connection_trickling_its_headers_is_closed(quick_headers):
    started = time.monotonic()
    sock = _connect(quick_headers.url)
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
    answer = _read_all(sock)  # returns when the gateway closes the connection
    assert answer.startswith(b"HTTP/1.1 408")
    silent = _connect(quick_headers.url)
    assert _read_all(silent) == b""  # nothing sent at all: closed without a word
    assert time.monotonic() - started < 15  # closed by the deadline, not by the test's timeout
    assert quick_headers.client(None).get("/v1/health").status_code == 200


def test_a_kept_alive_connection_is_not_cut_while_its_long_poll_waits(quick_headers):
    """The deadline is for headers only: a poll parked longer than it is answered normally,
    and the next request on the same connection is served."""
    device = quick_headers.device
    first = device.get("/v1/events?wait=1.5")
    assert first.status_code == 200
    assert device.get("/v1/events?wait=0").status_code == 200
