"""Every word the app shows, in English and Persian (which lays the app out right-to-left)."""

from __future__ import annotations

from dataclasses import dataclass

ENGLISH, PERSIAN = "en", "fa"
LANGUAGES = {ENGLISH: "English", PERSIAN: "فارسی"}
RTL_LANGUAGES = {PERSIAN}

_EN = {
    "app_title": "Ask User",
    "submit": "Submit",
    "dismiss": "Dismiss",
    "other": "Other",
    "other_hint": "Your own answer",
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
    "conn_reconnecting": "Offline — reconnecting in {seconds} s",
    "conn_unauthorized": "The gateway refused this device's token. Open Settings and paste a "
    "device token.",
    "conn_unconfigured": "No gateway yet. Open Settings and enter its URL and a device token.",
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
    "undo": "Undo",
    "connect_agent": "Connect an agent",
    "agent_url": "Gateway URL for agents",
    "agent_token_file": "Agent token file",
    "agent_env": "Agents read ASK_USER_GATEWAY_URL and ASK_USER_AGENT_TOKEN.",
    "copy": "Copy",
    "filter": "Filter by session",
    "connection": "Connection: {state}",
}

_FA = {
    "app_title": "پرسش از کاربر",
    "submit": "ارسال",
    "dismiss": "رد کردن",
    "other": "دیگر",
    "other_hint": "پاسخ خودتان",
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
    "conn_reconnecting": "آفلاین — اتصال دوباره تا {seconds} ثانیه دیگر",
    "conn_unauthorized": "دروازه توکن این دستگاه را نپذیرفت. تنظیمات را باز کنید و توکن دستگاه را "
    "وارد کنید.",
    "conn_unconfigured": "هنوز دروازه‌ای تنظیم نشده است. در تنظیمات نشانی و توکن دستگاه را "
    "وارد کنید.",
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
    "undo": "برگرداندن",
    "connect_agent": "اتصال یک عامل",
    "agent_url": "نشانی دروازه برای عامل‌ها",
    "agent_token_file": "پروندهٔ توکن عامل",
    "agent_env": "عامل‌ها ASK_USER_GATEWAY_URL و ASK_USER_AGENT_TOKEN را می‌خوانند.",
    "copy": "رونوشت",
    "filter": "صافی گفتگو",
    "connection": "اتصال: {state}",
}

_TABLES = {ENGLISH: _EN, PERSIAN: _FA}


@dataclass(frozen=True)
class Strings:
    language: str = ENGLISH

    @property
    def rtl(self) -> bool:
        return self.language in RTL_LANGUAGES

    def __call__(self, key: str, **values: object) -> str:
        """The text for `key`; integers put in it are written with the language's digits."""
        table = _TABLES.get(self.language, _EN)
        shown = {k: self.digits(v) if isinstance(v, int) else v for k, v in values.items()}
        return table.get(key, _EN[key]).format(**shown)

    def digits(self, value: object) -> str:
        """`value` as text, with Persian digits in the Persian UI (the app's own numbers only:
        what an agent or a person wrote is never rewritten)."""
        text = str(value)
        return text.translate(_PERSIAN_DIGITS) if self.language == PERSIAN else text

    def countdown(self, seconds: float) -> str:
        return self.digits(countdown(seconds))


_PERSIAN_DIGITS = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")


def countdown(seconds: float) -> str:
    """m:ss, rounded up so 0:00 means the time is really over."""
    whole = max(0, int(-(-seconds // 1)))
    return f"{whole // 60}:{whole % 60:02d}"
