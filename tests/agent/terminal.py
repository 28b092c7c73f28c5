"""An agent program's interactive terminal UI, run as its users run it: in tmux (a 200×50
terminal), keys sent with `send-keys`, the screen read with `capture-pane`. Each program gets a
tmux server of its own (`-L`), so tests never share one."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support import wait_until

MARKERS = ("❯", "›")  # the chosen line of a menu: Claude Code's, Codex's


class Terminal:
    """One program in its own tmux server; `screen()` is what a person sees now."""

    def __init__(self, command: Sequence[str], env: dict[str, str], cwd: Path) -> None:
        tmux = shutil.which("tmux")
        assert tmux, "these tests need tmux (apt-get install -y tmux)"
        self.tmux = [tmux, "-L", f"askuser-{uuid.uuid4().hex[:12]}"]
        # `env -i`: the program sees exactly `env`, not the tmux server's environment.
        program = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *command]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", "agent", "-x", "200", "-y", "50",
             "-c", str(cwd), *program],
            check=True, env={"PATH": os.environ.get("PATH", ""), "TERM": "xterm-256color"},
        )  # fmt: skip
        self.pid = int(self._tmux("display-message", "-p", "-t", "agent", "#{pane_pid}"))

    def _tmux(self, *args: str) -> str:
        done = subprocess.run([*self.tmux, *args], capture_output=True, text=True, timeout=30)
        return done.stdout.strip()

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "agent")

    def keys(self, *keys: str) -> None:
        """Named keys (Enter, Up, Escape, …), one at a time."""
        for key in keys:
            self._tmux("send-keys", "-t", "agent", key)

    def press_until(self, key: str, condition: Callable[[str], object], tries: int = 5) -> str:
        """A key whose escape sequence a loaded machine may split (Shift+Tab is ESC [ Z: the
        program reads a lone Esc and drops the rest), pressed again until `condition` holds."""
        for _ in range(tries):
            self.keys(key)
            try:
                return str(wait_until(lambda: condition(s := self.screen()) and s, 3, 0.1))
            except AssertionError:
                continue
        return self.wait_for(condition, 1)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "agent", "-l", text)

    def wait_for(self, condition: Callable[[str], object], timeout: float = 60) -> str:
        """The screen once `condition(screen)` holds; on timeout, fails showing the screen."""
        try:
            return str(wait_until(lambda: condition(s := self.screen()) and s, timeout, 0.25))
        except AssertionError:
            shown = self.screen()
            raise AssertionError(f"the screen never showed it; it shows:\n{shown}") from None

    def choose(self, wanted: str, timeout: float = 60) -> None:
        """In a menu on screen (the line with `❯`, or Codex's `›`, is chosen), choose the line
        holding `wanted`: by its number when it has one (`2. Trust all`), else moving to it;
        then Enter. A digit, unlike an arrow key, has no escape sequence for a loaded machine
        to split (a lone ESC reads as Esc, which cancels the menu)."""
        screen = self.wait_for(lambda s: wanted in s, timeout)
        for _ in range(10):  # a menu drawn before it takes keys drops them: look, try again
            lines = [line for line in screen.splitlines() if line.strip()]
            to = next(i for i, line in enumerate(lines) if wanted in line)
            chosen = [i for i, line in enumerate(lines) if line.lstrip(" │")[:1] in MARKERS]
            at = min(chosen, key=lambda i: abs(i - to))  # the menu's, not a past request's
            number = re.match(r"\s*(?:[❯›]\s*)?(\d)\.\s", lines[to].lstrip(" │"))
            if at == to:
                self.keys("Enter")
            elif number:
                self.type(number.group(1))
            else:
                self.keys(*(["Down"] * (to - at) if to > at else ["Up"] * (at - to)))
            try:
                screen = self._changed_from(screen)
            except AssertionError:
                continue
            if wanted not in screen:
                return
        raise AssertionError(f"could not choose {wanted!r}; the screen shows:\n{screen}")

    def _changed_from(self, before: str, timeout: float = 3) -> str:
        return str(wait_until(lambda: (s := self.screen()) != before and s, timeout, 0.1))

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL to the program alone: it has no say, and its children are not told."""
        os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=30)
