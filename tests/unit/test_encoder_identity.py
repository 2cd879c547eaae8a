"""The compiled encoder must produce exactly kio's bytes, for every message shape.

Hypothesis draws whole messages (nested structs, arrays, nulls, tagged fields) with
kio's own type strategies; any difference from kio's writer, or a value one writer
refuses and the other accepts, fails the test.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.index import load_entity_module
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


def _entity(name: str, version: int, kind: EntityType) -> type:
    module = load_entity_module(name, version, kind)
    return next(v for v in vars(module).values() if isinstance(v, type) and getattr(v, "__type__", None) is kind)


def _classes(names, kinds=(EntityType.response,)) -> list[type]:
    out = []
    for name in names:
        for version, entities in sorted(schema_name_map[name].items()):
            for kind in kinds:
                if kind in entities:
                    out.append(_entity(name, version, kind))
    return out


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


@pytest.mark.parametrize("cls", _classes(HOT_APIS), ids=lambda c: f"{c.__module__.split('schema.')[1]}")
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_hot_responses_are_byte_identical_to_kio(cls, data):
    assert_same_bytes(data.draw(st.from_type(cls)))


# The quick loop (./dev unit) sweeps every third of them; ./dev test every one.
EVERY_KIO_MESSAGE = _classes(ALL_APIS, (EntityType.request, EntityType.response))[::3 if QUICK else 1]


@pytest.mark.parametrize("cls", EVERY_KIO_MESSAGE, ids=lambda c: f"{c.__module__.split('schema.')[1]}")
@settings(max_examples=examples(3), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_kio_message_is_byte_identical(cls, data):
    assert_same_bytes(data.draw(st.from_type(cls)))


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
