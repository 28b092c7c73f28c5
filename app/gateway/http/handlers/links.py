"""Answer links: the page for any browser, and its form (the token in the path is the
credential)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse, Response

from app.protocol import (
    ErrorCode,
    PromptRecord,
    ProtocolError,
)
from app.protocol.quick import quick_options
from app.protocol.selection import QuestionAnswer
from app.protocol.strings import Strings

from ...core.notify import LINK_PATH
from ..answer_page import PageState, language_of, render, security_headers
from ..routing import Call, header, query_params

log = logging.getLogger("ask_user.gateway")


# ---- answer links: a page for any browser (the token in the path is the credential) --------


async def answer_page(call: Call) -> Response:
    """The prompt as a page with a form; `?choose=N` (one single-select question) shows that
    option with one confirm button. A GET never decides: link previews and mail scanners
    fetch links."""

    async def show(record: PromptRecord, strings: Strings) -> PageState:
        return _choice_state(call, record)

    return await _link_page(call, show)


async def answer_from_page(call: Call) -> Response:
    """The page's form answers or dismisses, as a device would (first answer wins; the same
    form sent again is safe); `?choose=N` with no body answers with that option (what a
    notification's button sends)."""

    async def decide(record: PromptRecord, strings: Strings) -> PageState:
        gateway, token = call.gateway, call.params["token"]
        if query_params(call.scope).get("engaged"):  # the page's script: the person chooses
            await gateway.links.engaged(token)
            return PageState()
        choice = _choice_state(call, record)
        if choice.choose is not None:
            label = record.questions[0].options[choice.choose - 1].label
            await gateway.links.answer(token, {record.questions[0].id: [label]}, choice.attempt)
            return PageState(notice=strings("link_sent"))
        form = _form(call.raw)
        attempt = (form.get("attempt") or [""])[0][:64] or secrets.token_urlsafe(9)
        if (form.get("action") or [""])[0] == "dismiss":
            await gateway.links.dismiss(token, attempt)
            return PageState(notice=strings("link_dismissed"))
        selection = _form_selection(record, form)
        chosen = {qid: list(a.chosen) for qid, a in selection.items()}
        other = {qid: a.other for qid, a in selection.items()}
        if missing := [a.question.header for a in selection.values() if not a.complete]:
            listed = ", ".join(missing)
            raise _Refill(PageState(strings("link_missing", questions=listed), chosen, other))
        answers = {qid: a.values() for qid, a in selection.items()}
        # A late answer when the page offered one (or this is one sent again); else an answer.
        late = record.late_answer is not None or record.late_answer_open(gateway.clock.now_ms())
        try:
            if late:
                await gateway.links.late_answer(token, answers, attempt)
            else:
                await gateway.links.answer(token, answers, attempt)
        except ProtocolError as exc:
            if exc.code != ErrorCode.INVALID_ANSWER:
                raise
            raise _Refill(PageState(exc.message, chosen, other), 422) from None
        return PageState(notice=strings("link_sent"))

    return await _link_page(call, decide)


class _Refill(Exception):
    """The form comes back as it was sent, with what is missing or wrong."""

    def __init__(self, state: PageState, status: int = 422) -> None:
        self.state, self.status = state, status


async def _link_page(
    call: Call, decide: Callable[[PromptRecord, Strings], Awaitable[PageState]]
) -> Response:
    """Find the prompt of the link (a wrong token counts against the address, like a pairing
    code), let `decide` act, and render what is true now; every outcome is a page."""
    strings = Strings(language_of(header(call.scope, b"accept-language")))
    gateway, token = call.gateway, call.params["token"]
    guesses, now = call.state.link_guesses, gateway.clock.now_ms()
    action = LINK_PATH.format(token=token)
    record = await gateway.links.prompt_of(token)
    status, state = 200, PageState()
    try:
        if record is None:
            guesses.refuse_when_limited(call.client_address, now)
            guesses.failed(call.client_address, now)
            raise ProtocolError(ErrorCode.NOT_FOUND, strings("link_unknown"))
        state = await decide(record, strings)
    except _Refill as refill:
        status, state = refill.status, refill.state
    except ProtocolError as exc:
        status = exc.http_status
        if exc.code == ErrorCode.TOO_MANY_ATTEMPTS:
            state = PageState(strings("link_too_many"))
        elif exc.code in (ErrorCode.ALREADY_RESOLVED, ErrorCode.IDEMPOTENCY_CONFLICT):
            state = PageState()  # the page says what became of it
        else:
            state = PageState(exc.message)
    if record is not None:
        record = await gateway.links.prompt_of(token)  # as it is now
        if not state.attempt:
            state.attempt = secrets.token_urlsafe(9)
    left = record.seconds_left(now) if record is not None else 0.0
    late_open = record is not None and record.late_answer_open(now)
    nonce = secrets.token_urlsafe(12)
    return HTMLResponse(
        render(record, action, strings, state, nonce, left, late_open),
        status_code=status,
        headers=security_headers(nonce),
    )


def _choice_state(call: Call, record: PromptRecord) -> PageState:
    """`?choose=N`: 1-based, for a prompt of one single-select question; else ignored."""
    value = query_params(call.scope).get("choose")
    [first, *more] = record.questions
    if value is None or more or first.multi_select or not value.isascii() or not value.isdigit():
        return PageState()
    number = int(value[:2])
    if number not in {n for n, _ in quick_options(record)}:  # never "allow always" (v1.5)
        return PageState()
    return PageState(choose=number, attempt=f"choose:{number}")


def _form(raw: bytes) -> dict[str, list[str]]:
    try:
        return parse_qs(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=200)
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError(ErrorCode.INVALID_ANSWER, "the form could not be read") from None


def _form_selection(record: PromptRecord, form: dict[str, list[str]]) -> dict[str, QuestionAnswer]:
    """Each question as the form chose it, by the app's own selection rules (on one choice,
    words typed in Other replace the option)."""
    selection = {}
    for question in record.questions:
        answer = QuestionAnswer(question)
        labels = question.option_labels()
        for value in form.get(f"q.{question.id}", []):
            if value in labels:
                answer = answer.choose(value)
        selection[question.id] = answer.set_other(
            (form.get(f"other.{question.id}") or [""])[0].strip()
        )
    return selection
