"""The ACL authorizer's decisions (Kafka's StandardAuthorizer), the filters of DescribeAcls/DeleteAcls and the
validation of CreateAcls."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.security.acl_model import (
    AclBinding,
    AclError,
    AclOperation as Op,
    AclPermission as Perm,
    PatternType as Pat,
    ResourceType as Res,
    acl_filter,
    binding,
    validate_new,
)
from coordinator.security.authorizer import Authorizer, parse_super_users

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(res: Res, name: str, op: Op, perm: Perm = Perm.ALLOW, principal: str = ALICE, host: str = "*",
        pattern: Pat = Pat.LITERAL) -> AclBinding:
    return AclBinding(res, name, pattern, principal, host, op, perm)


def test_no_acl_on_a_resource_denies_unless_allow_everyone():
    assert not Authorizer().authorize(ALICE, HOST, Op.READ, Res.GROUP, "g")
    assert Authorizer(allow_if_no_acl=True).authorize(ALICE, HOST, Op.READ, Res.GROUP, "g")
    # an ACL of someone else on the resource: no longer "no ACL found"
    other = Authorizer(allow_if_no_acl=True, acls=[acl(Res.GROUP, "g", Op.READ, principal=BOB)])
    assert not other.authorize(ALICE, HOST, Op.READ, Res.GROUP, "g")
    assert other.authorize(ALICE, HOST, Op.READ, Res.GROUP, "h")


def test_super_users_may_do_everything():
    assert parse_super_users(" User:admin ; User:ops;") == frozenset({"User:admin", "User:ops"})
    authorizer = Authorizer(super_users=parse_super_users("User:admin"),
                            acls=[acl(Res.TOPIC, "t", Op.ALL, Perm.DENY, principal="User:*")])
    assert authorizer.authorize("User:admin", HOST, Op.DELETE, Res.TOPIC, "t")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "t")


def test_literal_wildcard_and_prefixed_patterns():
    authorizer = Authorizer(acls=[acl(Res.TOPIC, "orders", Op.READ), acl(Res.GROUP, "*", Op.READ),
                                  acl(Res.TOPIC, "logs-", Op.WRITE, pattern=Pat.PREFIXED)])
    assert authorizer.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders2")
    assert authorizer.authorize(ALICE, HOST, Op.READ, Res.GROUP, "any-group")
    assert authorizer.authorize(ALICE, HOST, Op.WRITE, Res.TOPIC, "logs-app")
    assert not authorizer.authorize(ALICE, HOST, Op.WRITE, Res.TOPIC, "log")
    assert not authorizer.authorize(BOB, HOST, Op.READ, Res.TOPIC, "orders")


def test_deny_wins_and_is_not_implied():
    authorizer = Authorizer(acls=[acl(Res.TOPIC, "t", Op.ALL), acl(Res.TOPIC, "t", Op.WRITE, Perm.DENY)])
    assert authorizer.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "t")
    assert not authorizer.authorize(ALICE, HOST, Op.WRITE, Res.TOPIC, "t")
    assert authorizer.authorize(ALICE, HOST, Op.DESCRIBE, Res.TOPIC, "t")  # a DENY of WRITE denies no DESCRIBE
    denied_all = Authorizer(acls=[acl(Res.TOPIC, "t", Op.READ), acl(Res.TOPIC, "t", Op.ALL, Perm.DENY,
                                                                     principal="User:*")])
    assert not denied_all.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "t")


@pytest.mark.parametrize("granted, wanted, allowed", [
    (Op.READ, Op.DESCRIBE, True), (Op.WRITE, Op.DESCRIBE, True), (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True), (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.DESCRIBE, Op.READ, False), (Op.CREATE, Op.DESCRIBE, False), (Op.READ, Op.WRITE, False),
])
def test_implied_operations(granted, wanted, allowed):
    assert Authorizer(acls=[acl(Res.TOPIC, "t", granted)]).authorize(ALICE, HOST, wanted, Res.TOPIC, "t") is allowed


def test_principal_and_host_wildcards():
    authorizer = Authorizer(acls=[acl(Res.GROUP, "g", Op.READ, principal="User:*", host=HOST)])
    assert authorizer.authorize(BOB, HOST, Op.READ, Res.GROUP, "g")
    assert not authorizer.authorize(BOB, "10.0.0.2", Op.READ, Res.GROUP, "g")


def test_authorized_operations_bits():
    authorizer = Authorizer(acls=[acl(Res.GROUP, "g", Op.READ)])
    assert authorizer.authorized_operations(ALICE, HOST, Res.GROUP, "g") == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_remove_and_describe_with_filters():
    acls = [acl(Res.TOPIC, "orders", Op.READ), acl(Res.TOPIC, "ord", Op.WRITE, pattern=Pat.PREFIXED),
            acl(Res.TOPIC, "*", Op.DESCRIBE), acl(Res.GROUP, "orders", Op.READ, principal=BOB)]
    authorizer = Authorizer(acls=acls)
    match = acl_filter(Res.TOPIC, "orders", Pat.MATCH, None, None, Op.ANY, Perm.ANY)
    assert set(authorizer.describe(match)) == set(acls[:3])
    literal = acl_filter(Res.ANY, "orders", Pat.LITERAL, None, None, Op.ANY, Perm.ANY)
    assert set(authorizer.describe(literal)) == {acls[0], acls[3]}
    by_principal = acl_filter(Res.ANY, None, Pat.ANY, BOB, None, Op.ANY, Perm.ANY)
    assert authorizer.describe(by_principal) == [acls[3]]
    authorizer.remove(authorizer.describe(literal))
    assert authorizer.acls() == set(acls[1:3])
    assert not authorizer.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")  # DESCRIBE * remains: not READ


@pytest.mark.parametrize("codes, message", [
    ((Res.CLUSTER, "c", Pat.LITERAL, ALICE, "*", Op.ALTER, Perm.ALLOW),
     "The only valid name for the CLUSTER resource is kafka-cluster"),
    ((Res.TOPIC, "t", Pat.MATCH, ALICE, "*", Op.READ, Perm.ALLOW), "Invalid patternType MATCH"),
    ((Res.ANY, "t", Pat.LITERAL, ALICE, "*", Op.READ, Perm.ALLOW), "Invalid resourceType ANY"),
    ((Res.TOPIC, "t", Pat.LITERAL, ALICE, "*", Op.ANY, Perm.ALLOW), "Invalid operation ANY"),
    ((Res.TOPIC, "t", Pat.LITERAL, ALICE, "*", Op.READ, Perm.ANY), "Invalid permissionType ANY"),
    ((Res.TOPIC, "", Pat.LITERAL, ALICE, "*", Op.READ, Perm.ALLOW), "Resource name should not be empty"),
    ((Res.TOPIC, "t", Pat.LITERAL, "alice", "*", Op.READ, Perm.ALLOW), "Could not parse principal from `alice`"),
    ((99, "t", Pat.LITERAL, ALICE, "*", Op.READ, Perm.ALLOW), "Invalid resourceType UNKNOWN"),
])
def test_create_validation(codes, message):
    with pytest.raises(AclError, match=message) as raised:
        validate_new(binding(*codes))
    assert raised.value.code is ErrorCode.invalid_request


def test_bindings_round_trip_through_json():
    original = acl(Res.TOPIC, "logs-", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED)
    assert AclBinding.from_json(original.to_json()) == original
