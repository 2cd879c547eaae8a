"""The ACL authorizer, as Kafka's StandardAuthorizer decides (StandardAuthorizerData.authorize):

- a super user (`super.users`, `User:admin;User:ops`) may do everything;
- the ACLs that concern a resource are the LITERAL ones of its name, the LITERAL `*` of its type and the PREFIXED
  ones whose prefix starts its name; of those, the ones whose principal is the caller's or `User:*` and whose host
  is the caller's or `*` decide;
- a matching DENY of the operation (or of ALL) refuses, whatever else allows;
- an ALLOW of the operation, of ALL, or of an operation that implies it allows: DESCRIBE is implied by READ,
  WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS;
- with no ACL on the resource at all (for any principal), `allow.everyone.if.no.acl.found` decides (default false).

Lookups are by (type, name) and by the name's prefixes: an authorization costs the ACLs of that resource, not all.
"""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.security.acl_model import (
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)

_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                                      AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}


def parse_super_users(text: str) -> frozenset[str]:
    """Kafka's `super.users`: principals separated by ';'."""
    return frozenset(part.strip() for part in text.split(";") if part.strip())


class Authorizer:
    def __init__(self, super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False,
                 acls: Iterable[AclBinding] = ()) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._all: set[AclBinding] = set()
        self.replace(acls)

    def replace(self, acls: Iterable[AclBinding]) -> None:
        """The whole set (a reload from the store)."""
        self._literal.clear()
        self._prefixed.clear()
        self._all = set()
        self.add(acls)

    def add(self, acls: Iterable[AclBinding]) -> None:
        for acl in acls:
            if acl in self._all:
                continue
            self._all.add(acl)
            index = self._prefixed if acl.pattern_type == PatternType.PREFIXED else self._literal
            index.setdefault((acl.resource_type, acl.name), []).append(acl)

    def remove(self, acls: Iterable[AclBinding]) -> None:
        for acl in acls:
            if acl not in self._all:
                continue
            self._all.discard(acl)
            index = self._prefixed if acl.pattern_type == PatternType.PREFIXED else self._literal
            key = (acl.resource_type, acl.name)
            index[key].remove(acl)
            if not index[key]:
                del index[key]

    def acls(self) -> set[AclBinding]:
        return set(self._all)

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted((acl for acl in self._all if acl_filter.matches(acl)), key=_order)

    def _concerning(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD_RESOURCE:
            found += self._literal.get((resource_type, WILDCARD_RESOURCE), ())
        prefixed = self._prefixed
        if prefixed:
            for end in range(1, len(name) + 1):
                found += prefixed.get((resource_type, name[:end]), ())
        return found

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        acls = self._concerning(resource_type, name)
        if not acls:
            return self.allow_if_no_acl
        allowing = _IMPLIED_BY.get(operation, frozenset({operation}))
        allowed = False
        for acl in acls:
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (host, WILDCARD_HOST):
                continue
            if acl.permission == AclPermission.DENY:
                if acl.operation in (operation, AclOperation.ALL):
                    return False
            elif acl.operation == AclOperation.ALL or acl.operation in allowing:
                allowed = True
        return allowed

    def authorize_any(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType: whether some resource of the type allows the operation (an ALLOW not
        covered by a DENY of a wider or equal pattern); no ACL of the type at all: allow.everyone.if.no.acl.found."""
        if principal in self.super_users:
            return True
        allowing = _IMPLIED_BY.get(operation, frozenset({operation}))
        seen = False
        allows: list[AclBinding] = []
        denies: list[AclBinding] = []
        for acl in self._all:
            if acl.resource_type != resource_type:
                continue
            seen = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (host, WILDCARD_HOST):
                continue
            if acl.permission == AclPermission.DENY and acl.operation in (operation, AclOperation.ALL):
                denies.append(acl)
            elif acl.permission == AclPermission.ALLOW and (acl.operation == AclOperation.ALL
                                                             or acl.operation in allowing):
                allows.append(acl)
        if not seen:
            return self.allow_if_no_acl
        if any(d.pattern_type == PatternType.LITERAL and d.name == WILDCARD_RESOURCE for d in denies):
            return False
        return any(not any(_covers(d, a) for d in denies) for a in allows)

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The bit field of DescribeGroups' / Metadata's `authorized_operations` (bit = AclOperation code)."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << int(operation)
        return bits


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether a DENY pattern takes away everything an ALLOW pattern gives."""
    if deny.pattern_type == PatternType.PREFIXED:
        return allow.name.startswith(deny.name) and allow.name != WILDCARD_RESOURCE
    return allow.pattern_type == PatternType.LITERAL and allow.name == deny.name


def _order(acl: AclBinding) -> tuple:
    return (acl.resource_type, acl.pattern_type, acl.name, acl.principal, acl.host, acl.operation, acl.permission)
