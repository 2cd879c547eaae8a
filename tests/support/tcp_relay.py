"""A TCP relay in front of a server, for the tests of what a client does when its server stops answering.

`Relay(port)` forwards every connection it accepts to 127.0.0.1:`port`. `freeze()` stops it passing bytes on (in
either direction) while every connection stays open and this process's kernel keeps acknowledging what clients
send -- as a SIGSTOPped server looks to them -- and `silent` makes it accept new connections without a word (a
frozen server's listen backlog). `accepted` counts connections (a cancel request is one), `close()` refuses new
ones, `start()` again takes its port back.
"""

from __future__ import annotations

import asyncio
import contextlib


class Relay:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.accepted = 0
        self.silent = False
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> Relay:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def freeze(self) -> None:
        self.silent = True
        self._flowing.clear()

    def thaw(self) -> None:
        self.silent = False
        self._flowing.set()

    async def close(self) -> None:
        """Refuse new connections (the listening socket closed); the open ones stay as they are."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def aclose(self) -> None:
        """Close everything: the listening socket and every connection."""
        await self.close()
        for writer in self._writers:
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self._writers.append(writer)
        if self.silent:
            return  # held open, never answered
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers.append(up_writer)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while True:
                await self._flowing.wait()
                data = await source.read(65536)
                await self._flowing.wait()  # (bytes read just before a freeze are held back too)
                if not data:
                    break
                sink.write(data)
                await sink.drain()
        sink.close()
