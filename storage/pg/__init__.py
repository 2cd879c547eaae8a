"""The PostgreSQL store of cluster mode (storage.url set): every SQL statement of the server lives here.

connect (the pool, URL redaction), schema (versioned migrations), leases (kc_nodes), ownership
(kc_partitions: owner + epoch, the fence of every write), errors. Policy - timers, who should own
what, hooks into the runtime - lives in coordinator/cluster/, which calls these.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from storage.pg.pg_log import PgPartitionLog


def is_store_log(log: object) -> TypeGuard[PgPartitionLog]:
    """Whether `log` is a PgPartitionLog (cluster mode), asked without importing storage.pg.pg_log and asyncpg
    with it (~30 ms of a local-mode start): a process that has not imported that module holds none."""
    pg_log = sys.modules.get("storage.pg.pg_log")
    return pg_log is not None and isinstance(log, pg_log.PgPartitionLog)
