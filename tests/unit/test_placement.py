"""partition_for must equal Kafka's Utils.abs(String.hashCode) % partitions.

Expected values were printed by Java 17 (String.hashCode, and the Utils.abs rule).
"""

import pytest

from rules.placement import java_string_hash, kafka_abs, partition_for

JAVA = [  # (string, hashCode, partition of 50, partition of 7)
    ("", 0, 0, 0),
    ("a", 97, 47, 6),
    ("hello", 99162322, 22, 0),
    ("my-group", -1906497762, 12, 1),
    ("polygenelubricants", -2147483648, 0, 0),
    ("GydZG_", -2147483648, 0, 0),
    ("console-consumer-12345", 158455506, 6, 6),
    ("\u00e9t\u00e9", 227742, 42, 4),
    ("\U0001F600grp", 1276929186, 36, 1),  # a surrogate pair: two UTF-16 code units
    ("group-\u4e2d\u6587", 506956552, 2, 4),
    ("z" * 52, -1531216768, 18, 4),
]


@pytest.mark.parametrize("text, java_hash, p50, p7", JAVA)
def test_matches_java(text, java_hash, p50, p7):
    assert java_string_hash(text) == java_hash
    assert partition_for(text) == p50
    assert partition_for(text, 7) == p7


def test_utils_abs_of_min_int_is_zero():
    assert kafka_abs(-2147483648) == 0
    assert kafka_abs(-5) == 5
