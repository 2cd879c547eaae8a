"""kio's field introspection: the one module that imports kio's private modules.

The compiled encoder (encoder.py), the count checker (bounds.py), the sliced decoder
(sliced_decode.py) and `build` walk kio's message classes field by field, as kio's own
reader and writer do. kio exposes no public API for that, so its internal helpers are
imported here and only here; pyproject.toml pins the kio versions they are tested with
(a 0.x minor release may move them): on an upgrade, this is the file to check.
"""

from __future__ import annotations

from kio._kio_native import get_field_reader
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

__all__ = [
    "EntityField",
    "EntityTupleField",
    "PrimitiveField",
    "PrimitiveTupleField",
    "classify_field",
    "get_field_reader",
    "get_field_tag",
    "get_schema_field_type",
    "get_tagged_field_default",
    "is_optional",
]
