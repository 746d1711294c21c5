"""A TCP fault proxy for tests: put it between a client and NATS or PostgreSQL, then break the link.

Modes (`set_mode`), applied to open connections as well as to new ones:

- `pass`: bytes flow both ways untouched;
- `delay`: every chunk waits `delay_s` before it is forwarded (a slow or distant link);
- `drop`: connections are closed (FIN) and new ones closed on arrival (a server gone away);
- `blackhole`: connections stay open and are accepted, but nothing is forwarded or answered
  either way: the half-open link that only client-side timeouts end;
- `reset`: connections are aborted with RST and new ones reset on arrival.

Debian has no toxiproxy server, so this stands in for it (`../shared/reference/reliability.md`
§6.0). It runs on the test's event loop: `async with FaultProxy(host, port) as proxy:`, then
point the client at `proxy.port`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Literal

Mode = Literal["pass", "delay", "drop", "blackhole", "reset"]
MODES: tuple[Mode, ...] = ("pass", "delay", "drop", "blackhole", "reset")
CHUNK = 65536


def _reset(writer: asyncio.StreamWriter) -> None:
    """Abort with RST rather than FIN: linger on, timeout zero."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Link:
    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter | None) -> None:
        self.client, self.upstream = client, upstream
        self.tasks: list[asyncio.Task[None]] = []

    def close(self, *, reset: bool) -> None:
        for writer in (self.client, self.upstream):
            if writer is None:
                continue
            if reset:
                _reset(writer)
            else:
                writer.close()


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, listen_port: int = 0) -> None:
        self.upstream_host, self.upstream_port = upstream_host, upstream_port
        self._listen_port = listen_port
        self.mode: Mode = "pass"
        self.delay_s = 0.0
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self._listen_port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.close(reset=False)
            for task in link.tasks:
                task.cancel()
        self._links.clear()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def set_mode(self, mode: Mode, *, delay_s: float = 0.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if mode == "delay" and delay_s <= 0:
            raise ValueError("delay_s must be positive in mode 'delay'")
        self.mode, self.delay_s = mode, delay_s
        if mode in ("drop", "reset"):
            for link in list(self._links):
                link.close(reset=mode == "reset")
            self._links.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode in ("drop", "reset"):
            _Link(writer, None).close(reset=self.mode == "reset")
            return
        upstream_writer: asyncio.StreamWriter | None = None
        upstream_reader: asyncio.StreamReader | None = None
        if self.mode != "blackhole":
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection(
                    self.upstream_host, self.upstream_port
                )
            except OSError:
                _reset(writer)
                return
        link = _Link(writer, upstream_writer)
        if self.mode in ("drop", "reset"):  # set while the upstream connection was being opened
            link.close(reset=self.mode == "reset")
            return
        self._links.add(link)
        if upstream_reader is None or upstream_writer is None:
            link.tasks.append(asyncio.create_task(self._swallow(reader)))
        else:
            link.tasks += [
                asyncio.create_task(self._pump(reader, upstream_writer, link)),
                asyncio.create_task(self._pump(upstream_reader, writer, link)),
            ]
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*link.tasks, return_exceptions=True)
        self._links.discard(link)
        link.close(reset=False)  # a swallowed connection's end too, once its client has gone

    async def _swallow(self, reader: asyncio.StreamReader) -> None:
        """A connection accepted in blackhole mode: read and discard until the client gives up."""
        with contextlib.suppress(OSError):
            while await reader.read(CHUNK):
                pass

    async def _pump(self, source: asyncio.StreamReader, target: asyncio.StreamWriter, link: _Link) -> None:
        try:
            while data := await source.read(CHUNK):
                if self.mode == "blackhole":
                    continue  # swallowed: neither side hears from the other again
                if self.mode == "delay":
                    await asyncio.sleep(self.delay_s)
                target.write(data)
                await target.drain()
        except OSError:
            pass
        finally:
            link.close(reset=False)  # one side went away: so does the other, as through a proxy
