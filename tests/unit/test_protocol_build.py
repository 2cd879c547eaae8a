"""protocol.build: `shape` reads kio's field types as kio's own (private) introspection does, and
`nested_class` names the struct of a field."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import kio.schema
import pytest
from kio.serial._introspect import EntityField, EntityTupleField, classify_field  # the reference, in a test only

from protocol.build import nested_class, shape


def kio_shape(cls: type) -> dict:
    out = {}
    for field in dataclasses.fields(cls):
        kind = classify_field(field)
        out[field.name] = (kind.type_ if isinstance(kind, (EntityField, EntityTupleField)) else None,
                           isinstance(kind, EntityTupleField))
    return out


def every_kio_class() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(kio.schema.__path__, "kio.schema."):
        if info.ispkg:
            continue
        module = importlib.import_module(info.name)
        found += [c for c in vars(module).values()
                  if inspect.isclass(c) and dataclasses.is_dataclass(c) and c.__module__ == module.__name__]
    return found


def test_shape_is_kios_classification_for_every_schema_class():
    classes = every_kio_class()
    assert len(classes) > 1000
    assert [c for c in classes if shape(c) != kio_shape(c)] == []


def test_nested_class_names_the_struct_of_a_field_and_refuses_a_primitive():
    from kio.schema.offset_commit.v8.response import (
        OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic)

    assert nested_class(OffsetCommitResponse, "topics") is OffsetCommitResponseTopic
    assert nested_class(OffsetCommitResponseTopic, "partitions") is OffsetCommitResponsePartition
    with pytest.raises(TypeError):
        nested_class(OffsetCommitResponse, "throttle_time")
