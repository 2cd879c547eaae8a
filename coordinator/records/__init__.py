"""The coordinator's records: their types, and their `__consumer_offsets` bytes (storage/records.py and
storage/consumer_group_records.py hold the wire schemas)."""
