"""The compiled encoder must produce exactly kio's bytes, for every message shape.

Hypothesis draws whole messages (nested structs, arrays, nulls, tagged fields) with
kio's own type strategies; any difference from kio's writer, or a value one writer
refuses and the other accepts, fails the test.
"""

from __future__ import annotations

import io
from pkgutil import resolve_name

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.index import schema_name_map
from kio.serial import entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import Records

from primitives.uvarint import encode_uvarint as uvarint
from protocol.apis import API_TABLE, ApiKey
from protocol.encoder import encode, writer_for
from tests.support.examples import QUICK, examples

# kio registers strategies for its primitives but not for record-set bytes.
st.register_type_strategy(Records, st.one_of(st.none(), st.binary(max_size=64)).map(
    lambda b: None if b is None else Records(b)))


def _classes(names, kinds=(EntityType.response,)) -> list[str]:
    """The classes' paths in kio ("module:Class"), not the classes: importing the ~1,000 schema modules while
    collecting cost every pytest worker ~2 s; each test imports the one it checks (`resolve_name`)."""
    out = []
    for name in names:
        for _version, entities in sorted(schema_name_map[name].items()):
            for kind in kinds:
                if kind in entities:
                    out.append(entities[kind])
    return out


def _path_id(path: str) -> str:
    """e.g. heartbeat.v4.response: the class's module inside kio.schema."""
    return path.split(":")[0].split("schema.")[1]


# The APIs a group coordinator with an embedded data plane speaks (now or soon).
HOT_APIS = sorted({spec.name for spec in API_TABLE.values()} | {
    "heartbeat", "join_group", "sync_group", "leave_group", "offset_commit", "offset_fetch",
    "describe_groups", "list_groups", "delete_groups", "offset_delete", "produce", "fetch",
    "list_offsets", "create_topics", "delete_topics", "init_producer_id",
})
ALL_APIS = sorted(name for name in schema_name_map if any(
    EntityType.response in e or EntityType.request in e for e in schema_name_map[name].values()))


def kio_bytes(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def assert_same_bytes(entity) -> None:
    try:
        expected = kio_bytes(entity)
    except Exception:  # kio refuses the value: so must we
        with pytest.raises(Exception):  # noqa: B017 - whatever kio raised, refusing is what is checked
            encode(entity)
        return
    assert encode(entity) == expected


@pytest.mark.parametrize("path", _classes(HOT_APIS), ids=_path_id)
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_hot_responses_are_byte_identical_to_kio(path, data):
    assert_same_bytes(data.draw(st.from_type(resolve_name(path))))


# The quick loop (./dev unit) sweeps every third of them; ./dev test every one.
EVERY_KIO_MESSAGE = _classes(ALL_APIS, (EntityType.request, EntityType.response))[::3 if QUICK else 1]


@pytest.mark.parametrize("path", EVERY_KIO_MESSAGE, ids=_path_id)
@settings(max_examples=examples(3), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_kio_message_is_byte_identical(path, data):
    assert_same_bytes(data.draw(st.from_type(resolve_name(path))))


@given(st.integers(min_value=0, max_value=2**35))
def test_uvarint_matches_kio(value):
    from kio.serial.writers import write_unsigned_varint

    buffer = io.BytesIO()
    write_unsigned_varint(buffer, value)
    assert uvarint(value) == buffer.getvalue()


def test_writer_is_compiled_once_per_class():
    cls = API_TABLE[ApiKey.API_VERSIONS].responses[3]
    assert writer_for(cls) is writer_for(cls)
    assert "def " in writer_for(cls).__source__
