"""KIP-848 consumer groups (group.protocol=consumer): members, target assignment, reconciliation, assignors."""
