"""The Flet entry point: `flet run app/main.py`, `flet build`, and `python -m app` end here.

In a `flet build` package this folder is the app's root and there is no `app` package around
it, so the folder itself is registered as `app` before anything imports from it.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

if "app" not in sys.modules:
    try:
        import app  # noqa: F401  (the project is installed or on the path)
    except ImportError:
        package = types.ModuleType("app")
        package.__path__ = [str(Path(__file__).resolve().parent)]
        sys.modules["app"] = package

import flet as ft

from app.ui.run import ASSETS_DIR, main

if __name__ == "__main__":
    ft.run(main, assets_dir=str(ASSETS_DIR))
