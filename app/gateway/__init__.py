"""The gateway: holds prompts durably between the agents that ask and the devices that answer.

Never part of a phone build; imports only app.protocol from the project (and app.asking, for
the `ask_user` tool that `/mcp` shares with the stdio server). Three floors, arrows down only:
`http/` → `core/` → `store/`; above them the process: `config` (settings), `api` (the app's
assembly: which store, the lifespan and background jobs), `server` (uvicorn), `cli` and `admin`
(the commands). The endpoint table is `http/endpoints.py`, its handlers `http/handlers/`.
"""

from .api import create_app
from .config import GatewayConfig, Tokens, load_tokens
from .core.clock import Clock, ManualClock
from .server import EmbeddedGateway

__all__ = [
    "Clock",
    "EmbeddedGateway",
    "GatewayConfig",
    "ManualClock",
    "Tokens",
    "create_app",
    "load_tokens",
]
