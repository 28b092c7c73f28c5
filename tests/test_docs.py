"""Every snippet of the README and docs/ either parses or is marked as what cannot run here
(#45): shell blocks pass `bash -n` and hold no placeholder that fails when pasted, Python blocks
compile; JSON and TOML blocks are parsed (and checked against `setup`) in
tests/agent/test_setup.py; `nginx`, `caddy`, `jsonc` and `text` blocks (a proxy's
configuration, annotated examples, diagrams) are shown, not run."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CHECKED = {"sh", "python", "json", "toml"}
SHOWN_ONLY = {"nginx", "caddy", "jsonc", "text"}
PLACEHOLDER = re.compile(r"\.\.\.(?!\w)|<[a-z][a-z ]*>")  # "...", "<your token>"


def _blocks() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", page.read_text(), re.S | re.M):
            found.append((page.name, lang, block))
    return found


BLOCKS = _blocks()


def test_every_block_says_what_it_is():
    unknown = {(page, lang) for page, lang, _ in BLOCKS if lang not in CHECKED | SHOWN_ONLY}
    assert not unknown, f"a block with no language, or one no test checks: {unknown}"


@pytest.mark.parametrize(
    ("page", "block"), [(p, b) for p, lang, b in BLOCKS if lang == "sh"], ids=lambda v: v[:40]
)
def test_shell_blocks_parse_and_hold_no_placeholder(page, block):
    checked = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
    assert checked.returncode == 0, f"{page}: {checked.stderr}\n{block}"
    code = "\n".join(line.split(" #", 1)[0] for line in block.splitlines())  # comments aside
    assert not PLACEHOLDER.search(code), f"{page}: a placeholder fails when pasted:\n{block}"


@pytest.mark.parametrize(
    ("page", "block"), [(p, b) for p, lang, b in BLOCKS if lang == "python"], ids=lambda v: v[:40]
)
def test_python_blocks_compile(page, block):
    ast.parse(block, filename=page)
