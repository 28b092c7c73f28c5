"""A typed async client for the device endpoints of docs/PROTOCOL.md, on one keep-alive httpx
client.

Error bodies become exceptions carrying the contract's codes; network trouble stays an
`httpx.TransportError`, which the sync loop answers with backoff.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from app.protocol import (
    ErrorCode,
    EventsPage,
    FieldError,
    PairDeviceRequest,
    PairedDevice,
    PromptList,
    PromptRecord,
    error_from_body,
    limits,
)


class GatewayError(Exception):
    """The gateway answered with an error body."""

    def __init__(
        self, status: int, code: str, message: str, body: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}

    @property
    def fields(self) -> list[FieldError]:
        return [FieldError(f["path"], f["message"]) for f in self.body.get("fields", [])]


class Unauthorized(GatewayError):
    """401/403: the device token is missing, unknown, or not a device token."""


class CursorExpired(GatewayError):
    """410: re-sync from the prompt list."""


class NotFound(GatewayError):
    """404: the gateway no longer has this prompt."""


class AlreadyResolved(GatewayError):
    """409: someone or something resolved it first; `record` says who and how."""

    @property
    def record(self) -> PromptRecord:
        return PromptRecord.model_validate(self.body["prompt"])


_BY_CODE: dict[str, type[GatewayError]] = {
    ErrorCode.UNAUTHORIZED: Unauthorized,
    ErrorCode.FORBIDDEN: Unauthorized,
    ErrorCode.CURSOR_EXPIRED: CursorExpired,
    ErrorCode.NOT_FOUND: NotFound,
    ErrorCode.ALREADY_RESOLVED: AlreadyResolved,
}


@dataclass(frozen=True)
class Snapshot:
    prompts: list[PromptRecord]
    cursor: str
    server_time_ms: int


def _ms(value: Any) -> int:
    return int(value.timestamp() * 1000)


def _checked(response: httpx.Response) -> httpx.Response:
    """The response when it succeeded; else its error body as the matching exception."""
    if response.is_success:
        return response
    try:
        data = response.json()
    except ValueError:
        data = None
    error = error_from_body(data, response.status_code, response.reason_phrase)
    body = error.to_body()["error"]
    raise _BY_CODE.get(error.code, GatewayError)(
        response.status_code, error.code, error.message, body
    )


async def pair_device(
    gateway_url: str, code: str, name: str, *, transport: Any = None
) -> PairedDevice:
    """Trade a pairing code for this device's own token (`POST /v1/devices`, no token)."""
    body = PairDeviceRequest.model_validate({"code": code, "name": name or None}).to_wire()
    async with httpx.AsyncClient(
        base_url=gateway_url.rstrip("/"), timeout=15, transport=transport
    ) as http:
        response = _checked(await http.post("/v1/devices", json=body))
    return PairedDevice.model_validate_json(response.content)


class GatewayClient:
    def __init__(self, base_url: str, token: str, *, transport: Any = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(10.0, read=limits.MAX_WAIT_SECONDS + 15),
            limits=httpx.Limits(max_keepalive_connections=4, keepalive_expiry=60),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return _checked(await self._http.request(method, path, **kw))

    async def pending(self, limit: int = limits.MAX_LIMIT) -> Snapshot:
        response = await self._call(
            "GET", "/v1/prompts", params={"status": "pending", "limit": limit}
        )
        page = PromptList.model_validate_json(response.content)
        return Snapshot(page.prompts, page.cursor, _ms(page.server_time))

    async def prompt(self, prompt_id: str) -> PromptRecord:
        response = await self._call("GET", f"/v1/prompts/{prompt_id}")
        return PromptRecord.model_validate_json(response.content)

    async def events(
        self,
        after: str | None,
        wait: float = limits.DEFAULT_EVENTS_WAIT_SECONDS,
        limit: int = limits.DEFAULT_EVENTS_LIMIT,
    ) -> EventsPage:
        params: dict[str, Any] = {"wait": wait, "limit": limit}
        if after is not None:
            params["after"] = after
        response = await self._call("GET", "/v1/events", params=params)
        return EventsPage.model_validate_json(response.content)

    async def answer(
        self, prompt_id: str, answers: dict[str, list[str]], device_id: str, key: str
    ) -> PromptRecord:
        return await self._answer("answer", prompt_id, answers, device_id, key)

    async def late_answer(
        self, prompt_id: str, answers: dict[str, list[str]], device_id: str, key: str
    ) -> PromptRecord:
        """An answer after the deadline or the run's stop (v1.4): the record, status kept."""
        return await self._answer("late-answer", prompt_id, answers, device_id, key)

    async def _answer(
        self,
        action: str,
        prompt_id: str,
        answers: dict[str, list[str]],
        device_id: str,
        key: str,
    ) -> PromptRecord:
        response = await self._call(
            "POST",
            f"/v1/prompts/{prompt_id}/{action}",
            json={"answers": answers, "deviceId": device_id, "idempotencyKey": key},
        )
        return PromptRecord.model_validate_json(response.content)

    async def draft(
        self, prompt_id: str, answers: dict[str, list[str]], device_id: str, device_name: str = ""
    ) -> PromptRecord:
        """The person's answer so far, for their other devices (v1.4), with the name they know
        this device by when it was not paired (a paired device's is the gateway's)."""
        body: dict[str, Any] = {"answers": answers, "deviceId": device_id}
        if device_name.strip():
            body["deviceName"] = device_name.strip()[: limits.MAX_DEVICE_NAME_CHARS]
        response = await self._call("PUT", f"/v1/prompts/{prompt_id}/draft", json=body)
        return PromptRecord.model_validate_json(response.content)

    async def engaged(self, prompt_id: str, device_id: str) -> PromptRecord:
        """The person is choosing or typing: with little time left, the deadline moves."""
        response = await self._call(
            "POST", f"/v1/prompts/{prompt_id}/engaged", json={"deviceId": device_id}
        )
        return PromptRecord.model_validate_json(response.content)

    async def dismiss(self, prompt_id: str, device_id: str, key: str) -> PromptRecord:
        response = await self._call(
            "POST",
            f"/v1/prompts/{prompt_id}/dismiss",
            json={"deviceId": device_id, "idempotencyKey": key},
        )
        return PromptRecord.model_validate_json(response.content)
