"""A hook killed without a word still takes its question back.

Codex ends a hook it stops waiting for (Esc in its TUI) with SIGKILL: the hook runs no code
after that, so its card would stay on the phone with nobody waiting. So the hook starts this
guard first, a small process in a session of its own holding the read end of a pipe whose
write end only the hook holds. The hook writes `asked <prompt id>` once the gateway holds the
prompt, and `done` when it ends as it should; the pipe's end without `done` means the hook
died, and the guard cancels the prompt — or, killed before it learnt the id (its create may
still be on its way), every pending prompt of the hook's run, now and once more a moment later.

Run as `python -m app.agent.guard [run id]`, the gateway's address and token in its
environment (never on its command line, where `ps` shows them).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import IO

from app.protocol.local_gateway import AGENT_TOKEN_ENV, GATEWAY_URL_ENV

ASKED, DONE = "asked", "done"
IN_FLIGHT_SECONDS = 2.0  # a create sent just before the hook died is held by then


class Guard:
    """The hook's side: `start` first, `asked` once the prompt is held, `done` at a good end."""

    def __init__(self, gateway_url: str, token: str, run_id: str | None) -> None:
        self.env = {**os.environ, GATEWAY_URL_ENV: gateway_url, AGENT_TOKEN_ENV: token}
        self.run_id = run_id
        self.pipe: IO[bytes] | None = None

    def start(self) -> None:
        guard = subprocess.Popen(
            [sys.executable, "-m", "app.agent.guard", *([self.run_id] if self.run_id else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # never the program's pipe: it waits for its end
            stderr=subprocess.DEVNULL,
            env=self.env,
            start_new_session=True,  # a signal to our group does not reach it
        )
        self.pipe = guard.stdin

    def _say(self, line: str, last: bool = False) -> None:
        if self.pipe is None:
            return
        try:
            self.pipe.write(f"{line}\n".encode())
            self.pipe.flush()
            if last:
                self.pipe.close()
        except OSError:  # the guard is gone already: nothing it could do
            pass

    def asked(self, prompt_id: str) -> None:
        self._say(f"{ASKED} {prompt_id}")

    def done(self) -> None:
        self._say(DONE, last=True)


def main(run_id: str | None) -> int:
    prompt_id = None
    for line in sys.stdin:  # until the hook closes the pipe, or dies
        said, _, value = line.strip().partition(" ")
        if said == DONE:
            return 0
        if said == ASKED:
            prompt_id = value
    if prompt_id is None and run_id is None:
        return 0
    from .client import HttpAsker, settings

    async def cancel() -> None:
        async with HttpAsker(settings()) as asker:
            if prompt_id is not None:
                await asker.cancel(prompt_id)
                return
            for _ in range(2):
                await asker.cancel_run(str(run_id))
                await asyncio.sleep(IN_FLIGHT_SECONDS)

    asyncio.run(cancel())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
