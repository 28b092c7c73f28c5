"""A TCP proxy on 127.0.0.1 that holds every byte for a set time in each direction: PostgreSQL
"on another machine", reproducibly, on this one (#42). It runs in a process of its own (its
own GIL), so the load it carries does not slow the process measuring it.

Order is kept per direction: each chunk read is written once its time has come, after every
chunk read before it.
"""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import socket
from typing import Any


class _Delayed:
    """One direction of one connection: chunks due at `read time + delay`, written in order."""

    def __init__(self, writer: asyncio.StreamWriter, delay: float) -> None:
        self._writer, self._delay = writer, delay
        self._due: collections.deque[tuple[float, bytes]] = collections.deque()
        self._loop = asyncio.get_running_loop()
        self._armed = False

    def send(self, data: bytes) -> None:
        if self._delay <= 0:
            self._writer.write(data)
            return
        self._due.append((self._loop.time() + self._delay, data))
        if not self._armed:
            self._armed = True
            self._loop.call_at(self._due[0][0], self._flush)

    def _flush(self) -> None:
        now = self._loop.time()
        while self._due and self._due[0][0] <= now:
            self._writer.write(self._due.popleft()[1])
        if self._due:
            self._loop.call_at(self._due[0][0], self._flush)
        else:
            self._armed = False


async def _pump(reader: asyncio.StreamReader, out: _Delayed, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            out.send(data)
    except OSError:
        pass
    finally:
        await asyncio.sleep(out._delay)  # what is still held goes out first
        writer.close()


async def _serve(listener: socket.socket, upstream_port: int, delay: float) -> None:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            writer.close()
            return
        for sock in (writer, up_writer):
            sock.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(
            _pump(reader, _Delayed(up_writer, delay), up_writer),
            _pump(up_reader, _Delayed(writer, delay), writer),
        )

    server = await asyncio.start_server(connection, sock=listener)
    async with server:
        await server.serve_forever()


def _run(listener: socket.socket, upstream_port: int, delay: float) -> None:
    asyncio.run(_serve(listener, upstream_port, delay))


class DelayProxy:
    """`with DelayProxy(upstream_port, one_way_seconds) as port:` a port whose connections reach
    the upstream with the delay added each way."""

    def __init__(self, upstream_port: int, one_way_seconds: float) -> None:
        self.upstream_port, self.delay = upstream_port, one_way_seconds
        self._process: Any = None

    def __enter__(self) -> int:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(512)
        context = multiprocessing.get_context("fork")
        self._process = context.Process(
            target=_run, args=(listener, self.upstream_port, self.delay), daemon=True
        )
        self._process.start()
        port = listener.getsockname()[1]
        listener.close()  # the child holds its own copy
        return port

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        self._process.join(5)
