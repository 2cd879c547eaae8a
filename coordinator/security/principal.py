"""Kafka's `ssl.principal.mapping.rules` (SslPrincipalMapper): from the subject of a client certificate (RFC 2253,
coordinator/security/x500.py) to the principal's name.

Rules are comma separated; the first that applies wins. `DEFAULT` is the subject as it is;
`RULE:<pattern>/<replacement>/[LU]` applies when the pattern matches the whole subject, which is then replaced
(`$1` is a group, `\\x` a literal x, as Java's replaceAll), and lowered (L) or uppered (U). A subject no rule
applies to names nobody: Kafka refuses the connection. Rules are split and parsed with Kafka's grammar, so the same
text gives the same rules (empty ones are skipped; `rule:...`, `DEFAULT/L` are errors). The pattern is Python's
regular expression syntax, which shares Java's for everything rules usually hold; a replacement that can only fail
(`$2` of a pattern with one group and none of Kafka's literal fallback, a lone `$` or trailing `\\`) is refused at
start-up, where Kafka would fail each matching connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Kafka's rule grammar (SslPrincipalMapper.RULE_PATTERN): the same alternatives in the same order, so a text splits
# and parses into the same rules, with the same errors.
_RULE = (r"(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?).*?"
         r"|(?P<other>.*?)")
_SPLITTER = re.compile(r"\s*(?P<rule>" + _RULE + r")\s*(?:,\s*|$)", re.ASCII)
_PARSER = re.compile(_RULE, re.ASCII)


@dataclass(frozen=True)
class MappingRule:
    pattern: re.Pattern[str] | None = None  # None: DEFAULT
    replacement: str = ""  # as written (Java's syntax)
    case: str = ""  # "L", "U" or ""
    template: str = field(default="", repr=False, compare=False)  # the replacement in Python's syntax

    def apply(self, dn: str) -> str | None:
        """The name this rule gives `dn`, or None when it does not apply."""
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.template, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name

    def __str__(self) -> str:  # as Kafka prints a rule
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (f"/{self.case}" if self.case else "")


DEFAULT_RULE = MappingRule()


def _template(replacement: str, groups: int) -> str:
    """Java's replacement as Python's template for a pattern with `groups` groups: `$n` takes as many digits as
    name a group; `$n` past the last group is literal text when the pattern has groups (Kafka's
    escapeLiteralBackReferences), an error when it has none (Java's "No group n")."""
    out, i = [], 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\":
            if i + 1 == len(replacement):
                raise ValueError("the replacement ends with a lone backslash")
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$":
            j = i + 1
            if j == len(replacement) or not replacement[j].isdigit():
                raise ValueError(f"illegal group reference in the replacement {replacement!r} (write \\$ for a $)")
            group = int(replacement[j])
            if group > groups:
                if groups == 0:
                    raise ValueError(f"the replacement refers to ${group} but the pattern has no group")
                out.append("$")
                i += 1
                continue
            j += 1
            while j < len(replacement) and replacement[j].isdigit() and group * 10 + int(replacement[j]) <= groups:
                group, j = group * 10 + int(replacement[j]), j + 1
            out.append(f"\\g<{group}>")
            i = j
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _rule(text: str) -> MappingRule | None:
    match = _PARSER.match(text)
    assert match is not None  # the last alternative matches anything
    if match.end() != len(text):
        raise ValueError(f"invalid rule `{text}`, unmatched substring `{text[match.end():]}`")
    if match["default"] is not None:
        return DEFAULT_RULE
    if match["pattern"] is None:
        return None  # an empty rule
    try:
        pattern = re.compile(match["pattern"])
    except re.error as exc:
        raise ValueError(f"invalid pattern in rule `{text}`: {exc}") from None
    try:
        template = _template(match["replacement"], pattern.groups)
    except ValueError as exc:
        raise ValueError(f"rule `{text}`: {exc}") from None
    return MappingRule(pattern, match["replacement"], match["case"], template)


def parse_mapping_rules(text: str) -> tuple[MappingRule, ...]:
    """The rules of `ssl.principal.mapping.rules`; ValueError names the rule that does not parse. No rules (an
    empty text) refuse every certificate, as in Kafka."""
    rules = (_rule(match["rule"]) for match in _SPLITTER.finditer(text.strip()))
    return tuple(rule for rule in rules if rule is not None)


class NoMatchingRule(ValueError):
    """No rule gives the subject a name (Kafka's SslPrincipalMapper.NoMatchingRule): the client is refused."""


def map_principal(dn: str, rules: tuple[MappingRule, ...]) -> str:
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"no rule of ssl.principal.mapping.rules applies to {dn} "
                         f"(rules: [{', '.join(map(str, rules))}])")
