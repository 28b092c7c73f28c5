"""Every word the app shows, in English and Persian (which lays the app out right-to-left)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

ENGLISH, PERSIAN = "en", "fa"
LANGUAGES = {ENGLISH: "English", PERSIAN: "فارسی"}
RTL_LANGUAGES = {PERSIAN}

_EN = {
    "app_title": "Ask User",
    "app_description": "Answer the questions your AI agents stop to ask.",
    "status_answered_by_link": "Answered from a link",
    "link_title": "A question for you",
    "link_sent": "Sent. The agent has your answer.",
    "link_dismissed": "Dismissed. The agent goes on without your answer.",
    "link_your_answer": "Your answer",
    "link_missing": "Choose an answer for: {questions}",
    "link_confirm": "Answer “{label}”?",
    "link_other_choice": "Choose something else",
    "link_unknown": "This link is unknown: it may be mistyped, or from another gateway.",
    "link_too_many": "Too many wrong links from this address. Wait a minute, then try again.",
    "link_stale": "This page was open while the question changed. Here it is as it is now.",
    "submit": "Submit",
    "dismiss": "Dismiss",
    "answer_anyway": "Answer anyway",
    "late_card": "Its time ran out, but your answer still reaches the agent",
    "draft_from": "Chosen on {device} · not sent yet",
    "draft_in_another_window": "Chosen in another window · not sent yet",
    "draft_on_another_device": "Chosen on another device · not sent yet",
    "send_late": "Send",
    "cancel_late": "Cancel",
    "late_waiting": "Answered late · waiting for the agent",
    "late_delivered": "Answered late · the agent has it",
    "other": "Other",
    "other_hint": "Your own answer",
    "show_preview": "Show preview",
    "hide_preview": "Hide preview",
    "choose_one": "Choose one",
    "choose_many": "Choose one or more",
    "time_left": "{time} left",
    "status_pending": "Waiting for you",
    "status_sending": "Sending…",
    "status_answered": "Answered",
    "status_answered_elsewhere": "Answered elsewhere",
    "status_dismissed": "Dismissed",
    "status_expired": "Expired",
    "status_cancelled": "Cancelled",
    "status_unavailable": "No longer available",
    "no_answer": "No answer",
    "conn_connected": "Connected",
    "conn_connecting": "Connecting…",
    "conn_reconnecting": "Offline: {url} does not answer — trying again in {seconds} s",
    "url_scheme": "The gateway URL must start with http:// or https://, e.g. "
    "http://192.168.1.20:8765 (this one is “{url}”).",
    "url_host": "The gateway URL has no address after “//”, e.g. http://192.168.1.20:8765 "
    "(this one is “{url}”).",
    "conn_unauthorized": "The gateway refused this device's token (revoked?). Open Settings and "
    "pair again.",
    "conn_unconfigured": "No gateway yet. Open Settings and pair with the code from "
    "`python -m app pair`.",
    "settings": "Settings",
    "gateway_url": "Gateway URL",
    "device_token": "Device token",
    "device_name": "Device name",
    "language": "Language",
    "save": "Save",
    "cancel": "Cancel",
    "clear_history": "Clear history",
    "clear_history_confirm": "Remove every answered, dismissed and expired summary from this "
    "device? Questions still waiting stay.",
    "clear": "Clear",
    "all_sessions": "All sessions",
    "session": "Session",
    "empty": "No questions yet. When an agent asks you something, it appears here.",
    "invalid_answer": "Check your answer: {detail}",
    "recommended": "Recommended",
    "dismissed_undo": "Dismissed — sent in {seconds} s",
    "answered_undo": "“{answer}” — sent in {seconds} s",
    "one_tap": "Answer a single question with one tap (with Undo)",
    "layout_setting": "Questions in this browser",
    "layout_auto": "By the window: cards on a phone, one at a time when wide",
    "layout_cards": "Every question stacked in its card",
    "layout_stepper": "One question at a time, in a panel at the bottom",
    "web_one_device": "Every tab and browser that opens this page is this one device. For "
    "another device of its own, install the app there and pair it, or start another copy of "
    "this page with its own folder: ASK_USER_APP_DATA=~/ask-user-2 python -m app --web --port "
    "8551 --no-gateway, then pair it.",
    "empty_history": "What you answer stays here, as a summary.",
    "show_older": "Show older ({count})",
    "step_of": "Question {n} of {count}",
    "more_waiting": "{count} more waiting",
    "stop_command": "{tool} would run",
    "stop_file": "The file",
    "stop_url": "The page",
    "stop_plan": "The plan",
    "stop_rule": "Allow always adds {rule}",
    "pick_waiting": "Choose which question to answer",
    "back": "Back",
    "next": "Next",
    "collapse_question": "Hide the question",
    "expand_question": "Show the question",
    "undo": "Undo",
    "connect_agent": "Connect an agent",
    "agent_url": "Gateway URL for agents",
    "agent_token_file": "Agent token file",
    "agent_env": "Agents read ASK_USER_GATEWAY_URL and ASK_USER_AGENT_TOKEN.",
    "copy": "Copy",
    "filter": "Filter by session",
    "connection": "Connection: {state}",
    "pair_title": "Pair with a gateway",
    "pair_intro": "Run `python -m app pair` where the gateway runs and scan its QR code with "
    "this phone's camera — or paste its link here, or type its address and code.",
    "pair_intro_web": "Run `python -m app pair` where the gateway runs, then paste its link "
    "here, or type its address and code.",
    "pair_link_or_url": "Pairing link or gateway URL",
    "pair_code": "Code",
    "pair": "Pair",
    "pairing": "Pairing…",
    "pair_confirm": "Pair this app with the gateway at {url}?",
    "pair_replaces": "It replaces the gateway this app uses now ({url}).",
    "paired": "Paired with {url}.",
    "choice_not_sent": "“{header}” was answered elsewhere (another tab or device) before your "
    "choice here was sent; what was sent is in the history.",
    "choice_expired": "“{header}” ran out of time before your choice here was sent; Answer "
    "anyway still sends it to the agent.",
    "pair_failed_input": "Enter the gateway's address (http://… or https://…) and the code.",
    "pair_failed_code": "That code is unknown, already used or expired. Make a new one with "
    "`python -m app pair`.",
    "pair_failed_limit": "Too many wrong codes. Wait a minute, then try again.",
    "pair_failed_network": "Cannot reach {url}. Is the gateway running, and can this device "
    "reach that address?",
    "pair_failed_gateway": "The gateway refused: {detail}",
    "manual_token": "Or connect with a device token",
    "prompt_gone": "That question is not on this device: it may be answered and cleared, or "
    "from another gateway.",
    "close": "Close",
}

_FA = {
    "status_answered_by_link": "با پیوند پاسخ داده شد",
    "link_title": "پرسشی برای شما",
    "link_sent": "فرستاده شد. پاسخ شما به عامل رسید.",
    "link_dismissed": "رد شد. عامل بدون پاسخ شما ادامه می‌دهد.",
    "link_your_answer": "پاسخ شما",
    "link_missing": "برای این‌ها پاسخی برگزینید: {questions}",
    "link_confirm": "پاسخ «{label}» فرستاده شود؟",
    "link_other_choice": "گزینهٔ دیگری برگزینید",
    "link_unknown": "این پیوند شناخته نیست: شاید نادرست نوشته شده یا از دروازهٔ دیگری است.",
    "link_too_many": "پیوندهای نادرست زیادی از این نشانی آمد. یک دقیقه صبر کنید و دوباره بکوشید.",
    "link_stale": "این صفحه باز بود که پرسش تغییر کرد. اینک همان‌گونه که هست.",
    "app_title": "پرسش از کاربر",
    "app_description": "به پرسش‌هایی که عامل‌های هوش مصنوعی‌تان می‌پرسند پاسخ دهید.",
    "submit": "ارسال",
    "dismiss": "رد کردن",
    "answer_anyway": "با این حال پاسخ بده",
    "late_card": "وقتش تمام شد، ولی پاسخ شما هنوز به عامل می‌رسد",
    "draft_from": "انتخاب‌شده در {device} · هنوز ارسال نشده",
    "draft_in_another_window": "انتخاب‌شده در پنجره‌ای دیگر · هنوز ارسال نشده",
    "draft_on_another_device": "انتخاب‌شده در دستگاهی دیگر · هنوز ارسال نشده",
    "send_late": "ارسال",
    "cancel_late": "انصراف",
    "late_waiting": "پاسخ دیرهنگام · در انتظار عامل",
    "late_delivered": "پاسخ دیرهنگام · عامل آن را دریافت کرد",
    "other": "دیگر",
    "other_hint": "پاسخ خودتان",
    "show_preview": "نمایش پیش‌نمایش",
    "hide_preview": "بستن پیش‌نمایش",
    "choose_one": "یکی را انتخاب کنید",
    "choose_many": "یک یا چند گزینه را انتخاب کنید",
    "time_left": "{time} مانده",
    "status_pending": "در انتظار شما",
    "status_sending": "در حال ارسال…",
    "status_answered": "پاسخ داده شد",
    "status_answered_elsewhere": "در دستگاه دیگری پاسخ داده شد",
    "status_dismissed": "رد شد",
    "status_expired": "منقضی شد",
    "status_cancelled": "لغو شد",
    "status_unavailable": "دیگر در دسترس نیست",
    "no_answer": "بی‌پاسخ",
    "conn_connected": "متصل",
    "conn_connecting": "در حال اتصال…",
    "conn_reconnecting": "آفلاین: {url} پاسخ نمی‌دهد — تلاش دوباره تا {seconds} ثانیه دیگر",
    "url_scheme": "نشانی دروازه باید با `http://` یا `https://` آغاز شود، مانند "
    "`http://192.168.1.20:8765` (این نشانی «{url}» است).",
    "url_host": "نشانی دروازه پس از «//» نشانی ندارد، مانند `http://192.168.1.20:8765` "
    "(این نشانی «{url}» است).",
    "conn_unauthorized": "دروازه توکن این دستگاه را نپذیرفت (لغو شده؟). تنظیمات را باز کنید و "
    "دوباره جفت کنید.",
    "conn_unconfigured": "هنوز دروازه‌ای تنظیم نشده است. تنظیمات را باز کنید و با کد "
    "`python -m app pair` جفت کنید.",
    "settings": "تنظیمات",
    "gateway_url": "نشانی دروازه",
    "device_token": "توکن دستگاه",
    "device_name": "نام دستگاه",
    "language": "زبان",
    "save": "ذخیره",
    "cancel": "انصراف",
    "clear_history": "پاک کردن تاریخچه",
    "clear_history_confirm": "همهٔ خلاصه‌های پاسخ‌داده، ردشده و منقضی از این دستگاه پاک شوند؟ "
    "پرسش‌های در انتظار می‌مانند.",
    "clear": "پاک کن",
    "all_sessions": "همهٔ گفتگوها",
    "session": "گفتگو",
    "empty": "هنوز پرسشی نیست. وقتی عاملی از شما چیزی بپرسد، اینجا نمایش داده می‌شود.",
    "invalid_answer": "پاسخ را بررسی کنید: {detail}",
    "recommended": "پیشنهادی",
    "dismissed_undo": "رد شد — ارسال تا {seconds} ثانیه دیگر",
    "answered_undo": "«{answer}» — ارسال تا {seconds} ثانیه دیگر",
    "one_tap": "پاسخ به یک پرسش تکی با یک لمس (با امکان برگرداندن)",
    "layout_setting": "پرسش‌ها در این مرورگر",
    "layout_auto": "بر پایهٔ پنجره: کارت‌ها در گوشی، یکی‌یکی در پنجرهٔ پهن",
    "layout_cards": "همهٔ پرسش‌ها روی هم در کارتشان",
    "layout_stepper": "هر بار یک پرسش، در قابی پایین صفحه",
    "web_one_device": "هر زبانه و هر مرورگری که این صفحه را باز کند، همین یک دستگاه است. برای "
    "دستگاهی جدا، برنامه را آن‌جا نصب و جفت کنید، یا نسخهٔ دیگری از این صفحه را با پوشهٔ "
    "خودش اجرا کنید: `ASK_USER_APP_DATA=~/ask-user-2 python -m app --web --port 8551 "
    "--no-gateway` و سپس آن را جفت کنید.",
    "empty_history": "پاسخ‌های شما این‌جا به شکل خلاصه می‌مانند.",
    "show_older": "نمایش قدیمی‌ترها ({count})",
    "step_of": "پرسش {n} از {count}",
    "more_waiting": "{count} پرسش دیگر در انتظار",
    "stop_command": "{tool} اجرا می‌کند",
    "stop_file": "پرونده",
    "stop_url": "صفحه",
    "stop_plan": "برنامه",
    "stop_rule": "«همیشه مجاز» این را می‌افزاید: {rule}",
    "pick_waiting": "انتخاب پرسشی برای پاسخ",
    "back": "قبلی",
    "next": "بعدی",
    "collapse_question": "پنهان کردن پرسش",
    "expand_question": "نمایش پرسش",
    "undo": "برگرداندن",
    "connect_agent": "اتصال یک عامل",
    "agent_url": "نشانی دروازه برای عامل‌ها",
    "agent_token_file": "پروندهٔ توکن عامل",
    "agent_env": "عامل‌ها `ASK_USER_GATEWAY_URL` و `ASK_USER_AGENT_TOKEN` را می‌خوانند.",
    "copy": "رونوشت",
    "filter": "صافی گفتگو",
    "connection": "اتصال: {state}",
    "pair_title": "جفت شدن با دروازه",
    "pair_intro": "روی رایانهٔ دروازه `python -m app pair` را اجرا کنید و کد QR آن را با دوربین "
    "گوشی بخوانید — یا پیوندش را اینجا بچسبانید، یا نشانی و کد را بنویسید.",
    "pair_intro_web": "روی رایانهٔ دروازه `python -m app pair` را اجرا کنید، سپس پیوندش را "
    "اینجا بچسبانید، یا نشانی و کد را بنویسید.",
    "pair_link_or_url": "پیوند جفت‌سازی یا نشانی دروازه",
    "pair_code": "کد",
    "pair": "جفت کن",
    "pairing": "در حال جفت شدن…",
    "pair_confirm": "این برنامه با دروازهٔ {url} جفت شود؟",
    "pair_replaces": "جای دروازه‌ای را که اکنون به کار می‌رود ({url}) می‌گیرد.",
    "paired": "با {url} جفت شد.",
    "choice_not_sent": "به «{header}» پیش از فرستادن انتخاب شما در اینجا، جای دیگری (زبانه یا "
    "دستگاهی دیگر) پاسخ داده شد؛ آنچه فرستاده شد در تاریخچه است.",
    "choice_expired": "وقت «{header}» پیش از فرستادن انتخاب شما تمام شد؛ «با این حال پاسخ بده» "
    "آن را هنوز به عامل می‌رساند.",
    "pair_failed_input": "نشانی دروازه (`http://…` یا `https://…`) و کد را وارد کنید.",
    "pair_failed_code": "این کد ناشناخته، به‌کاررفته یا منقضی است. با `python -m app pair` کد "
    "تازه‌ای بسازید.",
    "pair_failed_limit": "کدهای نادرست زیادی وارد شد. یک دقیقه صبر کنید و دوباره بکوشید.",
    "pair_failed_network": "به {url} دسترسی نیست. دروازه روشن است و این دستگاه به آن نشانی می‌رسد؟",
    "pair_failed_gateway": "دروازه نپذیرفت: {detail}",
    "manual_token": "یا با توکن دستگاه وصل شوید",
    "prompt_gone": "این پرسش روی این دستگاه نیست: شاید پاسخ داده و پاک شده، یا از دروازهٔ "
    "دیگری است.",
    "close": "بستن",
}

_TABLES = {ENGLISH: _EN, PERSIAN: _FA}


@dataclass(frozen=True)
class Strings:
    language: str = ENGLISH

    @property
    def rtl(self) -> bool:
        return self.language in RTL_LANGUAGES

    def __call__(self, key: str, **values: object) -> str:
        """The text for `key`; integers put in it are written with the language's digits. In
        a right-to-left language each value put in, and each code of the text (marked with
        backticks, never shown), is isolated in its own direction: a command, a path or a
        URL inside Persian read scrambled (the `--` pieces moved, a leading `/` at the end)."""
        text = _TABLES.get(self.language, _EN).get(key, _EN[key])
        text = _CODE.sub(lambda code: self.code(code[1]), text)  # marks, not for reading
        return text.format(**{k: self._put_in(v) for k, v in values.items()})

    def _put_in(self, value: object) -> str:
        if isinstance(value, int):
            return self.digits(value)  # the app's own number: in the language's digits
        text = str(value)
        if self.rtl and any(unicodedata.bidirectional(c) == "L" for c in text):
            return f"{FIRST_STRONG_ISOLATE}{text}{POP_ISOLATE}"  # a URL, a name: its own run
        return text

    def code(self, text: str) -> str:
        """A command, path or URL as its own left-to-right run, whatever the language."""
        return f"{LTR_ISOLATE}{text}{POP_ISOLATE}" if self.rtl else text

    def digits(self, value: object) -> str:
        """`value` as text, with Persian digits in the Persian UI (the app's own numbers only:
        what an agent or a person wrote is never rewritten)."""
        text = str(value)
        return text.translate(_PERSIAN_DIGITS) if self.language == PERSIAN else text

    def countdown(self, seconds: float) -> str:
        return self.digits(countdown(seconds))


_PERSIAN_DIGITS = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")
# Unicode's directional isolates (UAX #9): a run laid out in its own direction, as a unit.
LTR_ISOLATE, FIRST_STRONG_ISOLATE, POP_ISOLATE = "\u2066", "\u2068", "\u2069"
_CODE = re.compile(r"`([^`]+)`")  # code in a table's text: shown without the marks


def countdown(seconds: float) -> str:
    """m:ss, rounded up so 0:00 means the time is really over."""
    whole = max(0, int(-(-seconds // 1)))
    return f"{whole // 60}:{whole % 60:02d}"
