"""The gateway: holds prompts durably between the agents that ask and the devices that answer.

Never part of a phone build; imports only app.protocol from the project.
"""

from .api import create_app
from .clock import Clock, ManualClock
from .config import GatewayConfig, Tokens, load_tokens
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
