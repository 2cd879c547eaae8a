"""Who may read the operations endpoint (issue 30): with an authorizer on, the unauthenticated http.listener served
groups, topics and lag that the Kafka listener refuses. `http.auth=basic` asks every route but the probes for the
credentials Kafka clients log in with (SCRAM or PLAIN), and, with an authorizer, DESCRIBE on the cluster; with
`http.auth=none` and an authorizer, an endpoint beyond loopback is a warning at start-up."""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request

import pytest
from kio.schema.errors import ErrorCode as E

from coordinator.security.acl_model import AclOperation as Op, ResourceType as Res
from tests.integration.test_acls import as_user, create_acls, creation
from tests.support.certs import create_scram_user
from tests.support.server_process import start_server

pytestmark = pytest.mark.integration

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" '
        'user_bob="bob-pw";')
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:admin;User:ANONYMOUS"}
SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "http.listener": "http://127.0.0.1:0", "http.auth": "basic", "connection.failed.authentication.delay.ms": "300",
    **AUTHORIZER,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = start_server(str(tmp_path_factory.mktemp("http-auth")), overrides=SETTINGS, topics={"orders": 1})
    try:
        create_scram_user(process.bootstrap, "carol", "carol-pw")
        with as_user(process, "admin") as admin:
            assert create_acls(admin, creation(Res.CLUSTER, "kafka-cluster", "User:carol", Op.DESCRIBE)) == [
                (E.none, None)]
        yield process
    finally:
        process.kill()


def get(server, path: str, user: str | None = None, password: str = "") -> tuple[int, dict, bytes]:
    port = server.wait_for_event("http listening")["port"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if user is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_every_route_but_the_probes_asks_for_credentials(server):
    for path in ("/metrics", "/api/groups", "/api/topics", "/api/groups/g", "/groups/g/rebalances", "/"):
        status, headers, _ = get(server, path)
        assert status == 401, path
        assert headers["WWW-Authenticate"].startswith("Basic realm=")
    assert get(server, "/health/live")[0] == 200
    assert get(server, "/health/ready")[0] in (200, 503)  # answered without credentials


def test_a_plain_or_scram_user_with_describe_on_the_cluster_reads_it(server):
    assert get(server, "/api/topics", "admin", "admin-pw")[0] == 200  # PLAIN, a super user
    started = time.monotonic()
    status, _, body = get(server, "/metrics", "carol", "carol-pw")  # SCRAM-SHA-512, with the ACL
    assert status == 200 and b"kcoord_connections" in body
    assert get(server, "/metrics", "carol", "carol-pw")[0] == 200
    assert time.monotonic() - started < 5
    server.wait_for_event("http listening", auth="basic")


def test_a_wrong_password_is_refused_after_the_delay_and_a_user_without_the_acl_is_forbidden(server):
    for user, password in (("carol", "wrong"), ("admin", "carol-pw"), ("nobody", "x")):
        started = time.monotonic()
        status, headers, _ = get(server, "/api/groups", user, password)
        assert status == 401 and "WWW-Authenticate" in headers
        assert time.monotonic() - started >= 0.3  # connection.failed.authentication.delay.ms
        server.wait_for_event("http authentication failed", user=user)
    status, _, body = get(server, "/api/groups", "bob", "bob-pw")  # PLAIN, without DESCRIBE on the cluster
    assert status == 403 and b"User:bob" in body
    server.wait_for_event("http authorization failed", principal="User:bob")
    assert "bob-pw" not in "\n".join(server.lines) and "carol-pw" not in "\n".join(server.lines)


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_an_open_endpoint_beyond_loopback_is_a_warning_when_an_authorizer_is_on(tmp_path, host, warned):
    process = start_server(str(tmp_path), overrides={"http.listener": f"http://{host}:0", **AUTHORIZER})
    try:
        process.wait_for_event("http listening", auth="none")
        assert bool(process.events("http listener is open")) is warned
    finally:
        process.kill()
