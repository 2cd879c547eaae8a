"""Security in cluster mode: a SCRAM user and an ACL created through one node reach the other (kc_scram_credentials,
kc_acls, a NOTIFY), and a node started later reads them before it serves; nothing secret is stored in the clear."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.errors import ErrorCode as E

from tests.support.certs import create_scram_user
from tests.support.cluster import ClusterNodes, wait_until
from tests.support.dispatch import named_request
from tests.support.scram_client import authenticate_scram
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}


def find_group_as(node, user: str, password: str, group: str) -> E:
    """FindCoordinator of `group` (DESCRIBE on it; any node answers) by `user`, authenticated with SCRAM-SHA-512
    on the node's SASL listener: its error code, or the authentication's when that fails."""
    with WireClient(node.host, node.port_of("SASL_PLAINTEXT")) as client:
        code = authenticate_scram(client, user, password)
        if code != E.none:
            return code  # SASL_AUTHENTICATION_FAILED: this node does not know the credential (yet)
        return client.call(named_request("find_coordinator", 3, key=group, key_type=0)).error_code


def test_credentials_and_acls_made_on_one_node_serve_on_every_node(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path, **SETTINGS)
    try:
        one, two = cluster.start_all(2)
        create_scram_user(one.bootstrap, "alice", "alice-pw")
        admin = AdminClient({"bootstrap.servers": one.bootstrap})
        acl = AclBinding(ResourceType.GROUP, "shop", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        for future in admin.create_acls([acl]).values():
            future.result(timeout=15)
        wait_until(lambda: find_group_as(two, "alice", "alice-pw", "shop") == E.none, 15,
                   "node 2 authenticates alice and allows her ACL")
        assert find_group_as(two, "alice", "alice-pw", "other") == E.group_authorization_failed
        three = cluster.start(3)  # reads both before it listens
        # authenticated and allowed (the group's partition may be moving to the new node: not available yet)
        assert find_group_as(three, "alice", "alice-pw", "shop") in (E.none, E.coordinator_not_available)
        assert find_group_as(three, "alice", "alice-pw", "other") == E.group_authorization_failed
        rows = cluster.query("SELECT user_name, mechanism, iterations, stored_key FROM kc_scram_credentials")
        assert [(r["user_name"], r["mechanism"], r["iterations"]) for r in rows] == [("alice", 2, 8192)]
        assert b"alice-pw" not in bytes(rows[0]["stored_key"])
        assert cluster.query("SELECT name, principal FROM kc_acls") == [{"name": "shop", "principal": "User:alice"}]
    finally:
        cluster.close()
