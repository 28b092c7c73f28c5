"""Small builders for valid prompts, so each test states only what it varies."""

from __future__ import annotations

from typing import Any


def option(label: str, description: str | None = None) -> dict[str, Any]:
    return {"label": label} if description is None else {"label": label, "description": description}


def question(qid: str = "deploy_target", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": qid,
        "header": "Target",
        "question": "Where should this deploy?",
        "options": [option("Staging (Recommended)", "Safe default"), option("Production")],
    }
    base.update(overrides)
    return base


def prompt(*questions: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"sessionKey": "main", "questions": list(questions) or [question()]}
    body.update(overrides)
    return body
