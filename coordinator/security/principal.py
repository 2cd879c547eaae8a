"""The name a TLS client certificate gives: its subject as an RFC 2253 string the way Java's
X500Principal.getName() prints it (Kafka's DefaultKafkaPrincipalBuilder uses that), then Kafka's
`ssl.principal.mapping.rules` (SslPrincipalMapper): `DEFAULT` (the DN as it is) and
`RULE:<pattern>/<replacement>/[LU]` (the first rule whose pattern matches the whole DN wins; L/U change case).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Python's names of the attributes Java prints by keyword
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
             "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}
# the others Java prints as <oid>=#<DER hex>: (oid, DER string tag)
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13),
         "title": ("2.5.4.12", 0x0C), "surname": ("2.5.4.4", 0x0C), "givenName": ("2.5.4.42", 0x0C),
         "initials": ("2.5.4.43", 0x0C), "generationQualifier": ("2.5.4.44", 0x0C),
         "dnQualifier": ("2.5.4.46", 0x13), "pseudonym": ("2.5.4.65", 0x0C), "postalCode": ("2.5.4.17", 0x0C),
         "businessCategory": ("2.5.4.15", 0x0C), "organizationIdentifier": ("2.5.4.97", 0x0C)}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_hex(tag: int, value: str) -> str:
    data = value.encode("utf-8")
    size = len(data)
    length = bytes([size]) if size < 0x80 else bytes([0x80 | ((size.bit_length() + 7) // 8)]) + \
        size.to_bytes((size.bit_length() + 7) // 8, "big")
    return "#" + (bytes([tag]) + length + data).hex()


def _attribute(name: str, value: str) -> str:
    if name in _KEYWORDS:
        return f"{_KEYWORDS[name]}={_escape(value)}"
    oid, tag = _OIDS.get(name, (name, 0x0C))
    return f"{oid}={_der_hex(tag, value)}"


def dn_of(subject: tuple) -> str:
    """RFC 2253 of a subject as `SSLSocket.getpeercert()` gives it (relative names in certificate order):
    most specific first, a multi-valued name joined with '+'."""
    return ",".join("+".join(_attribute(name, value) for name, value in rdn) for rdn in reversed(subject))


@dataclass(frozen=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self.replacement, dn)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


_RULE = re.compile(r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)")
_SPLIT = re.compile(r"\s*(DEFAULT|RULE:(?:\\.|[^\\/])*/(?:\\.|[^\\/])*/[LU]?|[^,]*?)\s*(?:,\s*|$)")


def _python_replacement(java: str) -> str:
    """Java's replacement syntax ($1, \\x) as Python's (\\g<1>, x)."""
    out = []
    i = 0
    while i < len(java):
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$" and i + 1 < len(java) and java[i + 1].isdigit():
            j = i + 1
            while j < len(java) and java[j].isdigit():
                j += 1
            out.append(f"\\g<{java[i + 1:j]}>")
            i = j
        else:
            out.append("\\\\" if char == "\\" else char)
            i += 1
    return "".join(out)


def parse_mapping_rules(text: str) -> tuple[MappingRule, ...]:
    """ssl.principal.mapping.rules; ValueError names the rule that does not parse."""
    rules = []
    for match in _SPLIT.finditer(text.strip()):
        rule = match.group(1)
        if not rule:
            continue
        parsed = _RULE.fullmatch(rule)
        if parsed is None:
            raise ValueError(f"invalid rule: {rule!r}")
        if parsed.group(1):
            rules.append(MappingRule(None))
            continue
        try:
            pattern = re.compile(parsed.group(2))
        except re.error as exc:
            raise ValueError(f"invalid rule pattern {parsed.group(2)!r}: {exc}") from None
        rules.append(MappingRule(pattern, _python_replacement(parsed.group(3)), parsed.group(4)))
    return tuple(rules) or (MappingRule(None),)


def map_principal(dn: str, rules: tuple[MappingRule, ...]) -> str:
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise ValueError(f"no rule of ssl.principal.mapping.rules applies to {dn}")
