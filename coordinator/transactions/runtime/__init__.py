"""The transaction coordinator's runtime: `__transaction_state` partitions hosted on this node (their log,
their load by replay), the requests of the transactional APIs, the markers sent to the partitions of a
transaction, and the timers (timed-out transactions aborted, idle transactional ids expired). The decisions
themselves are the parent package's (pure, fake-clock tested)."""
