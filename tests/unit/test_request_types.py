"""protocol/request_types.py: each API's request union holds exactly the classes of the versions the table handles."""

from __future__ import annotations

from typing import get_args

import pytest

from protocol.apis import API_TABLE, ApiKey
from protocol.request_types import REQUEST_TYPES


def members(union: object) -> set[object]:
    return set(get_args(union)) or {union}  # a single version's class is no union


@pytest.mark.parametrize("key", sorted(REQUEST_TYPES), ids=lambda key: key.name)
def test_a_union_holds_the_request_class_of_every_version_the_table_handles(key: ApiKey) -> None:
    assert members(REQUEST_TYPES[key]) == set(API_TABLE[key].requests.values())


def test_every_api_of_the_table_has_its_union() -> None:
    assert sorted(ApiKey(key).name for key in API_TABLE if ApiKey(key) not in REQUEST_TYPES) == []
