"""KIP-932 share partitions and the share coordinator, as pure state machines.

* `state_batches`: Kafka's PersisterStateBatchCombiner (merging state batches).
* `state_store`: the share coordinator's fold of __share_group_state (ShareCoordinatorShard) and its
  answers to Write/Read/Initialize/Delete/ReadSummary share-group state as records + answers.
* `record_states`, `share_partition`, `acquire`, `acknowledge`: a share partition (Kafka's SharePartition).
* `sessions`: the share-session cache (ShareSessionCache).

Nothing here does I/O or reads a clock: time comes in as `now_ms` arguments.
"""
