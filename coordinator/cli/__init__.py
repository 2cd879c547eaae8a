"""`python -m coordinator groups`: a kafka-consumer-groups-style tool over the Kafka wire protocol
(client = one broker connection, admin = the requests, groups = the commands, render = the output)."""
