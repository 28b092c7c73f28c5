"""Unicode-aware text helpers: trimming, cutting without splitting a character, spotting "Other"."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

ZWJ = "\u200d"
ZWNJ = "\u200c"
_JOINERS = {ZWJ, ZWNJ}
_OTHER_LABEL = re.compile(r"^other\s*(?:$|[.!?…:;,/\-–—(])", re.IGNORECASE)


def _is_extend(ch: str) -> bool:
    """True for code points that belong to the character before them (UAX #29 'Extend'-like)."""
    cp = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")
        or ch in _JOINERS
        or 0xFE00 <= cp <= 0xFE0F  # variation selectors
        or 0xE0100 <= cp <= 0xE01EF
        or 0x1F3FB <= cp <= 0x1F3FF  # emoji skin-tone modifiers
        or 0xE0020 <= cp <= 0xE007F  # emoji tag sequences (subdivision flags)
    )


def _is_regional_indicator(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def grapheme_clusters(text: str) -> list[str]:
    """Split text into user-perceived characters, close enough to UAX #29 for labels.

    Keeps together: a base with its combining marks, emoji ZWJ sequences, skin tones,
    variation selectors, tag sequences, flag pairs and CR LF.
    """
    clusters: list[str] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        if text[i] == "\r" and j < n and text[j] == "\n":
            j += 1
        elif _is_regional_indicator(text[i]) and j < n and _is_regional_indicator(text[j]):
            j += 1
        while j < n:
            if text[j - 1] == ZWJ:
                j += 1  # the character joined by a ZWJ is part of the sequence
            elif _is_extend(text[j]):
                j += 1
            else:
                break
        clusters.append(text[i:j])
        i = j
    return clusters


def cut(text: str, max_chars: int) -> str:
    """At most `max_chars` code points, never splitting a user-perceived character.

    A trailing joiner (ZWJ/ZWNJ) or space left at the cut is dropped.
    """
    if len(text) <= max_chars:
        return text
    kept: list[str] = []
    used = 0
    for cluster in grapheme_clusters(text):
        if used + len(cluster) > max_chars:
            break
        kept.append(cluster)
        used += len(cluster)
    if not kept:  # one character longer than the limit on its own: keep its base
        kept = [text[:max_chars]]
    return "".join(kept).rstrip().rstrip("".join(_JOINERS)).rstrip()


def _invisible(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) == "Cf"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# The same rule as a JSON Schema pattern; `(?!\n)` keeps Python's `$` from matching before a
# final new line (ECMAScript's never does).
NO_CONTROL_PATTERN = "^[^\\u0000-\\u001f\\u007f]*(?!\\n)$"


def has_control(text: str) -> bool:
    """Whether `text` holds a control character (C0 or DEL): never part of an id or a key."""
    return _CONTROL.search(text) is not None


def is_blank(text: str) -> bool:
    """True when nothing in `text` shows: only spaces and invisible format characters (U+200B,
    U+FEFF, U+2060, soft hyphens...), which read as empty on every screen."""
    return all(_invisible(ch) for ch in text)


@functools.cache
def not_blank_pattern() -> str:
    """`not is_blank(text)` as a JSON Schema pattern (what the OpenAPI document says of a
    field that must not be blank): some character that is not invisible, by the same test,
    code point by code point. BMP characters as `\\uXXXX` (read alike by Python and
    ECMAScript), the few beyond as themselves. Made once, when a schema asks (~0.1 s)."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if _invisible(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])

    def one(code: int) -> str:
        return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)

    parts = (one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in ranges)
    return f"[^{''.join(parts)}]"


@functools.cache
def identifier_pattern() -> str:
    """An id or a key as a JSON Schema pattern: not blank (`not_blank_pattern`) and no control
    character anywhere (`has_control`)."""
    control = "\\u0000-\\u001f\\u007f"
    shows = not_blank_pattern()[:-1] + control + "]"
    return f"^[^{control}]*{shows}[^{control}]*(?!\\n)$"


def fold(text: str) -> str:
    """The comparison key for labels: trimmed, case-folded, NFC-normalised."""
    return unicodedata.normalize("NFC", text.strip()).casefold()


def is_authored_other(label: str) -> bool:
    """ "Other", "other…", "Other (please specify)", "Other: …" — but not "Other region"."""
    return bool(_OTHER_LABEL.match(label.strip()))


_RTL_BIDI = {"R", "AL"}
_LTR_BIDI = {"L"}


RECOMMENDED_SUFFIX = "(Recommended)"


def shown_label(label: str) -> tuple[str, bool]:
    """The label as shown, and whether the agent recommended it (the spec's suffix). The answer
    still carries the label exactly as the agent sent it."""
    stripped = label.rstrip()
    if stripped.endswith(RECOMMENDED_SUFFIX) and stripped != RECOMMENDED_SUFFIX:
        return stripped[: -len(RECOMMENDED_SUFFIX)].rstrip(), True
    return label, False


def is_rtl(text: str) -> bool:
    """True when the first strong directional character is right-to-left (Persian, Arabic)."""
    for ch in text:
        bidi = unicodedata.bidirectional(ch)
        if bidi in _RTL_BIDI:
            return True
        if bidi in _LTR_BIDI:
            return False
    return False
