"""share.auto.offset.reset: where a share partition with no persisted start offset starts (Kafka's
ShareGroupAutoOffsetResetStrategy): `earliest` (the log start offset), `latest` (the log end offset), or
`by_duration:<ISO-8601 duration>` (the first record at or after now - duration, else the log end offset).

The duration is Java's Duration.parse form, PnDTnHnMn.nS (days, hours, minutes, seconds with a fraction;
case-insensitive; a negative duration is refused)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class OffsetReset:
    kind: str  # "earliest", "latest" or "by_duration"
    duration_ms: int = 0


def parse_offset_reset(text: str) -> OffsetReset:
    """The strategy; ValueError for anything else."""
    value = text.strip().lower()
    if value in ("earliest", "latest"):
        return OffsetReset(value)
    if not value.startswith("by_duration:"):
        raise ValueError("must be latest, earliest or by_duration:PnDTnHnMn.nS")
    spec = text.strip()[len("by_duration:"):]
    match = _DURATION.fullmatch(spec)
    if spec.startswith("-") or match is None or spec.upper() in ("P", "PT") or spec.upper().endswith("T"):
        raise ValueError(f"{spec!r} is not a non-negative ISO-8601 duration (PnDTnHnMn.nS)")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups()[:4])
    fraction = match.group(5) or ""
    millis = int((fraction + "000")[:3]) if fraction else 0
    return OffsetReset("by_duration", ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + millis)


def start_offset(reset: OffsetReset, log_start: int, log_end: int, offset_for_time: Callable[[int], int | None],
                 now_ms: int) -> int:
    """The start offset of a share partition that has none: `offset_for_time(ts)` is ListOffsets' answer
    for a timestamp (the first offset whose record is at or after it, None when there is none)."""
    if reset.kind == "earliest":
        return log_start
    if reset.kind == "latest":
        return log_end
    found = offset_for_time(now_ms - reset.duration_ms)
    return log_end if found is None else max(found, log_start)
