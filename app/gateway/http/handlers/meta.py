"""Health and this document."""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import Response

from ..routing import Call

log = logging.getLogger("ask_user.gateway")


# ---- meta ------------------------------------------------------------------------------------


async def health(call: Call) -> dict[str, Any]:
    """200 without a token (HEAD too), for load balancers and benchmarks."""
    return {"status": "ok"}


async def openapi(call: Call) -> Response:
    """This table as an OpenAPI 3.1 document."""
    return Response(call.state.schema, media_type="application/json")
