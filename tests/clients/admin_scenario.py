"""The admin scenario (describe, list, offsets, delete offsets, delete group) through one client's admin API,
against any server: tests/clients/test_server_admin.py and tests/clients/test_compose.py (in a container)."""

from __future__ import annotations

from tests.clients import compat
from tests.clients.admin import admin_client
from tests.clients.drivers import run_consumer
from tests.clients.process import ClientProcess
from tests.clients.produce import committed_offsets, create_topic, produce
from tests.clients.scenarios import stop_all, wait_committed, wait_consumed, wait_stable

PARTITIONS = 4


def _refused_as_non_empty(error: str | None) -> bool:
    return error is not None and error.replace("_", "").lower() in (
        "nonemptygroup", "nonemptygrouperror", "groupnotemptyexception")


def admin_scenario(client: str, bootstrap: str, prefix: str = "admin") -> None:
    """The whole scenario against any server (also tests/clients/test_compose.py, in a container)."""
    topic, group = f"{prefix}-{client}", f"{prefix}-group-{client}"
    members: list[ClientProcess] = []
    admin = None
    try:
        create_topic(bootstrap, topic, PARTITIONS)
        members = [run_consumer(client, bootstrap, group, topic) for _ in range(2)]
        wait_stable(members, topic, PARTITIONS)
        sent = produce(bootstrap, topic, PARTITIONS, 40)
        wait_consumed(members, 40)
        ends = {p: len(v) for p, v in sent.items()}
        wait_committed(members, topic, ends)
        admin = admin_client(client, bootstrap)

        with compat.record(client, "admin-describe"):
            groups = admin.list_groups()
            assert group in groups and groups[group] in (None, "Stable"), f"list groups: {groups}"
            d = admin.describe(group)
            want = sorted(sorted(m.assignment) for m in members)
            assert d.state == "Stable" and len(d.members) == 2, f"describe: {d}"
            assert sorted(sorted(a) for a in d.members.values()) == want, f"describe: {d}; clients report {want}"

        with compat.record(client, "admin-offsets"):
            assert admin.offsets(group) == {(topic, p): end for p, end in ends.items()}

        refused = admin.delete_group(group)  # members alive: Kafka answers NON_EMPTY_GROUP
        stop_all(members)

        if client == "confluent":
            compat.mark(client, ("admin-delete-offsets",), "n/a",
                        "confluent-kafka's AdminClient has no offsets deletion (OffsetDelete)")
        else:
            with compat.record(client, "admin-delete-offsets"):
                assert admin.delete_offsets(group, topic, [0]) == {0: None}
                left = {(topic, p): end for p, end in ends.items() if p != 0}
                assert admin.offsets(group) == left
                independent = committed_offsets(bootstrap, group, topic, PARTITIONS)
                assert independent == {p: (-1001 if p == 0 else end) for p, end in ends.items()}, independent

        with compat.record(client, "admin-delete-group"):
            assert _refused_as_non_empty(refused), f"delete of a group with live members answered {refused!r}"
            assert admin.delete_group(group) is None
            assert group not in admin.list_groups()
            try:
                d = admin.describe(group)
            except Exception as exc:  # some clients raise GROUP_ID_NOT_FOUND for a deleted group
                assert "GROUP_ID_NOT_FOUND" in str(exc).upper().replace("GROUPIDNOTFOUND", "GROUP_ID_NOT_FOUND"), exc
            else:
                assert d.state in ("Dead", "Unknown") and not d.members, f"describe after delete: {d}"
            assert admin.offsets(group) == {}
            assert set(committed_offsets(bootstrap, group, topic, PARTITIONS).values()) == {-1001}
    finally:
        for m in members:
            m.kill()
        if admin is not None:
            admin.close()
