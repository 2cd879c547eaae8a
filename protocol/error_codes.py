"""The error codes a response carries, as Kafka's `AbstractResponse.errorCounts()` counts them, NONE left out.

Every `error_code` field of a response entity and of the entities nested in it (per topic, per
partition, per group...) counts once. The walk of each entity class is planned once from kio's field
metadata, so counting a response costs a few attribute reads per entity: the metrics of the generic
answer path (coordinator/net/request_metrics.py) call it only when metrics are on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from protocol.kio_fields import EntityField, EntityTupleField, classify_field


def error_name(code: int) -> str:
    """Kafka's name of an error code (NON_EMPTY_GROUP), or ERROR_<n> for a code this kio does not know."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"ERROR_{code}"


#: entity class -> (names of its error code fields, names of nested entities, names of entity tuples)
_Plan = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
_plans: dict[type, _Plan] = {}


def _plan(entity_type: type) -> _Plan:
    plan = _plans.get(entity_type)
    if plan is None:
        codes, nested, sequences = [], [], []
        for field in fields(entity_type):
            kind = classify_field(field)
            if isinstance(kind, EntityTupleField):
                sequences.append(field.name)
            elif isinstance(kind, EntityField):
                nested.append(field.name)
            elif field.name == "error_code":
                codes.append(field.name)
        plan = _plans[entity_type] = (tuple(codes), tuple(nested), tuple(sequences))
    return plan


def count_errors(entity: Any, count: Callable[[int], None]) -> None:
    """Call `count(code)` for every error code in `entity` other than NONE (0)."""
    if not is_dataclass(entity):
        return  # an already-encoded body (protocol.codec.Encoded) or a legacy tuple: nothing to read
    codes, nested, sequences = _plan(type(entity))
    for name in codes:
        code = int(getattr(entity, name))
        if code:
            count(code)
    for name in nested:
        child = getattr(entity, name)
        if child is not None:
            count_errors(child, count)
    for name in sequences:
        for child in getattr(entity, name) or ():
            count_errors(child, count)
