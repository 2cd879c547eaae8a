"""Array counts bounded by the bytes left in the frame, checked before kio's reader allocates.

kio's native reader reserves room for every element of an array (`Vec::with_capacity(count)`)
before it reads one, and an allocation failure in Rust aborts the process: a compact count of
2^32-1 (5 bytes on the wire) asks for 34 GB, a legacy int32 count of 2^31-1 for 17 GB
(docs/upstream/kio-array-capacity.md). Kafka's generated readers refuse a count larger than the
bytes remaining; here each request class gets a checker that walks the frame exactly as kio
will read it (the same field metadata: kafka_type, tags, flexible, optional) and refuses a count
whose elements, at their smallest encoded size, cannot fit in the bytes left. A refused count is a
CountError, which protocol/codec.py turns into a DecodeError (the connection is closed, as Kafka
closes it on an InvalidRequestException).

The checker is Python source generated once per class (like protocol/encoder.py): runs of
fixed-size fields are one addition, arrays of fixed-size elements one multiplication, and once no
count can follow (the "tail": e.g. the partitions of an OffsetCommit's last topic) it stops, so a
one-topic OffsetCommit costs a few field skips whatever its partition count. Strings and bytes need
no check: kio bounds their lengths by the buffer before it copies anything. Classes without
arrays get no checker at all (`checker` returns None).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from kio.static.protocol import Entity as KioEntity

from primitives.uvarint import uvarint_reader

from .kio_fields import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

Checker = Callable[[bytes, int], None]


class CountError(ValueError):
    """An array count that the bytes left in the frame cannot hold, a null where the schema allows
    none (Kafka: "non-nullable field ... was serialized as null"; kio would hand the handler None),
    or a varint or tagged field that kio refuses too, met while looking for the counts."""


_FIXED_SIZES = {
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
    "uint64": 8, "float64": 8, "bool": 1, "uuid": 16, "error_code": 2, "timedelta_i32": 4,
    "timedelta_i64": 8, "datetime_i64": 8,
}


# --- the shape of a class, as kio's native reader sees it -------------------------------------

@dataclass(frozen=True)
class Fixed:
    size: int


@dataclass(frozen=True)
class Sized:
    """A string or bytes: `prefix` is "compact" (uvarint length + 1), "int16" or "int32"."""

    prefix: str


@dataclass(frozen=True)
class Array:
    element: Node
    compact: bool
    nullable: bool = False


@dataclass(frozen=True)
class Entity:
    name: str
    flexible: bool
    nullable: bool  # an int8 marker first, -1 = null (KIP-893 nullable structs)
    fields: tuple[Node, ...]  # the untagged fields, in order
    tagged: tuple[tuple[int, Node], ...]  # (tag, field)


Node = Fixed | Sized | Array | Entity


def _primitive(kafka_type: str, flexible: bool) -> Node:
    if kafka_type in _FIXED_SIZES:
        return Fixed(_FIXED_SIZES[kafka_type])
    if kafka_type in ("string", "bytes", "records"):
        if flexible:
            return Sized("compact")
        return Sized("int16" if kafka_type == "string" else "int32")
    raise TypeError(f"no wire size known for kafka_type {kafka_type!r}")


def shape(cls: type[KioEntity], nullable: bool = False) -> Entity:
    """The wire shape kio reads for `cls` (kio/rust/src/schema.rs: compile_entity_schema)."""
    flexible = bool(cls.__flexible__)
    plain: list[Node] = []
    tagged: list[tuple[int, Node]] = []
    for field in fields(cls):
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField):
            node: Node = Array(shape(kind.type_), flexible, is_optional(field))
        elif isinstance(kind, EntityField):
            node = shape(kind.type_, is_optional(field))
        elif isinstance(kind, PrimitiveTupleField):
            node = Array(_primitive(get_schema_field_type(field), flexible), flexible, is_optional(field))
        else:
            node = _primitive(get_schema_field_type(field), flexible)
        tag = get_field_tag(field)
        if tag is None:
            plain.append(node)
        else:
            tagged.append((int(tag), node))
    return Entity(cls.__name__, flexible, nullable, tuple(plain), tuple(tagged))


def counted(node: Node) -> bool:
    """Whether reading `node` reads an array count."""
    if isinstance(node, Array):
        return True
    if isinstance(node, Entity):
        return any(counted(f) for f in node.fields) or any(counted(f) for _, f in node.tagged)
    return False


def min_size(node: Node) -> int:
    """The fewest bytes `node` can take on the wire."""
    if isinstance(node, Fixed):
        return node.size
    if isinstance(node, Sized):
        return {"compact": 1, "int16": 2, "int32": 4}[node.prefix]
    if isinstance(node, Array):
        return 1 if node.compact else 4
    if node.nullable:
        return 1
    return sum(min_size(f) for f in node.fields) + (1 if node.flexible else 0)


def fixed_size(node: Node) -> int | None:
    """The size of `node` if every encoding of it has the same size, else None."""
    if isinstance(node, Fixed):
        return node.size
    if isinstance(node, Entity) and not node.nullable and not node.flexible:
        sizes = [fixed_size(f) for f in node.fields]
        return None if None in sizes else sum(sizes)  # type: ignore[arg-type]
    return None


# --- what the generated checkers call ---------------------------------------------------------

_i32 = struct.Struct(">i").unpack_from


#: An unsigned varint as kio reads it (at most 5 bytes, all 7 bits of the 5th used); a longer one
#: is a CountError, a frame that ends inside it an IndexError (as for every field).
read_uvarint = uvarint_reader(CountError)


def _skip_compact(buf: bytes, pos: int) -> int:
    length, pos = read_uvarint(buf, pos)
    return pos + length - 1 if length else pos


def too_many(count: int, size: int, pos: int, end: int) -> CountError:
    return CountError(f"array of {count} elements of at least {size} bytes at byte {pos}, "
                      f"but only {end - pos} bytes remain")


def null_array(pos: int) -> CountError:
    return CountError(f"null array before byte {pos} where the schema allows none")


def _no_tags(buf: bytes, pos: int, end: int) -> int:
    count, pos = read_uvarint(buf, pos)
    if count:
        raise CountError(f"{count} tagged fields before byte {pos} where none are known")
    return pos


_RUNTIME = {"_i32": _i32, "read_uvarint": read_uvarint, "_skip_compact": _skip_compact,
            "too_many": too_many, "null_array": null_array, "_no_tags": _no_tags, "CountError": CountError}


# --- the generator ----------------------------------------------------------------------------

class _Source:
    """Python source of one checker: a `check(buf, pos)` plus a helper per tagged-field section."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.helpers: list[list[str]] = []
        self.depth = 1

    def put(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def block(self, head: str, body: Callable[[], None]) -> None:
        self.put(head)
        self.depth += 1
        body()
        self.depth -= 1

    def node(self, node: Node, tail: bool, skip: int = 0) -> None:
        """Code that reads `node` at `pos + skip` (`skip`: fixed-size fields not yet added to pos).
        In the tail (no count can follow) it may return early."""
        if tail and not counted(node):
            self.put("return")
        elif isinstance(node, Fixed):
            self.put(f"pos += {skip + node.size}")
        elif isinstance(node, Sized):
            self.sized(node, skip)
        elif isinstance(node, Array):
            self.array(node, tail, skip)
        else:
            if skip:
                self.put(f"pos += {skip}")
            if not node.nullable:
                self.sequence(node, tail)
            elif tail:
                self.put("if buf[pos] == 255: return")  # int8 marker -1: null
                self.put("pos += 1")
                self.sequence(node, tail)
            else:
                self.put("if buf[pos] == 255: pos += 1")

                def not_null() -> None:
                    self.put("pos += 1")
                    self.sequence(node, tail)
                self.block("else:", not_null)

    def sized(self, node: Sized, skip: int) -> None:
        at = f"pos + {skip}" if skip else "pos"
        if node.prefix == "compact":
            self.put(f"n = buf[{at}]")
            self.put(f"if n < 128: pos += {skip} + n if n else {skip + 1}" if skip else "if n < 128: pos += n or 1")
            self.put(f"else: pos = _skip_compact(buf, {at})")
        elif node.prefix == "int16":  # two subscripts cost less than a struct call
            self.put(f"n = buf[{at}] << 8 | buf[pos + {skip + 1}]")
            self.put(f"pos += {skip + 2} + n if n < 32768 else {skip + 2}")  # negative: null
        else:
            self.put(f"n = _i32(buf, {at})[0]")
            self.put(f"pos += {skip + 4} + n if n > 0 else {skip + 4}")

    def array(self, node: Array, tail: bool, skip: int) -> None:
        element = node.element
        size = max(min_size(element), 1)
        at = f"pos + {skip}" if skip else "pos"
        if node.compact:
            self.put(f"n = buf[{at}]")
            self.put(f"if n < 128: pos += {skip + 1}")
            self.put(f"else: n, pos = read_uvarint(buf, {at})")
            self.put("n -= 1")  # 0 = null, else count + 1
        else:
            self.put(f"n = _i32(buf, {at})[0]")  # -1 = null; kio refuses other negatives
            self.put(f"pos += {skip + 4}")
        if not node.nullable:
            self.put("if n == -1: raise null_array(pos)")

        def elements() -> None:
            limit = "end - pos" if size == 1 else f"(end - pos) // {size}"
            self.put(f"if n > {limit}: raise too_many(n, {size}, pos, end)")
            fixed = fixed_size(element)
            if tail and not counted(element):
                return
            if fixed is not None and not tail:
                self.put(f"pos += n * {fixed}" if fixed != 1 else "pos += n")
                return
            def walk() -> None:
                self.block("for _ in range(n - 1):" if tail else "for _ in range(n):",
                           lambda: self.node(element, False))

            if tail:  # all elements but the last, then the last in the tail (mostly n = 1: no loop)
                self.block("if n > 1:", walk)
                self.node(element, True)
            else:
                walk()

        self.block("if n > 0:", elements)

    def sequence(self, entity: Entity, tail: bool) -> None:
        """The fields of `entity`, then its tagged fields; in the tail, up to the last count."""
        parts: list[Node | None] = list(entity.fields)
        if entity.flexible:
            parts.append(None)  # the tagged-field section
        last = len(parts) - 1
        if tail:  # the last part that reads a count (-1: none)
            tags_counted = any(counted(f) for _, f in entity.tagged)
            last = max((i for i, p in enumerate(parts) if (tags_counted if p is None else counted(p))), default=-1)
        skip = 0
        for i, part in enumerate(parts[: last + 1]):
            fixed = fixed_size(part) if part is not None else None
            if fixed is not None and not (tail and i == last):
                skip += fixed
            elif part is None:
                self.tagged(entity, skip)
            else:
                self.node(part, tail and i == last, skip)
            if fixed is None:
                skip = 0
        if skip:
            self.put(f"pos += {skip}")
        if tail:
            self.put("return")

    def tagged(self, entity: Entity, skip: int) -> None:
        """kio reads a known tag by its schema (ignoring the size) and refuses an unknown one."""
        helper = "_no_tags"
        if entity.tagged:
            index = len(self.helpers)
            self.helpers.append([])  # its number is taken before a nested tagged section takes the next
            helper = f"_tagged_{index}"
            self.helpers[index] = self.tag_helper(helper, entity)
        at = f"pos + {skip}" if skip else "pos"
        self.put(f"if buf[{at}]: pos = {helper}(buf, {at}, end)")
        self.put(f"else: pos += {skip + 1}")

    def tag_helper(self, name: str, entity: Entity) -> list[str]:
        outer, outer_depth = self.lines, self.depth
        self.lines, self.depth = [f"def {name}(buf, pos, end):"], 1
        self.put("count, pos = read_uvarint(buf, pos)")
        self.put("for _ in range(count):")
        self.put("    tag, pos = read_uvarint(buf, pos)")
        self.put("    pos = read_uvarint(buf, pos)[1]")
        self.depth = 2
        for tag, node in entity.tagged:
            self.block(f"if tag == {tag}:", partial(self.node, node, False))
            self.put("    continue")
        self.put(f"raise CountError(f'unknown tagged field {{tag}} of {entity.name} before byte {{pos}}')")
        self.depth = 1
        self.put("return pos")
        lines, self.lines, self.depth = self.lines, outer, outer_depth
        return lines

    def text(self) -> str:
        return "\n".join(["\n".join(h) for h in self.helpers] + ["def check(buf, pos):", "    end = len(buf)"]
                         + self.lines)


def source(cls: type) -> str | None:
    """The checker's Python source for request class `cls`, or None if it has no array."""
    root = shape(cls)
    if not counted(root):
        return None
    out = _Source()
    out.sequence(root, True)
    return out.text()


_checkers: dict[type, Checker | None] = {}


def checker(cls: type) -> Checker | None:
    """`check(frame, body_offset)` for request class `cls`: raises CountError for a count that
    cannot fit (and IndexError or struct.error for a frame that ends early), or None: a class
    without arrays needs no check."""
    if cls in _checkers:
        return _checkers[cls]
    text = source(cls)
    check = None
    if text is not None:
        namespace: dict[str, Any] = dict(_RUNTIME)
        exec(compile(text, f"<bounds {cls.__module__}.{cls.__name__}>", "exec"), namespace)
        check = namespace["check"]
    _checkers[cls] = check
    return check
