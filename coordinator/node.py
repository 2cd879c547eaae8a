"""This node's identity: node id, cluster id and the advertised endpoint.

The cluster id is kept in `<log.dirs>/meta.properties`, as Kafka's storage tool writes
it, so it survives restarts; a directory formatted for another node id is refused.
"""

from __future__ import annotations

import base64
import os
import uuid
from dataclasses import dataclass

from coordinator.config import ConfigError, Listener

META_FILE = "meta.properties"


def new_cluster_id() -> str:
    """A random 22-character URL-safe base64 UUID, like Kafka's Uuid.randomUuid().toString()
    (which also never starts with '-', so the id cannot be mistaken for a CLI flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def load_or_create_cluster_id(log_dir: str, node_id: int) -> str:
    path = os.path.join(log_dir, META_FILE)
    os.makedirs(log_dir, exist_ok=True)
    if os.path.exists(path):
        props: dict[str, str] = {}
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, value = line.split("=", 1)
                    props[key.strip()] = value.strip()
        cluster_id = props.get("cluster.id")
        if not cluster_id:
            raise ConfigError(f"log.dirs: {path} has no cluster.id")
        stored_node = props.get("node.id")
        if stored_node is not None and stored_node != str(node_id):
            raise ConfigError(f"node.id: {path} belongs to node {stored_node}, not {node_id}")
        return cluster_id
    cluster_id = new_cluster_id()
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(f"#\nnode.id={node_id}\nversion=1\ncluster.id={cluster_id}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return cluster_id


@dataclass
class Node:
    node_id: int
    cluster_id: str
    host: str = "localhost"
    port: int = 0
    rack: str | None = None
    endpoints: tuple[tuple[str, str, int], ...] = ()  # every advertised listener: (name, host, port)

    def advertise(self, *listeners: Listener) -> None:
        """The advertised listeners, once bound; the first is `host`/`port` (the node's address in logs)."""
        self.host, self.port = listeners[0].host, listeners[0].port
        self.endpoints = tuple((listener.name, listener.host, listener.port) for listener in listeners)
