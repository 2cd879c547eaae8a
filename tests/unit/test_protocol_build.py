"""protocol.build.nested_class names the struct of a field, and refuses a primitive one."""

from __future__ import annotations

import pytest
from kio.schema.offset_commit.v8.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

from protocol.build import nested_class


def test_nested_class_names_the_struct_of_a_field_and_refuses_a_primitive():
    assert nested_class(OffsetCommitResponse, "topics") is OffsetCommitResponseTopic
    assert nested_class(OffsetCommitResponseTopic, "partitions") is OffsetCommitResponsePartition
    with pytest.raises(TypeError):
        nested_class(OffsetCommitResponse, "throttle_time")
