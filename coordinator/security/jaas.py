"""Kafka's JAAS configuration text (org.apache.kafka.common.security.JaasConfig), as a broker's
`listener.name.<listener>.<mechanism>.sasl.jaas.config` holds it:

    org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b";

one or more entries `<login module class> <flag> <key>=<value>... ;`, the flag one of required, requisite,
sufficient, optional, a value quoted ("..." with backslash escapes) or a bare token. Errors say where, never
what a value was (values are passwords).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[^\s=;"]+)|(?P<punct>[=;]))', re.S)


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str] = field(repr=False)  # values may be passwords


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, position) with kind "value" (a quoted string, unescaped), "word" or "=" / ";"."""
    out: list[tuple[str, str, int]] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return out
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"unexpected character at position {position}")
        if match["quoted"] is not None:
            out.append(("value", re.sub(r"\\(.)", r"\1", match["quoted"][1:-1], flags=re.S), position))
        elif match["word"] is not None:
            out.append(("word", match["word"], position))
        else:
            out.append((match["punct"], match["punct"], position))
        position = match.end()


def parse_jaas(text: str) -> list[JaasEntry]:
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "word":
            raise ValueError(f"expected '<LoginModule class> <flag>' at position {tokens[i][2]}")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in FLAGS:
            raise ValueError(f"the login module flag at position {tokens[i + 1][2]} is not one of {', '.join(FLAGS)}")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" or \
                    tokens[i + 2][0] not in ("value", "word"):
                raise ValueError(f"expected <name>=<value> at position {tokens[i][2]}")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ValueError("the login module entry does not end with ';'")
        i += 1
        entries.append(JaasEntry(module, flag, options))
    if not entries:
        raise ValueError("no login module entry")
    return entries


def plain_users(entries: list[JaasEntry]) -> dict[str, str]:
    """The `user_<name>="<password>"` options of the PlainLoginModule entry (Kafka's PlainServerCallbackHandler)."""
    users: dict[str, str] = {}
    for entry in entries:
        if entry.module == PLAIN_LOGIN_MODULE:
            users.update({name[len("user_"):]: value for name, value in entry.options.items()
                          if name.startswith("user_") and len(name) > len("user_")})
    return users
