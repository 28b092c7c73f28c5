"""Realistic prompts for `python -m app demo`: single choice, multi-select, three stacked
questions, and one in Persian; asked in this order, so the first the person sees is English
(the stepper shows the oldest, the cards put the newest on top)."""

from typing import Any

DEMO_PROMPTS: dict[str, dict[str, Any]] = {
    "deploy-api": {
        "questions": [
            {
                "id": "deploy_target",
                "header": "Target",
                "question": "The build passed. Where should I deploy version 2.4.0?",
                "options": [
                    {
                        "label": "Staging (Recommended)",
                        "description": "Safe default; QA can try it",
                    },
                    {"label": "Production", "description": "Live for every customer"},
                    {"label": "Preview URL", "description": "A throwaway environment for this PR"},
                ],
            }
        ],
    },
    "persian-docs": {
        "questions": [
            {
                "id": "docs_language",
                "header": "زبان مستندات",
                "question": "مستندات پروژه به کدام زبان نوشته شود؟",
                "options": [
                    {"label": "فارسی (پیشنهادی)", "description": "برای تیم فعلی"},
                    {"label": "انگلیسی", "description": "برای مشارکت‌کنندگان بین‌المللی"},
                ],
            }
        ],
    },
    "release-notes": {
        "questions": [
            {
                "id": "highlights",
                "header": "Highlights",
                "multiSelect": True,
                "question": "Which changes should the release notes lead with?",
                "options": [
                    {
                        "label": "Faster search (Recommended)",
                        "description": "3x quicker on big repos",
                    },
                    {"label": "Dark mode"},
                    {"label": "CSV export"},
                    {"label": "New onboarding"},
                ],
            }
        ],
        "timeoutSeconds": 1800,
    },
    "new-project": {
        "questions": [
            {
                "id": "database",
                "header": "Database",
                "question": "Which database should the service use?",
                "options": [
                    {"label": "PostgreSQL (Recommended)"},
                    {"label": "SQLite"},
                    {"label": "MySQL"},
                ],
            },
            {
                "id": "auth",
                "header": "Sign-in",
                "question": "How should people sign in?",
                "multiSelect": True,
                "options": [
                    {"label": "Email link (Recommended)"},
                    {"label": "Google"},
                    {"label": "GitHub"},
                ],
            },
            {
                "id": "hosting",
                "header": "Hosting",
                "question": "Where will it run?",
                "options": [
                    {"label": "Fly.io (Recommended)", "description": "Cheapest to start"},
                    {"label": "AWS"},
                    {"label": "Our own servers"},
                ],
            },
        ],
        "timeoutSeconds": 3600,
    },
}
