"""The benchmarks' library; the scripts import it, never each other.

    wire       the one blocking wire client and request framing (tests/support/wire_client.py re-uses it)
    loadgen    wire-only load generator: pre-encoded frames, pipelined, in a pinned process
    members    classic-group member requests; AsyncMember, one member per connection
    fleet      many members on few connections, open-loop heartbeats (bench_steady)
    commits    OffsetCommit v7 requests and their answer check
    peers      install, start and stop ours and the peer servers (CLI: bench/peers.py)
    compare    servers side by side: start together, interleave runs, summary rows
    report     docs/BENCHMARKS.md sections, tables, machine facts; summary: the targets table
    inprocess  our server without sockets, for bench/profile
"""
