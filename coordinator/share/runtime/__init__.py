"""The share coordinator and the share partitions at run time: logs, timers, sessions, durability (over the pure
state machines of coordinator/share/)."""
