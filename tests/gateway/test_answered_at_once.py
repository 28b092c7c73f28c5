"""Requests the connection answers itself (#16): GETs without a body to handlers that never
await, device long-polls above all, are answered where their headers are parsed, with no ASGI
cycle. Over raw sockets, so what the gateway writes is what is checked: order on a pipelined
connection, HEAD, a GET carrying a body, a client leaving while parked, the request log."""

from __future__ import annotations

import json
import logging
import socket
from urllib.parse import urlsplit

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, prompt_body, wait_until


class Raw:
    """One keep-alive HTTP/1.1 connection, written and read by hand."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=20)
        self.buffer = b""

    def send(self, *requests: bytes) -> None:
        self.sock.sendall(b"".join(requests))

    def response(self, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = 0 if head_only else int(headers["content-length"])
        while len(self.buffer) < length:
            self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split()[1]), headers, body

    def closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed with {self.buffer!r} unread")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def get(path: str, *extra: str, method: str = "GET", token: str | None = DEVICE_TOKEN) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join([*lines, *extra]) + "\r\n\r\n").encode()


def _parked(gateway) -> int:
    return gateway.server.app.state.gateway.feed.parked


def _cursor(gateway) -> str:
    return gateway.device.get("/v1/prompts").json()["cursor"]


def test_a_parked_poll_is_answered_by_the_next_event(gateway):
    cursor = _cursor(gateway)
    raw = Raw(gateway.url)
    raw.send(get(f"/v1/events?after={cursor}&wait=30"))
    wait_until(lambda: _parked(gateway) == 1)
    created = gateway.agent.post("/v1/prompts", json=prompt_body()).json()
    status, headers, body = raw.response()
    page = json.loads(body)
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert [e["prompt"]["id"] for e in page["events"]] == [created["id"]]
    assert page["cursor"] == str(int(cursor) + 1)
    # The same connection polls again and parks again.
    raw.send(get(f"/v1/events?after={page['cursor']}&wait=30"))
    wait_until(lambda: _parked(gateway) == 1)
    raw.close()


def test_a_request_pipelined_behind_a_parked_poll_is_answered_after_it_in_order(gateway):
    """A long-poll may answer early with an empty page; it must not answer after the request
    behind it (HTTP/1.1 answers in order)."""
    cursor = _cursor(gateway)
    raw = Raw(gateway.url)
    raw.send(get(f"/v1/events?after={cursor}&wait=30"), get("/v1/health", token=None))
    first = raw.response()
    second = raw.response()
    assert first[0] == 200 and json.loads(first[2]) == {
        "events": [],
        "cursor": cursor,
        "serverTime": json.loads(first[2])["serverTime"],
    }
    assert second[0] == 200 and json.loads(second[2]) == {"status": "ok"}
    assert _parked(gateway) == 0
    # Sent while parked (a later packet), a pipelined request also waits its turn.
    raw.send(get(f"/v1/events?after={cursor}&wait=30"))
    wait_until(lambda: _parked(gateway) == 1)
    raw.send(get(f"/v1/prompts/{'p' * 12}"))
    assert json.loads(raw.response()[2])["events"] == []
    status, _, body = raw.response()
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"
    raw.close()


def test_head_gets_the_head_alone_and_the_connection_goes_on(gateway):
    raw = Raw(gateway.url)
    raw.send(get("/v1/health", method="HEAD", token=None), get("/v1/health", token=None))
    status, headers, _ = raw.response(head_only=True)
    assert status == 200 and int(headers["content-length"]) == len(b'{"status":"ok"}')
    assert raw.response()[2] == b'{"status":"ok"}'  # the next response starts right after
    raw.close()


def test_a_body_sent_with_a_get_is_skipped_not_read_as_the_next_request(gateway):
    raw = Raw(gateway.url)
    smuggled = get("/v1/devices", token=None)  # inside the body: must never be served
    raw.send(
        get("/v1/health", f"Content-Length: {len(smuggled)}", token=None) + smuggled,
        get("/v1/health", token=None),
    )
    assert raw.response()[2] == b'{"status":"ok"}'
    assert raw.response()[2] == b'{"status":"ok"}'
    raw.sock.settimeout(0.5)
    try:
        extra = raw.sock.recv(65536)
    except TimeoutError:
        extra = b""
    assert extra == b""  # two requests, two answers: the body was not taken for a third
    raw.close()


def test_errors_answered_at_once_keep_the_contract_shape(gateway):
    raw = Raw(gateway.url)
    raw.send(
        get("/v1/events", token=None),
        get("/v1/events?after=%C2%B2"),  # a superscript two is not an ASCII digit
        get("/v1/nowhere"),
        get("/v1/events", token="agent-token-for-tests"),
    )
    answers = [raw.response() for _ in range(4)]
    assert [status for status, _, _ in answers] == [401, 422, 404, 403]
    codes = [json.loads(body)["error"]["code"] for _, _, body in answers]
    assert codes == ["unauthorized", "invalid_request", "not_found", "forbidden"]
    raw.close()


def test_a_client_leaving_while_parked_is_let_go(gateway):
    cursor = _cursor(gateway)
    clients = [Raw(gateway.url) for _ in range(3)]
    for raw in clients:
        raw.send(get(f"/v1/events?after={cursor}&wait=30"))
    wait_until(lambda: _parked(gateway) == 3)
    clients[0].close()
    clients[1].close()
    wait_until(lambda: _parked(gateway) == 1)
    gateway.agent.post("/v1/prompts", json=prompt_body())
    assert len(json.loads(clients[2].response()[2])["events"]) == 1
    clients[2].close()


def test_connection_close_is_honoured(gateway):
    raw = Raw(gateway.url)
    raw.send(get("/v1/health", "Connection: close", token=None))
    status, headers, _ = raw.response()
    assert status == 200 and headers.get("connection") == "close"
    assert raw.closed()


def test_requests_answered_at_once_are_logged_without_their_token(gateway, caplog):
    """An answered long-poll is a debug line (one per device per event would cost as much as
    the poll); a refused one, and every other request, an info line."""
    cursor = _cursor(gateway)
    with caplog.at_level(logging.DEBUG, logger="ask_user.gateway"):
        raw = Raw(gateway.url)
        raw.send(get(f"/v1/events?after={cursor}&wait=0.2"))
        assert raw.response()[0] == 200
        raw.send(get(f"/v1/events?after={cursor}&wait=0", token="x" * 40))
        assert raw.response()[0] == 401
        raw.send(get("/v1/health", token=None))
        assert raw.response()[0] == 200
        raw.close()
        wait_until(lambda: any("/v1/health" in r.getMessage() for r in caplog.records))
    lines = [(r.levelno, r.getMessage().split(" ")[:3]) for r in caplog.records]
    assert (logging.DEBUG, ["GET", "/v1/events", "200"]) in lines
    assert (logging.INFO, ["GET", "/v1/events", "401"]) in lines
    assert (logging.INFO, ["GET", "/v1/health", "200"]) in lines
    assert DEVICE_TOKEN not in caplog.text


def test_a_long_poll_served_the_asgi_way_parks_and_wakes_the_same(gateway):
    """With `Connection: close` the connection leaves the request to uvicorn and the router's
    ASGI door, which waits on the same Parked; the next event answers it, then it closes."""
    cursor = _cursor(gateway)
    raw = Raw(gateway.url)
    raw.send(get(f"/v1/events?after={cursor}&wait=30", "Connection: close"))
    wait_until(lambda: _parked(gateway) == 1)
    created = gateway.agent.post("/v1/prompts", json=prompt_body()).json()
    status, headers, body = raw.response()
    assert status == 200 and headers.get("connection") == "close"
    assert [e["prompt"]["id"] for e in json.loads(body)["events"]] == [created["id"]]
    assert raw.closed()
    assert _parked(gateway) == 0


def _waiting(gateway) -> int:
    return gateway.server.app.state.gateway.waiters.waiting


def test_an_agents_result_wait_is_answered_at_once_by_the_answer(gateway):
    """`GET /result?wait=` parks like a device's poll (#27): the answer writes it."""
    created = gateway.create()
    raw = Raw(gateway.url)
    raw.send(get(f"/v1/prompts/{created['id']}/result?wait=30", token=AGENT_TOKEN))
    wait_until(lambda: _waiting(gateway) == 1)
    answers = {"answers": {"deploy_target": ["Production"]}}
    assert gateway.device.post(f"/v1/prompts/{created['id']}/answer", json=answers).is_success
    status, headers, body = raw.response()
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"status": "answered", "answers": answers}
    assert _waiting(gateway) == 0
    # Terminal now: the same connection gets it without waiting.
    raw.send(get(f"/v1/prompts/{created['id']}/result?wait=30", token=AGENT_TOKEN))
    assert json.loads(raw.response()[2])["status"] == "answered"
    raw.close()


def test_a_result_wait_ends_pending_in_order_or_when_its_wait_passes(gateway):
    created = gateway.create()
    raw = Raw(gateway.url)
    result = f"/v1/prompts/{created['id']}/result"
    raw.send(get(f"{result}?wait=30", token=AGENT_TOKEN), get("/v1/health", token=None))
    pending = {"status": "pending", "secondsLeft": 900, "answering": False}  # no time passed
    assert json.loads(raw.response()[2]) == pending  # in order: it answers first
    assert json.loads(raw.response()[2]) == {"status": "ok"}
    raw.send(get(f"{result}?wait=0.3", token=AGENT_TOKEN))
    assert json.loads(raw.response()[2]) == pending
    assert _waiting(gateway) == 0
    gone = Raw(gateway.url)  # a client that leaves while waiting is let go
    gone.send(get(f"{result}?wait=30", token=AGENT_TOKEN))
    wait_until(lambda: _waiting(gateway) == 1)
    gone.close()
    wait_until(lambda: _waiting(gateway) == 0)
    raw.close()


def _post(path: str, body: dict, token: str) -> bytes:
    data = json.dumps(body).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode() + data


def test_changes_pipelined_in_one_packet_are_answered_in_order(gateway):
    """Creates and an answer answered by the connection (#27), each response written after
    the polls its change woke, and never after a request behind it."""
    cursor = _cursor(gateway)
    device = Raw(gateway.url)
    device.send(get(f"/v1/events?after={cursor}&wait=30"))
    wait_until(lambda: _parked(gateway) == 1)
    raw = Raw(gateway.url)
    raw.send(
        _post("/v1/prompts", prompt_body(session="one"), AGENT_TOKEN),
        _post("/v1/prompts", prompt_body(session="two"), AGENT_TOKEN),
        _post("/v1/prompts", {"questions": []}, AGENT_TOKEN),  # refused: 422, in its turn
        get("/v1/health", token=None),
    )
    first, second, refused, health = (raw.response() for _ in range(4))
    assert [first[0], second[0], refused[0], health[0]] == [201, 201, 422, 200]
    assert [json.loads(r[2])["sessionKey"] for r in (first, second)] == ["one", "two"]
    assert json.loads(refused[2])["error"]["code"] == "invalid_prompt"
    page = json.loads(device.response()[2])  # the parked poll heard of the first create
    assert page["events"][0]["prompt"]["id"] == json.loads(first[2])["id"]
    answer = {"answers": {"deploy_target": ["Production"]}}
    prompt_id = json.loads(first[2])["id"]
    raw.send(
        _post(f"/v1/prompts/{prompt_id}/answer", answer, DEVICE_TOKEN),
        _post(f"/v1/prompts/{prompt_id}/answer", answer, DEVICE_TOKEN),
    )
    won, lost = raw.response(), raw.response()
    assert (won[0], lost[0]) == (200, 409)
    assert json.loads(lost[2])["error"]["code"] == "already_resolved"
    raw.close()
    device.close()


def test_a_page_is_framed_as_starlette_would_frame_it():
    """Pages skip Starlette's Response on the delivery path (#27): their bytes are the same."""
    from app.gateway.core.feed import Page
    from app.gateway.http.connections import _wire, page_wire
    from app.gateway.http.responses import outcome_response

    server = [(b"date", b"Fri, 04 Dec 2026 20:00:00 GMT"), (b"server", b"uvicorn")]
    for body in (b'{"events":[],"cursor":"7","serverTime":"x"}', '{"é":1}'.encode()):
        assert page_wire(body, server) == _wire(outcome_response(Page(body)), server)


def test_a_record_is_sent_as_the_dict_between_would_have_sent_it():
    """A create's record goes out as pydantic's JSON of it (#27): the same bytes and headers
    as `JSONResponse(record.to_wire())`, non-ASCII text and line separators included."""
    from starlette.responses import JSONResponse

    from app.gateway.core.clock import to_datetime
    from app.gateway.http.responses import record_response
    from app.protocol import PromptRecord, validate_prompt

    record = PromptRecord(
        id="pr_1",
        session_key="sé",
        agent_id="ü",
        questions=validate_prompt(prompt_body("x")).questions,
        status="answered",
        created_at=to_datetime(1_000),
        expires_at=to_datetime(61_000),
        resolved_at=to_datetime(1_500),
        answers={"deploy_target": ['say "hi"\u2028\U0001f600']},
    )
    ours, theirs = record_response(record, 201), JSONResponse(record.to_wire(), status_code=201)
    assert (ours.body, ours.raw_headers, ours.status_code) == (
        theirs.body,
        theirs.raw_headers,
        theirs.status_code,
    )
