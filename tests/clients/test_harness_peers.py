"""Validate the client harness against a server that already supports groups and commits.

Not in the default run (it installs and starts peer servers; our own server gets OffsetCommit /
OffsetFetch only in a later issue):

    ./dev test -m peers tests/clients                                  # against noida-db
    HARNESS_SERVERS=noida-db,ours ./dev test -m peers tests/clients    # also our server (bench.peers "ours")

Each client gets its own topic and group on one shared server per module.
"""

from __future__ import annotations

import os

import pytest

from tests.clients.drivers import CLIENTS
from tests.clients.produce import create_topic
from tests.clients.scenarios import group_of_three_commits_survive_restart

pytestmark = pytest.mark.peers
SERVERS = [s.strip() for s in os.environ.get("HARNESS_SERVERS", "noida-db").split(",") if s.strip()]


@pytest.fixture(scope="module", params=SERVERS)
def peer(request):
    from bench.lib.peers import start_server

    with start_server(request.param, cpu=None) as endpoint:
        yield endpoint


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_group_of_three_commits_survive_restart(peer, client):
    topic, group = f"harness-{client}", f"harness-group-{client}"
    create_topic(peer.address, topic, 6)
    group_of_three_commits_survive_restart(client, peer.address, topic, group)
