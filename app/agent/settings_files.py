"""Reading and writing another program's settings file without harming it (#52).

`ask-user setup` edits files people keep by hand and programs rewrite on their own (Claude
Code rewrites `~/.claude.json` often). So: a file is read once and its text remembered; a
wrongly shaped one is refused with one line naming the file and the key; a write replaces the
file atomically only if nobody changed it since it was read (else the caller plans again);
a symlinked file (dotfiles) is written through to its target; a read-only one is refused; the
first backup (`<file>.bak`, the pre-setup original) is kept, never overwritten and never
followed if it is a symlink; a file that holds a secret, and its backup, are 0600.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

PRIVATE = 0o600


class SetupError(Exception):
    """A settings file we will not touch; the message names it and why."""


class ChangedMeanwhile(Exception):
    """The file changed between our read and our write: plan again from what it holds now."""


class Files:
    """The settings files one `setup` run reads, each remembered as it was read."""

    def __init__(self) -> None:
        self.seen: dict[Path, str | None] = {}

    def text(self, path: Path) -> str | None:
        """The file's text (None when it does not exist), remembered for `write`."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        except OSError as exc:
            raise SetupError(f"{path} cannot be read ({exc.strerror})") from None
        self.seen[path] = text
        return text

    def json(self, path: Path) -> dict[str, Any]:
        text = self.text(path)
        if text is None:
            return {}
        try:
            data = json.loads(text or "{}")
        except ValueError as exc:
            raise SetupError(
                f"{path} is not valid JSON ({exc}); fix or move it, then run again"
            ) from None
        if not isinstance(data, dict):
            raise SetupError(f"{path} does not hold a JSON object; fix or move it, then run again")
        return data


def shaped(value: Any, kind: type, path: Path, key: str) -> Any:
    """`value` (None: an empty one) if it is a `kind`; else one line naming the file and key."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        what = "an object" if kind is dict else "a list" if kind is list else kind.__name__
        raise SetupError(
            f'{path}: "{key}" should be {what}, not {json.dumps(value, default=str)[:40]}; '
            "fix it, then run again (nothing was changed)"
        )
    return value


def strings(value: Any, path: Path, key: str) -> list[str]:
    items = shaped(value, list, path, key)
    if not all(isinstance(item, str) for item in items):
        raise SetupError(f'{path}: "{key}" should be a list of strings; fix it, then run again')
    return list(items)


def write(path: Path, text: str, before: str | None, *, secret: bool = False) -> str:
    """Replace the file's text with `text`, as the module says; says what it did. `before`:
    the text it held when read (None: it did not exist)."""
    target = path.resolve() if path.is_symlink() else path
    existed = target.exists()
    current = target.read_text(encoding="utf-8") if existed else None
    if current != before:
        raise ChangedMeanwhile(str(path))
    if current == text:
        return f"unchanged {path}"
    mode = target.stat().st_mode & 0o777 if existed else PRIVATE
    if existed and not mode & 0o200:
        raise SetupError(f"{path} is read-only; make it writable to let setup change it")
    if secret:
        mode = PRIVATE
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = path.with_name(path.name + ".bak")
    kept = existed and _keep_original(backup, current or "")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        if target.exists() and target.read_text(encoding="utf-8") != before:
            raise ChangedMeanwhile(str(path))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if secret and backup.exists() and not backup.is_symlink():
        os.chmod(backup, PRIVATE)  # an older setup's backup may hold the token too
    said = f"wrote {path}" + (f" (through the link to {target})" if target != path else "")
    if kept:
        said += f" (the original is kept as {backup.name})"
    elif existed:
        said += f" ({backup.name} keeps the file as it was before the first setup)"
    return said


def _keep_original(backup: Path, original: str) -> bool:
    """Save the pre-setup original once: an existing backup (or a symlink there) is left
    alone. True when it was written now."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(backup, flags, PRIVATE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(original)
    return True
