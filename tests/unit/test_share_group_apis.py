"""The share-group rows of the API surface, in process: ApiVersions lists the share APIs (ShareGroupHeartbeat v1,
ShareGroupDescribe v1, ShareFetch v1-2, ShareAcknowledge v1-2) and Kafka 4.2's share.version feature (supported
0-1, finalized 1) from v3 on; FindCoordinator's share key type (v6, "group:topicId:partition", the leader of its
__share_group_state partition; a malformed key or an older version INVALID_REQUEST); ListGroups' types filter
and ShareGroupDescribe over a share group's records."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from coordinator.records.types import ShareGroupRecord
from rules.placement import share_coordinator_key
from storage.share_group_records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
)
from tests.support.dispatch import InProcess, named_request

E = ErrorCode


def test_api_versions_lists_the_share_apis_and_the_share_version_feature():
    app = InProcess()
    answer = app.call(named_request("api_versions", 3, client_software_name="t", client_software_version="1"))
    versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert versions[76] == (1, 1) and versions[77] == (1, 1) and versions[78] == (1, 2) and versions[79] == (1, 2)
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [("share.version", 0, 1)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features] == [
        ("share.version", 1, 1)]
    assert answer.finalized_features_epoch >= 0
    old = app.call(named_request("api_versions", 2))
    assert {k.api_key for k in old.api_keys} >= {76, 77, 78, 79}


def test_find_coordinator_share_keys():
    app = InProcess()
    key = share_coordinator_key("g", uuid.UUID(int=5), 0)
    answer = app.call(named_request("find_coordinator", 6, key_type=2, coordinator_keys=(key, "g:nope:0", "g:x",
                                                                                        "no-colons")))
    assert [(c.key, c.error_code) for c in answer.coordinators] == [
        (key, E.none), ("g:nope:0", E.invalid_request), ("g:x", E.invalid_request), ("no-colons", E.invalid_request)]
    assert answer.coordinators[0].node_id == app.services.node.node_id
    v5 = app.call(named_request("find_coordinator", 5, key_type=2, coordinator_keys=(key,)))
    assert v5.coordinators[0].error_code is E.invalid_request  # share keys are v6's


def _share_group(app: InProcess, group_id: str, members: int) -> None:
    shard = app.services.groups.shard_for(group_id)
    records = [ShareGroupRecord(ShareGroupMetadataKey(group_id), ShareGroupMetadataValue(3, 0))]
    for i in range(members):
        records += [ShareGroupRecord(ShareGroupMemberMetadataKey(group_id, f"m{i}"),
                                     ShareGroupMemberMetadataValue(None, "client", "/10.0.0.1", ("t",))),
                    ShareGroupRecord(ShareGroupCurrentMemberAssignmentKey(group_id, f"m{i}"),
                                     ShareGroupCurrentMemberAssignmentValue(3, 2, 0, ()))]
    shard.replay_all(records)


async def test_list_groups_types_filter_and_share_group_describe():
    app = InProcess()
    _share_group(app, "sg", 2)
    _share_group(app, "empty-sg", 0)
    listed = app.call(named_request("list_groups", 5, states_filter=(), types_filter=("share",)))
    assert sorted((g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups) == [
        ("empty-sg", "share", "Empty", "share"), ("sg", "share", "Stable", "share")]
    assert app.call(named_request("list_groups", 5, states_filter=(), types_filter=("consumer",))).groups == ()
    stable = app.call(named_request("list_groups", 5, states_filter=("stable",), types_filter=()))
    assert [g.group_id for g in stable.groups] == ["sg"]
    described = app.call(named_request("share_group_describe", 1, group_ids=("sg", "nope"),
                                       include_authorized_operations=False))
    sg, nope = described.groups
    assert (sg.error_code, sg.group_state, sg.group_epoch, sg.assignor_name) == (E.none, "Stable", 3, "simple")
    assert sorted(m.member_id for m in sg.members) == ["m0", "m1"]
    assert (nope.error_code, nope.error_message) == (E.group_id_not_found, "Group nope not found.")
    # DescribeGroups (classic groups' API) does not know share groups: Dead, as Kafka answers v0-v5
    classic = app.call(named_request("describe_groups", 5, groups=("sg",), include_authorized_operations=False))
    assert classic.groups[0].group_state == "Dead"


async def test_share_metrics():
    from types import SimpleNamespace

    from coordinator.ops.metrics import NodeCollector

    app = InProcess()
    _share_group(app, "sg", 2)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in NodeCollector(SimpleNamespace(services=app.services)).share_metrics()
               for s in family.samples}
    assert samples[("kcoord_share_groups", (("state", "Stable"),))] == 1
    assert samples[("kcoord_share_group_members", (("group", "sg"),))] == 2
    assert samples[("kcoord_share_sessions", ())] == 0
