"""The native fast lane: OffsetCommit (v2-v9), Heartbeat and OffsetFetch from a request frame straight to answer
bytes, compiled from Cython (`_*.pyx`, built by setup.py); the pure-Python handlers stay complete and are the
reference. `native.py` decides which path runs (COORDINATOR_NO_EXTENSIONS=1 forces Python), `lane.py` puts the
native fast paths in front of the Python ones; anything the native code does not handle goes to today's path.
"""
