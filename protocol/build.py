"""Build a kio message of any version from one set of keyword values.

Handlers describe a response once, as keywords (nested structs as dicts, arrays as
lists of dicts); `build` keeps only the fields that exist in the requested version's
class and recurses into that version's nested classes. It is for responses whose shape
changes across many versions (Metadata, FindCoordinator, ...); hot paths construct
their kio objects directly, with the classes `nested_class` finds and the field names
`field_shapes` lists. (Encoding is protocol/codec.py's: `encode_response`, `Encoded`, `FixedResponse`.)
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

from .kio_fields import EntityField, EntityTupleField, classify_field

#: A message's (or a nested struct's) fields by name, as `build` takes them: values of every field type, nested
#: structs as Fields, arrays as lists of them.
Fields = dict[str, Any]


@cache
def field_shapes(cls: type) -> dict[str, tuple[type | None, bool]]:
    """Field name -> (its kio class if the field is a struct or an array of structs, else None;
    whether it is an array), for kio class `cls`."""
    shape: dict[str, tuple[type | None, bool]] = {}
    for field in fields(cls):
        kind = classify_field(field)
        nested = kind.type_ if isinstance(kind, (EntityField, EntityTupleField)) else None
        shape[field.name] = (nested, isinstance(kind, EntityTupleField))
    return shape


def build(cls: type, **values: Any) -> Any:
    shape = field_shapes(cls)
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        entry = shape.get(name)
        if entry is None:
            continue  # not in this version
        nested, is_array = entry
        if nested is not None and value is not None:
            if is_array:
                value = tuple(item if isinstance(item, nested) else build(nested, **item) for item in value)
            elif not isinstance(value, nested):
                value = build(nested, **value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def nested_class(cls: type, field: str) -> type:
    """The kio class of the struct (or of the array's entries) in `cls`'s field `field`."""
    nested = field_shapes(cls)[field][0]
    if nested is None:
        raise TypeError(f"{cls.__name__}.{field} is not a struct")
    return nested
