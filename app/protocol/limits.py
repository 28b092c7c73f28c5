"""Every limit of the contract, named once (docs/PROTOCOL.md "Validating a prompt" and friends)."""

MIN_QUESTIONS = 1
MAX_QUESTIONS = 3
# A prompt made from a program's own question tool (`questionTool`, PROTOCOL v1.5: Claude's
# AskUserQuestion) carries what that tool allows: four questions, longer texts, previews.
MAX_PROGRAM_QUESTIONS = 4
MAX_PROGRAM_LABEL_CHARS = 300
MAX_PROGRAM_DESCRIPTION_CHARS = 2000
MAX_PREVIEW_CHARS = 3000  # an option's preview (a mockup, code): longer ones are cut, marked
MIN_OPTIONS = 2
MAX_OPTIONS = 4

QUESTION_ID_PATTERN = r"^[a-z][a-z0-9_]*$"
MAX_QUESTION_ID_CHARS = 64
MAX_HEADER_CHARS = 12
MAX_QUESTION_CHARS = 1000
MAX_LABEL_CHARS = 64
MAX_DESCRIPTION_CHARS = 200

DEFAULT_TIMEOUT_SECONDS = 900
MIN_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 3600
# The person is answering (docs/PROTOCOL.md v1.4): under this much left, a choice or a word
# typed moves the deadline to this much from now, never more than the most past the deadline
# the prompt was created with; a device says so at most once per the interval.
ENGAGED_GRACE_SECONDS = 120
MAX_ENGAGED_EXTENSION_SECONDS = 600
ENGAGED_EVERY_SECONDS = 30
LATE_CLAIM_LEASE_SECONDS = 120  # a claimed late answer comes back if not confirmed by then
MAX_LATE_CLAIM_LEASE_SECONDS = 600
LATE_ANSWER_SECONDS = 24 * 3600  # an expired or run-stopped prompt takes an answer this long

MIN_SESSION_KEY_CHARS = 1
MAX_SESSION_KEY_CHARS = 200
MAIN_SESSION_KIND = "main"
MAX_IDENTIFIER_CHARS = 200  # agentId, runId, requestId, deviceId, idempotencyKey
MAX_ANSWER_VALUE_CHARS = 2000
MAX_REPLY_CHARS = 8000

MAX_BODY_BYTES = 64 * 1024
DEFAULT_EVENTS_WAIT_SECONDS = 25
DEFAULT_RESULT_WAIT_SECONDS = 30
MAX_WAIT_SECONDS = 60
DEFAULT_EVENTS_LIMIT = 100
DEFAULT_LIST_LIMIT = 100
MAX_LIMIT = 500

PROMPT_RETENTION_DAYS = 30
EVENT_RETENTION_HOURS = 24

PAIRING_CODE_SECONDS = 600  # a pairing code is single-use and lives 10 minutes
MAX_FAILED_PAIRINGS_PER_MINUTE = 10  # from one address; then 429 until the minute passes
# Wrong codes tried, from anywhere, while one code is live; past it that code is spent. With
# 8 characters of a 32-letter alphabet (40 bits), a guess succeeds with p < 1e-9.
MAX_WRONG_GUESSES_PER_CODE = 1000
MIN_TOKEN_CHARS = 16  # tokens named in the environment; shorter ones are refused at start-up
MAX_DEVICE_NAME_CHARS = 64
MAX_PERSON_NAME_CHARS = 64
MAX_URL_CHARS = 2000


def clamp_timeout(seconds: int | None) -> int:
    """A prompt's timeout as the gateway keeps it: the default when absent, else clamped."""
    if seconds is None:
        return DEFAULT_TIMEOUT_SECONDS
    return max(MIN_TIMEOUT_SECONDS, min(MAX_TIMEOUT_SECONDS, seconds))


# `/mcp` sessions (#39): one agent token, or one person's tokens together, can only use up its
# own share; a session with no request in flight (no call waiting, no open stream) ends after
# the idle time, and the whole process holds at most MAX_MCP_SESSIONS (each costs ~40 KB).
# Pending prompts: no person answers more at once; one agent token that asks without end is
# refused (429 too_many_pending) before it fills the store for everyone (#52).
MAX_PENDING_PER_TOKEN = 100
MAX_PENDING_PER_PERSON = 200
# Drafts: a person types; the app sends one a quarter second after the last change. A device
# gets a burst of this many, refilled at this rate (429 too_many_drafts past it).
DRAFT_BURST = 20
DRAFTS_PER_SECOND = 5
MAX_MCP_SESSIONS_PER_TOKEN = 32
MAX_MCP_SESSIONS_PER_PERSON = 64
MAX_MCP_SESSIONS = 4096
MCP_SESSION_IDLE_SECONDS = 10 * 60
