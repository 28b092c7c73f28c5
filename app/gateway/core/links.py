"""Answer links (docs/PROTOCOL.md v1.2): a notification's link answers, dismisses or answers
late without the app; the link's token is a capability, of which the store keeps only a hash.

A part of the gateway's rules (`service.Gateway.links`): each action is the device's own,
made through the gateway it belongs to, keyed by the link and the page's attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from app.protocol import ErrorCode, PromptRecord, ProtocolError, ResolvedBy, canonicalize_answers

from ..store.storage import Store
from .devices import secret_hash
from .idempotency import IdempotencyKey, device_key

if TYPE_CHECKING:
    from .late_answers import LateAnswers


class Prompts(Protocol):
    """What answer links need of the gateway's prompts."""

    store: Store
    late: LateAnswers

    async def get(self, prompt_id: str, person: str | None) -> PromptRecord: ...

    async def engaged(
        self, prompt_id: str, person: str | None, device_id: str | None
    ) -> PromptRecord: ...

    async def _decide(
        self,
        prompt_id: str,
        person: str | None,
        key: IdempotencyKey | None,
        resolved_by: ResolvedBy,
        answers_for: Callable[[PromptRecord], dict[str, list[str]]] | None = None,
    ) -> dict[str, Any]: ...


class AnswerLinks:
    """What a link's page does, by the link's token."""

    def __init__(self, prompts: Prompts) -> None:
        self.prompts = prompts

    async def prompt_of(self, token: str) -> PromptRecord | None:
        """The prompt an answer link is bound to (as it stands now), or None."""
        prompt_id = await self.prompts.store.prompt_of_link(secret_hash(token))
        return await self.prompts.get(prompt_id, None) if prompt_id is not None else None

    async def answer(self, token: str, answers: dict[str, Any], attempt: str) -> dict[str, Any]:
        """Like a device's answer; `attempt` names this try (a retry of it is safe)."""
        prompt_id = await self._prompt_id(token)
        request = {"answers": answers}
        return await self.prompts._decide(
            prompt_id,
            None,
            device_key(prompt_id, f"link:{secret_hash(token)}:{attempt}", "answer", request),
            ResolvedBy(kind="link"),
            lambda record: canonicalize_answers(record.questions, answers),
        )

    async def engaged(self, token: str) -> PromptRecord:
        """The person is choosing or typing on the link's page."""
        return await self.prompts.engaged(await self._prompt_id(token), None, None)

    async def late_answer(
        self, token: str, answers: dict[str, Any], attempt: str
    ) -> dict[str, Any]:
        """A late answer from the link's page (v1.4); `attempt` names this try."""
        prompt_id = await self._prompt_id(token)
        key = f"link:{secret_hash(token)}:{attempt}"
        return await self.prompts.late.answer(prompt_id, None, answers, None, key, by_link=True)

    async def dismiss(self, token: str, attempt: str) -> dict[str, Any]:
        prompt_id = await self._prompt_id(token)
        key = device_key(prompt_id, f"link:{secret_hash(token)}:{attempt}", "dismiss", {})
        return await self.prompts._decide(prompt_id, None, key, ResolvedBy(kind="link"))

    async def _prompt_id(self, token: str) -> str:
        prompt_id = await self.prompts.store.prompt_of_link(secret_hash(token))
        if prompt_id is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, "no such answer link")
        return prompt_id
