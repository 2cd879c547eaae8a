"""A Metadata request naming more than SLICE topics is answered in slices that yield to the
loop, with the very bytes of the generic path: every version, known, unknown, invalid,
repeated and auto-created topics, and the all-topics form."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.handlers import sliced_encoding
from protocol.apis import ApiKey
from tests.support.data_plane import Plane, req

NAMES = ["known-a", "nope", "bad name!", "known-b", "nope", "__consumer_offsets", "made-{v}", "known-a"]


def metadata(version: int, names: list[str] | None, allow: bool = True):
    topics = None if names is None else [{"name": n, "topic_id": None} for n in names]
    return req(ApiKey.METADATA, version, topics=topics, allow_auto_topic_creation=allow,
               include_topic_authorized_operations=version >= 8, include_cluster_authorized_operations=version >= 8)


@pytest.mark.parametrize("version", range(13))
async def test_sliced_answers_are_the_generic_bytes(tmp_path, monkeypatch, version):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("known-a", 3)
        await plane.create("known-b", 1)
        names = [n.format(v=version) for n in NAMES]
        generic, deferred = await plane.answer_frame(metadata(version, names))
        # the first answer auto-created made-<v>; ask again so both paths see the same catalog
        generic, _ = await plane.answer_frame(metadata(version, names + [f"again1-{version}"]))
        assert plane.decode(metadata(version, names), generic).topics[-1].error_code == \
            ErrorCode.leader_not_available
        monkeypatch.setattr(sliced_encoding, "SLICE", 3)  # 9 names: sliced, several slices
        monkeypatch.setattr(sliced_encoding, "BATCH", 3)
        sliced, deferred = await plane.answer_frame(metadata(version, names + [f"again2-{version}"]))
        assert deferred
        expected = generic.replace(f"again1-{version}".encode(), f"again2-{version}".encode())
        assert sliced == expected
        if version >= 1:  # v0 reads an empty list as "all topics"; null is v1+
            monkeypatch.setattr(sliced_encoding, "SLICE", 10**9)
            every, _ = await plane.answer_frame(metadata(version, None))
            monkeypatch.setattr(sliced_encoding, "SLICE", 2)
            monkeypatch.setattr(sliced_encoding, "BATCH", 2)
            sliced, deferred = await plane.answer_frame(metadata(version, None))
            assert deferred and sliced == every
