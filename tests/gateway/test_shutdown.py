"""SIGTERM ends the gateway within seconds, with long-polls parked or just answered (#16)."""

from __future__ import annotations

import signal
import socket
import subprocess

import httpx
import pytest

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, GatewayProcess, prompt_body


def _park(url: str, path: str, token: str, count: int) -> list[socket.socket]:
    host, port = url.removeprefix("http://").split(":")
    parked = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        )
        parked.append(sock)
    return parked


@pytest.mark.parametrize("just_served", [False, True], ids=["parked", "just-answered"])
def test_sigterm_ends_the_gateway_with_polls_parked(tmp_path, just_served):
    gateway = GatewayProcess(tmp_path / "data", log_level="warning").start()
    try:
        agent = httpx.Client(
            base_url=gateway.url, headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
        )
        made = agent.post("/v1/prompts", json=prompt_body("waiting")).json()
        sockets = _park(gateway.url, "/v1/events?wait=60", DEVICE_TOKEN, 200)
        sockets += _park(gateway.url, f"/v1/prompts/{made['id']}/result?wait=60", AGENT_TOKEN, 50)
        device = httpx.Client(
            base_url=gateway.url, headers={"Authorization": f"Bearer {DEVICE_TOKEN}"}
        )
        assert device.get("/v1/health").status_code == 200
        if just_served:
            agent.post("/v1/prompts", json=prompt_body("wakes-every-poll"))
        gateway.process.send_signal(signal.SIGTERM)
        try:
            code = gateway.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("the gateway was still running 20 s after SIGTERM")
        # uvicorn shuts down cleanly, then re-raises the signal it caught: -SIGTERM is clean.
        assert code in (0, -signal.SIGTERM), gateway.log()
        assert "Traceback" not in gateway.log() and "Cancel" not in gateway.log()
        answered = [s.recv(65536) for s in sockets[:5] + sockets[-5:]]
        assert all(a.startswith(b"HTTP/1.1 200") for a in answered), answered
        for sock in sockets:
            sock.close()
        agent.close()
        device.close()
    finally:
        gateway.kill()
