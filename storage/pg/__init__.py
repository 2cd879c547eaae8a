"""The PostgreSQL store of cluster mode (storage.url set): every SQL statement of the server lives here.

connect (the pool, URL redaction), schema (versioned migrations), leases (kc_nodes), ownership
(kc_partitions: owner + epoch, the fence of every write), errors. Policy - timers, who should own
what, hooks into the runtime - lives in coordinator/cluster/, which calls these.
"""
