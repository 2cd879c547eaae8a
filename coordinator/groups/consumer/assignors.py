"""The server-side assignors by name, and `group.consumer.assignors` (Kafka's GroupCoordinatorConfig):
a comma-separated list of assignors, the first one the default for members that name none."""

from __future__ import annotations

from coordinator.groups.consumer.assignor_support import PartitionAssignorError
from coordinator.groups.consumer.model import PartitionAssignor
from coordinator.groups.consumer.range_assignor import RangeAssignor
from coordinator.groups.consumer.uniform_assignor import UniformAssignor

__all__ = ["ASSIGNORS", "DEFAULT_ASSIGNOR", "PartitionAssignorError", "assignors_from_config", "default_assignors"]

ASSIGNORS: dict[str, PartitionAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}
DEFAULT_ASSIGNOR = "uniform"

#: Kafka's class names for the same assignors, as group.consumer.assignors lists them by default
_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignors_from_config(value: str) -> list[PartitionAssignor]:
    """The assignors a `group.consumer.assignors` value names, in its order (short names or Kafka's class
    names); ValueError naming an unknown one, or when the list is empty."""
    assignors: list[PartitionAssignor] = []
    for item in value.split(","):
        name = item.strip()
        if not name:
            continue
        assignor = ASSIGNORS.get(_CLASS_NAMES.get(name, name))
        if assignor is None:
            known = ", ".join([*ASSIGNORS, *_CLASS_NAMES])
            raise ValueError(f"unknown assignor {name!r} (known: {known})")
        assignors.append(assignor)
    if not assignors:
        raise ValueError("names no assignor")
    return assignors


def default_assignors() -> dict[str, PartitionAssignor]:
    """Kafka's default group.consumer.assignors (uniform, then range), by name."""
    return {name: ASSIGNORS[name] for name in ("uniform", "range")}
