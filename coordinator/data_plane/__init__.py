"""The embedded data plane: topic logs, Produce, Fetch, ListOffsets, producer ids.

It exists so that real clients can produce and consume whole topics against this
server with nothing else installed (see docs/DATA_PLANE.md). Handlers live in
coordinator/handlers/{produce,fetch,list_offsets,topics_admin,init_producer_id}.py;
this package holds the state they share.
"""

from coordinator.data_plane.plane import DataPlane, DataPlaneSettings

__all__ = ["DataPlane", "DataPlaneSettings"]
