"""Build a kio message of any version from one set of keyword values.

Handlers describe a response once, as keywords (nested structs as dicts, arrays as
lists of dicts); `build` keeps only the fields that exist in the requested version's
class and recurses into that version's nested classes. It is for responses whose shape
changes across many versions (Metadata, FindCoordinator, ...); hot paths construct
their kio objects directly, with the classes `nested_class` finds and the field names
`shape` lists. (Encoding is protocol/codec.py's: `encode_response`, `Encoded`, `FixedResponse`.)
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import Any, get_args, get_origin


@cache
def shape(cls: type) -> dict[str, tuple[type | None, bool]]:
    """field name -> (its nested kio class or None, whether it is an array of them), in field order
    (an array of primitives is (None, False)).

    Read from the dataclass field types kio generates (`X`, `X | None`, `tuple[X, ...]`), so that
    no private module of kio's is needed."""
    out: dict[str, tuple[type | None, bool]] = {}
    for field in fields(cls):
        kind: Any = field.type
        if get_origin(kind) is UnionType:  # nullable: X | None
            kind = next(arg for arg in get_args(kind) if arg is not NoneType)
        is_array = get_origin(kind) is tuple
        if is_array:
            kind = get_args(kind)[0]
        nested: type | None = kind if isinstance(kind, type) and is_dataclass(kind) else None
        out[field.name] = (nested, is_array and nested is not None)
    return out


def nested_class(cls: type, field: str) -> type:
    """The kio class of the struct (or of the array's entries) in `cls`'s field `field`."""
    nested = shape(cls)[field][0]
    if nested is None:
        raise TypeError(f"{cls.__name__}.{field} is not a struct")
    return nested


def build(cls: type, **values: Any) -> Any:
    fields_of = shape(cls)
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        entry = fields_of.get(name)
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
