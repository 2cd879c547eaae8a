"""Answers with huge arrays, built and encoded in slices that yield to the event loop.

A request may name any number of topics (a Metadata request naming 200,000 topics, 5 MB,
took ~0.8 s of the event loop to answer; DeleteTopics and CreateTopics likewise). Past
SLICE entries, a handler works through the request BATCH entries at a time, and the
answer's big array is built and encoded BATCH entries at a time with the compiled
encoder of its struct, then spliced into the encoding of the response without entries.
The bytes are those of the generic encoder (tests compare them).

Between two batches the work yields to the loop once it has held it for TURN_SECONDS (Turns),
by the clock rather than by a count of entries: what an entry costs varies with the kind of
answer and with the machine (when the loop was let go every 20,000 OffsetFetch partitions, each
such step cost ~30 ms of CPU and held the loop for 0.15-0.8 s on a loaded 2-core machine).
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from typing import Any

from primitives.uvarint import encode_uvarint as uvarint
from protocol.build import Fields, build, nested_class
from protocol.codec import Encoded
from protocol.encoder import writer_for

SLICE = 20_000  # past this many entries a request is worked through, and answered, in batches
BATCH = 500  # entries handled, built or encoded between two looks at the clock
TURN_SECONDS = 0.005  # loop time a sliced answer holds before it lets other connections be served
clock: Callable[[], float] = time.monotonic  # Turns' clock (tests set their own)
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class Turns:
    """The loop time of one long piece of work done a batch at a time: `pause()` after each batch
    yields to the loop once TURN_SECONDS have passed since the work started or last yielded, so
    no step holds the loop longer than that and one batch, whatever the size of the request."""

    __slots__ = ("clock", "due")

    def __init__(self) -> None:
        self.clock = clock
        self.due = self.clock() + TURN_SECONDS

    async def pause(self) -> None:
        """Call after each batch."""
        if self.clock() >= self.due:
            await asyncio.sleep(0)
            self.due = self.clock() + TURN_SECONDS


def array_count(n: int, flexible: bool) -> bytes:
    """An array's count on the wire: uvarint n+1 when flexible, else int32."""
    return uvarint(n + 1) if flexible else _I32.pack(n)


def string_bytes(raw: bytes | None, flexible: bool) -> bytes:
    """A nullable string on the wire: compact (uvarint length+1) when flexible, else int16 length."""
    if raw is None:
        return b"\x00" if flexible else _I16.pack(-1)
    return (uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


async def encode_sliced(cls: type, head: Fields, field: str, entries: list[Fields] | LazyEntries, *, flexible: bool,
                        after: int = 0) -> Encoded:
    """The body of `cls(**head, field=entries)`. `field` must be the response's last field but
    for `after` bytes of fixed-size fields (and the tagged fields when `flexible`)."""
    entry_cls = nested_class(cls, field)
    write_entry = writer_for(entry_cls)
    out = bytearray()
    turns = Turns()
    for start in range(0, len(entries), BATCH):
        for entry in entries[start:start + BATCH]:
            write_entry(build(entry_cls, **entry), out)
        await turns.pause()
    shell: Any = Encoded.of(build(cls, **head, **{field: []}))
    tail = len(shell) - after - (1 if flexible else 0)  # where the fields after the array start
    count = array_count(len(entries), flexible)
    return Encoded(shell[:tail - (1 if flexible else 4)] + count + out + shell[tail:])


async def in_slices(items: Any, work: Any) -> None:
    """work(chunk) for each BATCH items, yielding to the loop in between as Turns says."""
    turns = Turns()
    for start in range(0, len(items), BATCH):
        work(items[start:start + BATCH])
        await turns.pause()


class LazyEntries:
    """The entries of a response array for `items`, made a batch at a time (`make(items[a:b])`)
    as encode_sliced asks for them, so that millions are never held at once."""

    def __init__(self, items: Any, make: Any) -> None:
        self.items = items
        self.make = make

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, where: slice) -> list[Fields]:
        return self.make(self.items[where])
