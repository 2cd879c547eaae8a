"""A request decoder that yields control every CHUNK elements, for frames over SLICED_FROM.

kio's native reader decodes a whole request in one call holding the interpreter: a 64 MB
DescribeGroups of empty group names kept every other client waiting for seconds. This decoder
reads a request exactly as kio would, from the same field metadata protocol/bounds.py uses, but
is a generator: `decode(cls, buf, pos)` yields after about CHUNK elements, at any depth, and
returns the entity (`StopIteration.value`); `decode_sliced` drives it on the event loop.

kio still does the reading: every field that holds no array with kio's own field reader, arrays
of primitives or of array-free entities with kio's array readers (whole, or CHUNK elements at a
time), and only entities that hold arrays are walked here. Each count is checked against the
bytes left before anything is read, as bounds.py checks it (so no separate bounds walk is
needed), a null where the schema allows none is refused, and tagged fields are read by their
schema, an unknown tag refused, absent ones left to their defaults, as kio does.

To read a long array CHUNK elements at a time with kio's array reader, the decoder works on a
copy of the frame and writes each chunk's count into the bytes just before it (bytes already
read: the array's own count, or the previous chunk's elements).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Generator
from dataclasses import dataclass, fields
from typing import Any

from kio.static.protocol import Entity as KioEntity

from primitives.uvarint import encode_uvarint

from .bounds import CountError, Node, counted, min_size, null_array, read_uvarint, shape, too_many
from .kio_fields import EntityField, EntityTupleField, classify_field, get_field_reader, get_field_tag, is_optional

SLICED_FROM = 1 << 20  # frames larger than this (bytes) are decoded sliced
CHUNK = 10_000  # elements read between two yields

Reader = Callable[[Any, int], tuple[Any, int]]
Steps = Generator[None, None, Any]


class _Budget:
    """Elements read since the last yield, shared by every level of one decode, and the copy of
    the frame that chunk counts are written into (kio reads it through a read-only view)."""

    __slots__ = ("count", "frame")

    def __init__(self, frame: bytearray) -> None:
        self.count = 0
        self.frame = frame


@dataclass(frozen=True)
class _Leaf:
    """A field holding no array, or a small array: kio's field reader reads it whole."""

    reader: Reader


@dataclass(frozen=True)
class _List:
    """An array: `element` is a _Struct (elements holding arrays, read one by one) or kio's
    reader of the whole array field (elements holding none, read CHUNK at a time)."""

    element: Reader | _Struct
    compact: bool
    nullable: bool
    min_size: int


@dataclass(frozen=True)
class _Struct:
    """An entity holding arrays: its fields in order, its tagged fields by tag."""

    cls: type
    flexible: bool
    nullable: bool
    plain: tuple[tuple[str, _Step], ...]
    tagged: dict[int, tuple[str, _Step]]


_Step = _Leaf | _List | _Struct


def _field_step(cls: type[KioEntity], field: Any, node: Node, tagged: bool) -> _Step:
    kind = classify_field(field)
    flexible = bool(cls.__flexible__)
    if not counted(node):
        return _Leaf(get_field_reader(cls, field, False, tagged))
    if isinstance(kind, EntityField):
        return _plan(kind.type_, is_optional(field))
    if isinstance(kind, EntityTupleField) and counted(node.element):  # type: ignore[union-attr]
        element: Reader | _Struct = _plan(kind.type_, False)
    else:  # kio's reader for the whole field, given a count of one chunk
        element = get_field_reader(cls, field, False, tagged)
    return _List(element, flexible, is_optional(field), max(min_size(node.element), 1))  # type: ignore[union-attr]


_plans: dict[tuple[type, bool], _Struct] = {}


def _plan(cls: type[KioEntity], nullable: bool = False) -> _Struct:
    key = (cls, nullable)
    plan = _plans.get(key)
    if plan is None:
        plain: list[tuple[str, _Step]] = []
        tagged: dict[int, tuple[str, _Step]] = {}
        root = shape(cls)
        plain_nodes, tagged_nodes = iter(root.fields), dict(root.tagged)
        for field in fields(cls):
            tag = get_field_tag(field)
            node = next(plain_nodes) if tag is None else tagged_nodes[int(tag)]
            step = _field_step(cls, field, node, tag is not None)
            if tag is None:
                plain.append((field.name, step))
            else:
                tagged[int(tag)] = (field.name, step)
        plan = _plans[key] = _Struct(cls, bool(cls.__flexible__), nullable, tuple(plain), tagged)
    return plan


_i32 = struct.Struct(">i")


def _read_step(step: _Step, buf: memoryview, pos: int, budget: _Budget) -> Steps:
    if step.__class__ is _Leaf:
        value, size = step.reader(buf, pos)
        return value, pos + size
    if step.__class__ is _List:
        return (yield from _read_list(step, buf, pos, budget))
    return (yield from _read_struct(step, buf, pos, budget))  # type: ignore[arg-type]


def _read_list(step: _List, buf: memoryview, pos: int, budget: _Budget) -> Steps:
    if step.compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        n = _i32.unpack_from(buf, pos)[0]
        pos += 4
        if n < -1:
            raise CountError(f"negative array count {n} before byte {pos}")
    if n == -1:
        if not step.nullable:
            raise null_array(pos)
        return None, pos
    if n > (len(buf) - pos) // step.min_size:
        raise too_many(n, step.min_size, pos, len(buf))
    element = step.element
    if element.__class__ is _Struct:
        items = []
        for _ in range(n):
            item, pos = yield from _read_struct(element, buf, pos, budget)
            items.append(item)
        return tuple(items), pos
    return (yield from _read_chunks(element, step.compact, n, buf, pos, budget))  # type: ignore[arg-type]


def _read_chunks(reader: Reader, compact: bool, n: int, buf: memoryview, pos: int, budget: _Budget) -> Steps:
    """`n` elements by kio's reader of the array field, CHUNK at a time, each chunk's count written over the
    bytes before it (already read: at least 2 for a compact count of CHUNK or more, 4 for a
    legacy one, and at least CHUNK before any later chunk)."""
    items: list[Any] = []
    left = n
    while True:
        k = min(left, CHUNK)
        if compact:
            head = encode_uvarint(k + 1)
            start = pos - len(head)
            budget.frame[start:pos] = head
        else:
            start = pos - 4
            _i32.pack_into(budget.frame, start, k)
        chunk, size = reader(buf, start)
        pos = start + size
        left -= k
        budget.count += k
        if not left and not items:
            return chunk, pos
        items.extend(chunk)
        if not left:  # one step of ~10 ns an element (~0.4 s for 64M on a busy machine): a tuple is made whole
            return tuple(items), pos
        if budget.count >= CHUNK:
            budget.count = 0
            yield


def _read_struct(plan: _Struct, buf: memoryview, pos: int, budget: _Budget) -> Steps:
    if plan.nullable:
        if buf[pos] == 255:  # int8 marker -1: null
            return None, pos + 1
        pos += 1
    values: dict[str, Any] = {}
    for name, step in plan.plain:
        values[name], pos = yield from _read_step(step, buf, pos, budget)
    if plan.flexible:
        count, pos = read_uvarint(buf, pos)
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            pos = read_uvarint(buf, pos)[1]  # the size: kio reads the field by its schema
            known = plan.tagged.get(tag)
            if known is None:
                raise CountError(f"unknown tagged field {tag} of {plan.cls.__name__} before byte {pos}")
            values[known[0]], pos = yield from _read_step(known[1], buf, pos, budget)
    budget.count += 1
    if budget.count >= CHUNK:
        budget.count = 0
        yield
    return plan.cls(**values), pos


def decode(cls: type, frame: bytes, pos: int) -> Steps:
    """A generator reading request class `cls` from `frame[pos:]` as kio would: it yields every
    CHUNK elements or so and returns the entity; raises CountError (or kio's and the buffer's
    errors) for a frame kio or bounds.py would refuse."""
    copy = bytearray(frame)  # chunk counts are written into it
    view = memoryview(copy).toreadonly()  # kio's readers take read-only buffers only
    entity, _end = yield from _read_struct(_plan(cls), view, pos, _Budget(copy))
    return entity


async def decode_sliced(cls: type, frame: bytes, pos: int) -> Any:
    """`decode` on the event loop: other connections are served at each yield."""
    steps = decode(cls, frame, pos)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        await asyncio.sleep(0)
