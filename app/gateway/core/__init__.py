"""The gateway's core: prompts and the people they belong to, without HTTP.

`service` (the prompt state machine: pending → one terminal status, first change wins),
`feed` and `waiters` (devices' long-polls and agents' result waits), `deadlines` and `clock`,
`devices`, `people` and `auth` (who may call), `guesses` (rate limits for codes and links),
`notify` (announcing prompts, answer links), `ids`, and `eager` (a coroutine run as far as it
goes at once: with SQLite, to its end). It deals in records, pages and bytes;
it imports the store's interface (store/storage.py), never an implementation, and never http.
"""
