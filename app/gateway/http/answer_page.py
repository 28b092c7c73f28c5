"""The answer page behind an answer link (`/a/<token>`): server-rendered HTML for any phone
browser, without the app and without JavaScript (a few inline lines only keep Submit off
until every question has an answer). Pure: a record and what happened in, HTML out.

All questions are stacked; each option is a full-width row at least 48 px tall whose label and
description wrap at any width; every question has an Other field; light and dark follow the
system; each question's text keeps its own direction (`dir="auto"`), the chrome follows the
person's language (English or Persian, the app's own strings).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from app.protocol import PromptRecord
from app.protocol.asker import asker_label
from app.protocol.strings import ENGLISH, PERSIAN, Strings
from app.protocol.text import shown_label


def language_of(accept_language: str | None) -> str:
    """Persian when the browser prefers it to English, else English (`Accept-Language`)."""
    best, best_q = ENGLISH, -1.0
    for part in (accept_language or "").split(","):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                continue
        base = tag.strip().lower().split("-")[0]
        if base in (ENGLISH, PERSIAN) and q > best_q:
            best, best_q = base, q
    return best


@dataclass
class PageState:
    """What the page says beside the prompt itself."""

    notice: str = ""  # a sentence at the top (sent, dismissed, what is missing, ...)
    chosen: dict[str, list[str]] = field(default_factory=dict)  # to keep a refused form's picks
    other: dict[str, str] = field(default_factory=dict)
    choose: int | None = None  # `?choose=N`: confirm that one option
    attempt: str = ""  # names this form's submission: a retry of it is safe


_CSS = """
:root { color-scheme: light dark; --bg: #f7f7f9; --card: #fff; --text: #1b1b1f;
  --muted: #5d5e66; --line: #d5d6dc; --accent: #3452c7; --accent-text: #fff; --pick: #e6ebff;
  --warn: #8a1c1c; }
@media (prefers-color-scheme: dark) { :root { --bg: #111216; --card: #1d1e24;
  --text: #e6e6ea; --muted: #a5a6ae; --line: #3a3b44; --accent: #9db0ff;
  --accent-text: #10131f; --pick: #283259; --warn: #ffb4ab; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 17px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 640px; margin: 0 auto; padding: 16px 12px 40px; }
h1 { font-size: 1.15rem; margin: 4px 0 2px; }
.status { color: var(--muted); margin: 0 0 12px; }
.asker { color: var(--muted); font-size: .85em; margin: 0 0 2px; overflow-wrap: anywhere; }
.notice { background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  padding: 12px 14px; margin: 0 0 12px; }
.notice.warn { color: var(--warn); border-color: var(--warn); }
fieldset { background: var(--card); border: 1px solid var(--line); border-radius: 14px;
  margin: 0 0 14px; padding: 12px; min-width: 0; }
legend { padding: 0; margin-bottom: 6px; float: left; width: 100%; }
legend + * { clear: both; }
.header { display: inline-block; font-size: .8rem; font-weight: 600; color: var(--muted);
  text-transform: uppercase; letter-spacing: .04em; }
.question { display: block; font-weight: 600; overflow-wrap: anywhere; }
.hint { color: var(--muted); font-size: .9rem; margin: 2px 0 8px; }
.option { display: flex; gap: 12px; align-items: flex-start; min-height: 48px;
  padding: 12px; margin: 6px 0; border: 1px solid var(--line); border-radius: 10px;
  cursor: pointer; }
.option:has(input:checked) { background: var(--pick); border-color: var(--accent); }
.option input { width: 22px; height: 22px; margin: 1px 0 0; flex: none;
  accent-color: var(--accent); }
.text { min-width: 0; overflow-wrap: anywhere; }
.desc { display: block; color: var(--muted); font-size: .92rem; }
.badge { display: inline-block; font-size: .75rem; padding: 1px 8px; margin-inline-start: 6px;
  border-radius: 999px; background: var(--accent); color: var(--accent-text); }
.other { display: block; margin-top: 8px; color: var(--muted); font-size: .9rem; }
.other input { display: block; width: 100%; min-height: 48px; margin-top: 4px; padding: 10px 12px;
  font: inherit; color: var(--text); background: var(--bg); border: 1px solid var(--line);
  border-radius: 10px; }
.actions { display: flex; gap: 10px; flex-wrap: wrap; }
button, .button { min-height: 48px; padding: 10px 20px; font: inherit; font-weight: 600;
  border-radius: 999px; border: 1px solid var(--line); background: var(--card);
  color: var(--text); cursor: pointer; text-decoration: none; display: inline-flex;
  align-items: center; }
button.primary { background: var(--accent); color: var(--accent-text); border-color: var(--accent);
  flex: 1 1 auto; justify-content: center; }
button:disabled { opacity: .45; cursor: not-allowed; }
button:focus-visible, input:focus-visible, .button:focus-visible { outline: 3px solid var(--accent);
  outline-offset: 2px; }
dl { margin: 0; } dt { font-weight: 600; overflow-wrap: anywhere; }
dd { margin: 0 0 10px; overflow-wrap: anywhere; }
"""

# Submit stays off until each question has a choice or words (the server says the same).
_SCRIPT = """
const form = document.querySelector("form.answer");
if (form) {
  const submit = form.querySelector("button.primary");
  const complete = () => [...form.querySelectorAll("fieldset")].every(
    (q) => q.querySelector("input:checked") || q.querySelector(".other input").value.trim());
  const update = () => { submit.disabled = !complete(); };
  form.addEventListener("input", update);
  update();
  // Choosing or typing on a waiting question tells the gateway, at most every 30 s: with
  // little time left, the deadline moves (docs/PROTOCOL.md v1.4).
  let told = -Infinity;
  form.addEventListener("input", () => {
    if (!form.dataset.pending || performance.now() - told < 30000) return;
    told = performance.now();
    // (getAttribute: the form's buttons named "action" hide its .action property)
    const url = form.getAttribute("action") + "?engaged=1";
    fetch(url, { method: "POST", credentials: "omit" }).catch(() => {});
  });
}
"""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _label_parts(label: str, strings: Strings) -> str:
    """An agent's "(Recommended)" becomes a badge, as in the app; the label itself goes back
    unchanged."""
    shown, recommended = shown_label(label)
    badge = f'<span class="badge">{_e(strings("recommended"))}</span>' if recommended else ""
    return f'<span class="label" dir="auto">{_e(shown)}</span>{badge}'


def _question(record: PromptRecord, index: int, state: PageState, strings: Strings) -> str:
    question = record.questions[index]
    kind = "checkbox" if question.multi_select else "radio"
    chosen = state.chosen.get(question.id, [])
    rows = []
    for option in question.options:
        checked = " checked" if option.label in chosen else ""
        description = (
            f'<span class="desc" dir="auto">{_e(option.description)}</span>'
            if option.description
            else ""
        )
        rows.append(
            f'<label class="option"><input type="{kind}" name="q.{_e(question.id)}" '
            f'value="{_e(option.label)}"{checked} aria-describedby="h{index}">'
            f'<span class="text">{_label_parts(option.label, strings)}{description}</span>'
            "</label>"
        )
    other = _e(state.other.get(question.id, ""))
    hint = strings("choose_many" if question.multi_select else "choose_one")
    return (
        f'<fieldset><legend><span class="header" dir="auto">{_e(question.header)}</span>'
        f'<span class="question" dir="auto">{_e(question.question)}</span></legend>'
        f'<p class="hint" id="h{index}">{_e(hint)}</p>{"".join(rows)}'
        f'<label class="other">{_e(strings("other"))}<input type="text" '
        f'name="other.{_e(question.id)}" value="{other}" dir="auto" maxlength="1000" '
        f'placeholder="{_e(strings("other_hint"))}" autocomplete="off"></label></fieldset>'
    )


def _answers(record: PromptRecord, strings: Strings) -> str:
    rows = []
    late = record.late_answer
    answers = record.answers or (late.answers if late is not None else {})
    for question in record.questions:
        given = answers.get(question.id) or []
        answer = ", ".join(given) if given else strings("no_answer")
        rows.append(
            f'<dt dir="auto">{_e(question.header)} — {_e(question.question)}</dt>'
            f'<dd dir="auto">{_e(answer)}</dd>'
        )
    return f"<dl>{''.join(rows)}</dl>"


def _answer_form(
    record: PromptRecord, action: str, state: PageState, strings: Strings, late: bool
) -> str:
    """Every question of the prompt, and Submit and Dismiss; `late` (answered anyway after it
    ended, v1.4): Send only, and not marked pending (its choosing moves no deadline)."""
    questions = "".join(_question(record, i, state, strings) for i in range(len(record.questions)))
    pending = "" if late else ' data-pending="1"'
    send = strings("send_late" if late else "submit")
    button = f'<button type="submit" name="action" value="dismiss">{_e(strings("dismiss"))}'
    dismiss = "" if late else button + "</button>"
    return (
        f'<form class="answer" method="post" action="{_e(action)}"{pending}>'
        f'<input type="hidden" name="attempt" value="{_e(state.attempt)}">{questions}'
        '<div class="actions"><button class="primary" type="submit" name="action" '
        f'value="answer">{_e(send)}</button>{dismiss}</div></form>'
    )


def status_line(record: PromptRecord, strings: Strings) -> str:
    if record.status == "answered":
        by_link = record.resolved_by is not None and record.resolved_by.kind == "link"
        return strings("status_answered_by_link" if by_link else "status_answered_elsewhere")
    return strings(f"status_{record.status}")


def render(
    record: PromptRecord | None,
    action: str,
    strings: Strings,
    state: PageState,
    nonce: str,
    seconds_left: float = 0,
    late_open: bool = False,
) -> str:
    """The whole page: the form while pending (or, `late_open`, for an answer anyway after it
    expired or its run stopped: v1.4), else what became of the prompt."""
    body: list[str] = []
    if state.notice:
        warn = " warn" if record is None or record.is_pending else ""
        body.append(f'<p class="notice{warn}" role="status">{_e(state.notice)}</p>')
    if record is not None:
        first = record.questions[0]
        title = first.header
        if record.is_pending:
            line = strings("time_left", time=strings.countdown(seconds_left))
        elif late_open:
            line = strings("late_card")
        else:
            line = status_line(record, strings)
        asker = asker_label(record.session_key, record.agent_id)
        body.insert(
            0,
            f'<p class="asker" dir="auto">{_e(asker)}</p><h1 dir="auto">{_e(title)}</h1>'
            f'<p class="status">{_e(line)}</p>',
        )
        if record.is_pending and state.choose is not None:
            option = first.options[state.choose - 1]
            body.append(
                f'<fieldset><legend><span class="question" dir="auto">{_e(first.question)}'
                f'</span></legend><form method="post" action="{_e(action)}?choose='
                f'{state.choose}"><div class="actions"><button class="primary" type="submit">'
                f"{_e(strings('link_confirm', label=option.label))}</button></div></form>"
                f'<p><a class="button" href="{_e(action)}">{_e(strings("link_other_choice"))}'
                "</a></p></fieldset>"
            )
        elif record.is_pending or late_open:
            body.append(_answer_form(record, action, state, strings, late=not record.is_pending))
        elif record.status == "answered":
            body.append(_answers(record, strings))
        elif record.late_answer is not None:
            said = "late_delivered" if record.late_answer.delivered_at else "late_waiting"
            body.append(f'<p class="status">{_e(strings(said))}</p>')
            body.append(_answers(record, strings))
    page_title = strings("link_title") if record is None else record.questions[0].header
    direction = "rtl" if strings.rtl else "ltr"
    return (
        f'<!doctype html><html lang="{strings.language}" dir="{direction}"><head>'
        '<meta charset="utf-8"><meta name="viewport" content="width=device-width, '
        'initial-scale=1"><meta name="robots" content="noindex"><meta name="referrer" '
        f'content="no-referrer"><title>{_e(page_title)} · {_e(strings("app_title"))}</title>'
        f'<style nonce="{nonce}">{_CSS}</style></head><body><main>{"".join(body)}</main>'
        f'<script nonce="{nonce}">{_SCRIPT}</script></body></html>'
    )


def security_headers(nonce: str) -> dict[str, str]:
    """No script or style but ours, no framing, the capability never sent on as a Referer,
    nothing cached or indexed."""
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
            "connect-src 'self'; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        ),
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Robots-Tag": "noindex",
        "X-Content-Type-Options": "nosniff",
    }
