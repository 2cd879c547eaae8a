"""ACL bindings with Kafka's wire codes (org.apache.kafka.common.acl / resource), their filters, and the validation
CreateAcls and DeleteAcls/DescribeAcls apply (AclControlManager.validateNewAcl, AclApis, the filters' own checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kio.schema.errors import ErrorCode

CLUSTER_NAME = "kafka-cluster"
WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# AclEntry.supportedOperations: what each resource type's authorized_operations covers
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


class AclError(Exception):
    """A binding or filter Kafka refuses: `code` and the message it answers with."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    def to_json(self) -> dict[str, Any]:
        return {"resource_type": int(self.resource_type), "name": self.name, "pattern_type": int(self.pattern_type),
                "principal": self.principal, "host": self.host, "operation": int(self.operation),
                "permission": int(self.permission)}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> AclBinding:
        return cls(ResourceType(value["resource_type"]), value["name"], PatternType(value["pattern_type"]),
                   value["principal"], value["host"], AclOperation(value["operation"]),
                   AclPermission(value["permission"]))


def _enum(kind: type[IntEnum], code: int) -> Any:
    try:
        return kind(code)
    except ValueError:
        return kind(0)  # UNKNOWN


def binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str, operation: int,
            permission: int) -> AclBinding:
    """A binding from wire codes (unknown codes become UNKNOWN, refused by `validate_new`)."""
    return AclBinding(_enum(ResourceType, resource_type), name, _enum(PatternType, pattern_type), principal, host,
                      _enum(AclOperation, operation), _enum(AclPermission, permission))


def validate_new(acl: AclBinding) -> None:
    """What CreateAcls refuses (AclApis, AclControlManager.validateNewAcl); AclError with Kafka's message."""
    invalid = ErrorCode.invalid_request
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        raise AclError(invalid, "The only valid name for the CLUSTER resource is kafka-cluster")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError(invalid, f"Invalid patternType {acl.pattern_type.name}")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise AclError(invalid, f"Invalid resourceType {acl.resource_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise AclError(invalid, f"Invalid operation {acl.operation.name}")
    if acl.permission not in (AclPermission.DENY, AclPermission.ALLOW):
        raise AclError(invalid, f"Invalid permissionType {acl.permission.name}")
    if not acl.name:
        raise AclError(invalid, "Resource name should not be empty")
    if ":" not in acl.principal:
        raise AclError(invalid, f"Could not parse principal from `{acl.principal}` (no colon is present separating "
                                "the principal type from the principal name)")


@dataclass(frozen=True)
class AclFilter:
    """AclBindingFilter: None (null on the wire) and the ANY codes match everything; MATCH matches the literal
    name, the wildcard and every prefix pattern of the name."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermission

    def validate(self) -> None:
        """The filter's own checks (AclBindingFilter.findIndefiniteField): UNKNOWN anywhere is refused."""
        for field_name, value in (("resourceType", self.resource_type), ("patternType", self.pattern_type),
                                  ("operation", self.operation), ("permissionType", self.permission)):
            if value == 0:
                raise AclError(ErrorCode.invalid_request, f"Invalid {field_name} UNKNOWN in the filter")

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission == AclPermission.ANY or self.permission == acl.permission

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.name in (self.name, WILDCARD_RESOURCE)
            return acl.pattern_type == PatternType.PREFIXED and self.name.startswith(acl.name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.name is None or self.name == acl.name


def acl_filter(resource_type: int, name: str | None, pattern_type: int, principal: str | None, host: str | None,
               operation: int, permission: int) -> AclFilter:
    return AclFilter(_enum(ResourceType, resource_type), name, _enum(PatternType, pattern_type), principal, host,
                     _enum(AclOperation, operation), _enum(AclPermission, permission))
