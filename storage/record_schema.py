"""The schema engine behind __consumer_offsets keys and values (Kafka's generated message code, as tables).

A `Schema` lists a struct's `Field`s in the order of Kafka's JSON schema
(group-coordinator/src/main/resources/common/message/*.json): a field exists from `since` to
`until` inclusive; versions >= `flexible_from` use compact lengths and end every struct with a
tagged-field section. A field with a `tag` lives in that section (written only when its value
differs from `default`, in tag order, as Kafka writes them); unknown tags are skipped on read, or
kept as raw bytes when the schema names an `unknown_tags` attribute (written back in tag order
among the known ones, as Kafka's RawTaggedFieldWriter does). An array field with `nullable` may
be None (length -1, or 0 in compact form).

Field types: int8/int16/int32/int64, string, nullable_string, bytes, uuid (16 bytes: Kafka's
Uuid, a `uuid.UUID` here), "[]int32", "[]string", "[]" (an array of `nested` structs) and
"struct" (a nullable `nested` struct; only as a tagged field, where Kafka writes a presence
varint 1 before it).

`to_json` gives a value as Kafka's JsonConverter prints it: camelCase names (`Field.kafka`
overrides the derived one), Uuids in base64url without padding (Uuid.toString), bytes in
base64, tagged fields only when not at their default.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from struct import Struct, error as StructError
from typing import Any

from primitives.uvarint import encode_uvarint, uvarint_reader

from .errors import InvalidRecordError

I8, I16, I32, I64 = Struct(">b"), Struct(">h"), Struct(">i"), Struct(">q")
read_uvarint = uvarint_reader(InvalidRecordError, InvalidRecordError)  # flexible versions' lengths and tags
FIXED = {"int8": I8, "int16": I16, "int32": I32, "int64": I64}
_STRINGS = ("string", "nullable_string", "bytes")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    since: int
    until: int = 32767
    nested: Schema | None = None
    tag: int | None = None  # a tagged field (flexible versions only)
    default: Any = None  # a tagged field at its default is not written
    kafka: str | None = None  # the JSON name, when not the camelCase of `name`
    nullable: bool = False  # an array that may be null (Kafka's nullableVersions)

    @property
    def json_name(self) -> str:
        if self.kafka is not None:
            return self.kafka
        head, *rest = self.name.split("_")
        return head + "".join(part.capitalize() for part in rest)


@dataclass(frozen=True)
class Schema:
    cls: type
    versions: range
    flexible_from: int
    fields: tuple[Field, ...]
    unknown_tags: str | None = None  # the attribute keeping unknown tagged fields ({tag: raw bytes})

    def present(self, version: int) -> list[Field]:
        """The untagged fields of `version`, in schema order."""
        return [f for f in self.fields if f.since <= version <= f.until and f.tag is None]

    def tagged(self, version: int) -> list[Field]:
        """The tagged fields of `version`, in tag order (none below flexible_from)."""
        if version < self.flexible_from:
            return []
        return sorted((f for f in self.fields if f.since <= version <= f.until and f.tag is not None),
                      key=lambda f: f.tag or 0)


# --- writing -----------------------------------------------------------------------------

def _write_string(out: bytearray, spec: Field, value: Any, flexible: bool) -> None:
    kind = spec.type
    if value is None:
        if kind != "nullable_string":
            raise ValueError(f"{spec.name} may not be null")
        out += b"\x00" if flexible else b"\xff\xff"
        return
    raw = value.encode() if isinstance(value, str) else bytes(value)
    if flexible:
        out += encode_uvarint(len(raw) + 1)
    elif kind == "bytes":
        out += I32.pack(len(raw))
    else:
        if len(raw) > 32767:
            raise ValueError(f"{spec.name} is longer than 32767 bytes")
        out += I16.pack(len(raw))
    out += raw


def _write_count(out: bytearray, count: int, flexible: bool) -> None:
    out += encode_uvarint(count + 1) if flexible else I32.pack(count)


def write_field(out: bytearray, spec: Field, value: Any, version: int, flexible: bool) -> None:
    kind = spec.type
    if value is None and kind.startswith("[]"):
        if not spec.nullable:
            raise ValueError(f"{spec.name} may not be null")
        _write_count(out, -1, flexible)
    elif kind in FIXED:
        out += FIXED[kind].pack(value)
    elif kind in _STRINGS:
        _write_string(out, spec, value, flexible)
    elif kind == "uuid":
        out += value.bytes
    elif kind == "[]int32":
        _write_count(out, len(value), flexible)
        for item in value:
            out += I32.pack(item)
    elif kind == "[]string":
        _write_count(out, len(value), flexible)
        for item in value:
            _write_string(out, spec, item, flexible)
    elif kind == "[]":
        assert spec.nested is not None  # an array field has its element schema
        _write_count(out, len(value), flexible)
        for element in value:
            write_struct(out, spec.nested, element, version)
    elif kind == "struct":
        assert spec.nested is not None and spec.tag is not None  # only as a tagged nullable struct
        out.append(1)  # present (a null one is not written at all)
        write_struct(out, spec.nested, value, version)
    else:
        raise AssertionError(f"unexpected field type {kind}")


def write_struct(out: bytearray, schema: Schema, value: Any, version: int) -> None:
    flexible = version >= schema.flexible_from
    for spec in schema.present(version):
        write_field(out, spec, getattr(value, spec.name), version, flexible)
    if not flexible:
        return
    sections: dict[int, bytes] = {}
    if schema.unknown_tags is not None:
        sections.update(getattr(value, schema.unknown_tags) or {})
    for spec in schema.tagged(version):
        item = getattr(value, spec.name)
        if item != spec.default:
            body = bytearray()
            write_field(body, spec, item, version, True)
            sections[spec.tag or 0] = bytes(body)
    out += encode_uvarint(len(sections))
    for tag in sorted(sections):
        out += encode_uvarint(tag) + encode_uvarint(len(sections[tag])) + sections[tag]


# --- reading -----------------------------------------------------------------------------

def _read_count(buf: bytes, pos: int, flexible: bool, what: str, nullable: bool = False) -> tuple[int, int]:
    """An array's length; -1 for a null one when `nullable` (else a null array is refused)."""
    if flexible:
        count, pos = read_uvarint(buf, pos)
        count -= 1
    else:
        (count,) = I32.unpack_from(buf, pos)
        pos += 4
    if count < 0:
        if nullable:
            return -1, pos
        raise InvalidRecordError(f"{what}: null array")
    return count, pos


def _read_string(buf: bytes, pos: int, spec: Field, kind: str, flexible: bool) -> tuple[Any, int]:
    if flexible:
        length, pos = read_uvarint(buf, pos)
        length -= 1
    elif kind == "bytes":
        (length,) = I32.unpack_from(buf, pos)
        pos += 4
    else:
        (length,) = I16.unpack_from(buf, pos)
        pos += 2
    if length < 0:
        if kind != "nullable_string":
            raise InvalidRecordError(f"{spec.name} is null")
        return None, pos
    end = pos + length
    if end > len(buf):
        raise InvalidRecordError(f"{spec.name} runs past the end of the record")
    raw = bytes(buf[pos:end])
    return (raw if kind == "bytes" else raw.decode("utf-8")), end


def read_field(buf: bytes, pos: int, spec: Field, version: int, flexible: bool) -> tuple[Any, int]:
    kind = spec.type
    if kind in FIXED:
        fixed = FIXED[kind]
        return fixed.unpack_from(buf, pos)[0], pos + fixed.size
    if kind in _STRINGS:
        return _read_string(buf, pos, spec, kind, flexible)
    if kind == "uuid":
        if pos + 16 > len(buf):
            raise InvalidRecordError(f"{spec.name} runs past the end of the record")
        return uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16
    if kind == "struct":
        present, pos = read_uvarint(buf, pos)
        if present <= 0:
            return None, pos
        assert spec.nested is not None
        return read_struct(buf, pos, spec.nested, version)
    count, pos = _read_count(buf, pos, flexible, spec.name, spec.nullable)
    if count < 0:
        return None, pos
    items = []
    for _ in range(count):
        if kind == "[]int32":
            items.append(I32.unpack_from(buf, pos)[0])
            pos += 4
        elif kind == "[]string":
            item, pos = _read_string(buf, pos, spec, "string", flexible)
            items.append(item)
        elif kind == "[]":
            assert spec.nested is not None  # an array field has its element schema
            item, pos = read_struct(buf, pos, spec.nested, version)
            items.append(item)
        else:
            raise AssertionError(f"unexpected field type {kind}")
    return tuple(items), pos


def _read_tagged(buf: bytes, pos: int, schema: Schema, version: int, values: dict[str, Any]) -> int:
    known = {spec.tag: spec for spec in schema.tagged(version)}
    tags, pos = read_uvarint(buf, pos)
    for _ in range(tags):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise InvalidRecordError(f"tagged field {tag} runs past the end of the record")
        spec = known.get(tag)
        if spec is not None:
            values[spec.name], read_to = read_field(buf, pos, spec, version, True)
            if read_to > end:
                raise InvalidRecordError(f"tagged field {spec.name} runs past its size")
        elif schema.unknown_tags is not None:
            values.setdefault(schema.unknown_tags, {})[tag] = bytes(buf[pos:end])
        pos = end
    return pos


def read_struct(buf: bytes, pos: int, schema: Schema, version: int) -> tuple[Any, int]:
    flexible = version >= schema.flexible_from
    values: dict[str, Any] = {}
    try:
        for spec in schema.present(version):
            values[spec.name], pos = read_field(buf, pos, spec, version, flexible)
        if flexible:
            pos = _read_tagged(buf, pos, schema, version, values)
    except (IndexError, ValueError, StructError) as exc:  # UnicodeDecodeError is a ValueError
        if isinstance(exc, InvalidRecordError):
            raise
        raise InvalidRecordError(f"{schema.cls.__name__} v{version} does not parse: {exc}") from None
    if pos > len(buf):
        raise InvalidRecordError(f"{schema.cls.__name__} v{version} runs past the end of the record")
    return schema.cls(**values), pos


# --- JSON ----------------------------------------------------------------------------------

def uuid_string(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: the 16 bytes in base64url, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def _json_item(spec: Field, item: Any, version: int) -> Any:
    if item is None:
        return None
    kind = spec.type
    if kind == "uuid":
        return uuid_string(item)
    if kind == "bytes":
        return base64.b64encode(item).decode("ascii")
    if kind in ("[]", "struct"):
        assert spec.nested is not None
        if kind == "struct":
            return to_json(spec.nested, item, version)
        return [to_json(spec.nested, element, version) for element in item]
    if kind.startswith("[]"):
        return list(item)
    return item


def to_json(schema: Schema, obj: Any, version: int) -> dict[str, Any]:
    """`obj` as Kafka's generated JsonConverter writes it (see the module docstring)."""
    out: dict[str, Any] = {}
    for spec in schema.present(version):
        out[spec.json_name] = _json_item(spec, getattr(obj, spec.name), version)
    for spec in schema.tagged(version):
        item = getattr(obj, spec.name)
        if item != spec.default:
            out[spec.json_name] = _json_item(spec, item, version)
    return out
