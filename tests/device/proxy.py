"""A small asyncio TCP proxy that a test can cut: every open connection drops at once."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    def __init__(self, target_host: str, target_port: int, response_delay: float = 0.0) -> None:
        self.target = (target_host, target_port)
        self.response_delay = response_delay  # hold the gateway's bytes this long
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self.connections = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> CuttableProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, delay: float) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    if delay:
                        await asyncio.sleep(delay)
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(
            pipe(reader, up_writer, 0.0), pipe(up_reader, writer, self.response_delay)
        )
        self._writers -= {writer, up_writer}

    def cut(self) -> int:
        """Drop every connection in flight (mid long-poll); new ones are still accepted."""
        count = len(self._writers)
        for writer in list(self._writers):
            if writer.transport is not None:
                writer.transport.abort()
        self._writers.clear()
        return count

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
