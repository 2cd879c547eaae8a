"""Values many responses carry, defined once: no throttling, "not requested" authorized
operations, the null topic id, and kio's millisecond durations as ints."""

from __future__ import annotations

import datetime
import uuid

from kio.static.primitive import i32Timedelta

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
NOT_REQUESTED = -(2**31)  # Int.MinValue: authorized operations not requested
ZERO_UUID = uuid.UUID(int=0)  # no topic id
_ONE_MS = datetime.timedelta(milliseconds=1)


def ms(value: datetime.timedelta) -> int:
    """A request's duration field (kio gives a timedelta) in whole milliseconds."""
    return value // _ONE_MS
