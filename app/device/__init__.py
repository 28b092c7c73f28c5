"""The app's logic without widgets: gateway client, local store, sync loop, display state.

Imports only app.protocol from the project; testable in pure Python.
"""

from .client import (
    AlreadyResolved,
    CursorExpired,
    GatewayClient,
    GatewayError,
    NotFound,
    Unauthorized,
)
from .environment import DeviceEnvironment
from .state import (
    EVERYTHING,
    Change,
    Connection,
    ConnectionState,
    DisplayStatus,
    ServerClock,
    TimelineItem,
)
from .store import LocalStore
from .sync import DeviceCore, PairingError, Settings

__all__ = [
    "EVERYTHING",
    "AlreadyResolved",
    "Change",
    "Connection",
    "ConnectionState",
    "CursorExpired",
    "DeviceCore",
    "DeviceEnvironment",
    "DisplayStatus",
    "GatewayClient",
    "GatewayError",
    "LocalStore",
    "NotFound",
    "PairingError",
    "ServerClock",
    "Settings",
    "TimelineItem",
    "Unauthorized",
]
