"""Notice that the program which started this process is gone, so its question leaves the phone.

Claude Code starts hooks in a session of their own (`setsid`, through `/bin/sh -c`): a
`kill -9` of Claude Code sends the hook no signal, and the shell stays alive as its parent, so
neither a signal nor the parent's pid tells. What does tell is the hook's stdout: it is a pipe
or socket that Claude Code holds the other end of, and when Claude Code dies that end closes
(POLLHUP on a socket, POLLERR on a pipe). The parent's pid is watched too, for callers that
start us directly (a parent that dies re-parents us, and `getppid()` changes).
"""

from __future__ import annotations

import os
import select
import signal
import stat
import sys
import threading
from typing import Protocol

CHECK_SECONDS = 0.5  # the question leaves the phone within a second or so of the caller's end


class Stoppable(Protocol):
    signum: int

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


def _hung_up(fd: int) -> bool:
    """Whether the reader at the other end of `fd` (a pipe or socket we write to) is gone."""
    if not hasattr(select, "poll"):  # Windows: no way to ask without writing
        return False
    poller = select.poll()
    poller.register(fd, 0)  # no events asked: POLLHUP, POLLERR and POLLNVAL are always told
    try:
        events = poller.poll(0)
    except OSError:
        return True
    return any(mask & (select.POLLHUP | select.POLLERR) for _, mask in events)


def _watchable(fd: int) -> bool:
    """Only a pipe or a socket has a reader that can go away; a file or a terminal has not."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def watch_caller(stop: Stoppable, fd: int | None = None) -> threading.Thread:
    """Set `stop` (as SIGHUP) once the caller is gone: our stdout's reader hung up or our
    parent changed. Returns the daemon thread doing it; it ends when `stop` is set."""
    fd = sys.stdout.fileno() if fd is None else fd
    watch_fd = _watchable(fd)
    parent = os.getppid()

    def watch() -> None:
        while not stop.is_set():
            if (watch_fd and _hung_up(fd)) or os.getppid() != parent:
                stop.signum = getattr(signal, "SIGHUP", signal.SIGTERM)
                stop.set()
                return
            stop.wait(CHECK_SECONDS)

    thread = threading.Thread(target=watch, name="ask-user-caller-watch", daemon=True)
    thread.start()
    return thread
