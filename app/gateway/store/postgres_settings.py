"""How a gateway process uses PostgreSQL: read by config.py without loading the driver (an
extra the embedded gateway does not need)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PostgresSettings:
    """How a gateway process uses its database (docs/operating.md, "PostgreSQL"). Each limit
    fails one request with 503, never the process: the request that could not get a connection
    from the pool (`connection_wait_ms`), a lock (`lock_timeout_ms`) or its statement's answer
    (`statement_timeout_ms`) in time."""

    pool_size: int = 10  # connections per gateway process (plus one that listens)
    connection_wait_ms: int = 2000
    lock_timeout_ms: int = 2000
    statement_timeout_ms: int = 5000
