"""Admin views of our server through three real admin clients: the Java Admin client (kafka-clients 3.9.1,
tests/clients/java/AdminOps.java), confluent-kafka's AdminClient and kafka-python's KafkaAdminClient
(tests/clients/admin.py).

Per admin client, a group of 2 consumers of the same client library consumes and commits a 4-partition
topic; then through the admin client:

- list groups shows the group (Stable where the client reports states); describe shows it Stable with
  protocol type consumer, 2 members and the assignments the consumers report (admin-describe);
- list committed offsets equals each partition's end (admin-offsets);
- delete group while members are alive is refused (NON_EMPTY_GROUP); after the members stop, OffsetDelete of
  partition 0 succeeds, partition 0's offset is gone from the admin view AND from an independent OffsetFetch,
  the other partitions keep theirs (admin-delete-offsets; confluent-kafka has no offsets deletion: n/a);
- delete group succeeds, the group is no longer listed, describe shows it Dead (or not found) with no members,
  and it has no committed offsets (admin-delete-group).
"""

from __future__ import annotations

import pytest

from tests.clients import compat
from tests.clients.admin import ADMIN_CLIENTS
from tests.clients.admin_scenario import admin_scenario
from tests.clients.drivers import CLIENTS
from tests.clients.our_server import RestartableServer

NOT_DRIVEN = "not driven (the admin tests use Java, confluent-kafka, kafka-python)"
ADMIN_FEATURES = ("admin-describe", "admin-offsets", "admin-delete-offsets", "admin-delete-group")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = RestartableServer(str(tmp_path_factory.mktemp("ours-admin") / "data"))
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


def test_clients_without_admin_tests_are_marked():
    for client in CLIENTS:
        if client not in ADMIN_CLIENTS:
            compat.mark(client, ADMIN_FEATURES, "n/a", NOT_DRIVEN)




@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_admin_views(client, server):
    admin_scenario(client, server.bootstrap)


