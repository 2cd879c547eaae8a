"""Kafka's JAAS configuration text (org.apache.kafka.common.security.JaasConfig), as a broker's
`listener.name.<listener>.<mechanism>.sasl.jaas.config` holds it:

    org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b";

one or more entries `<login module class> <flag> <key>=<value>... ;`, the flag one of required, requisite,
sufficient, optional (any case). Kafka reads the text with java.io.StreamTokenizer, and so does `_tokens` here,
so that a text Kafka takes means the same here and one it refuses is refused: names and bare values are words
(letters, digits, `.`, `-`, `_`, `$`, any character from U+00A0 on; not starting with a digit, `.` or `-`, which
make a number, and a number is not a value); quoted values use `"` or `'` with Java's backslash escapes and end at
the closing quote or the end of the line; `//`, `/* */` and a lone `/` start comments.

Errors say where (a position in the text), never what a value was: values are passwords.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
FLAGS = ("required", "requisite", "sufficient", "optional")
_UPPER_FLAGS = tuple(flag.upper() for flag in FLAGS)
PLAIN_USER_PREFIX = "user_"  # PlainServerCallbackHandler.JAAS_USER_PREFIX

_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_$")
_NUMBER = frozenset("0123456789.-")
_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
_OCTAL = "01234567"


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str  # one of FLAGS
    options: dict[str, str] = field(repr=False)  # values may be passwords


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "quoted", "number", or the ordinary character itself ("=", ";", ...)
    text: str | None  # StreamTokenizer's sval: a word's or a quoted string's text, None for the others
    position: int


def _is_word_char(char: str) -> bool:
    return char in _WORD_START or char in _NUMBER or ord(char) >= 0xA0


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The string whose opening quote is at `start`, and the position after it (after the closing quote, or at
    the line end or the end of the text, where StreamTokenizer ends an unterminated string)."""
    quote, out, i = text[start], [], start + 1
    while i < len(text) and text[i] not in (quote, "\n", "\r"):
        char = text[i]
        i += 1
        if char == "\\":
            if i >= len(text):
                out.append("\uffff")  # Java's (char) -1
                break
            first = text[i]
            i += 1
            if first in _OCTAL:  # \7, \77, \377 (three digits only up to \377)
                value = int(first)
                for _ in range(2 if first <= "3" else 1):
                    if i < len(text) and text[i] in _OCTAL:
                        value, i = value * 8 + int(text[i]), i + 1
                    else:
                        break
                char = chr(value)
            else:
                char = _ESCAPES.get(first, first)
        out.append(char)
    if i < len(text) and text[i] == quote:
        i += 1
    return "".join(out), i


def _number_end(text: str, i: int) -> int:
    """Where the number whose digits start at `i` ends: ASCII digits and at most one `.`."""
    seen_dot = False
    while i < len(text) and ("0" <= text[i] <= "9" or text[i] == "." and not seen_dot):
        seen_dot = seen_dot or text[i] == "."
        i += 1
    return i


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char <= " ":
            i += 1
        elif char == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        elif char == "/":  # `//` and a lone `/` (StreamTokenizer's comment character): to the line end
            while i < len(text) and text[i] not in "\n\r":
                i += 1
        elif char == "-" and not (i + 1 < len(text) and (text[i + 1] == "." or "0" <= text[i + 1] <= "9")):
            out.append(_Token("-", None, i))
            i += 1
        elif char in _NUMBER:
            out.append(_Token("number", None, i))
            i = _number_end(text, i + 1 if char == "-" else i)
        elif char in _WORD_START or ord(char) >= 0xA0:
            end = i + 1
            while end < len(text) and _is_word_char(text[end]):
                end += 1
            out.append(_Token("word", text[i:end], i))
            i = end
        elif char in "\"'":
            value, end = _quoted(text, i)
            out.append(_Token("quoted", value, i))
            i = end
        else:
            out.append(_Token(char, None, i))
            i += 1
    return out


def parse_jaas(text: str) -> list[JaasEntry]:
    """The entries of a JAAS text, as Kafka's JaasConfig reads them; ValueError says where it is wrong."""
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        module = tokens[i]
        if not module.text:
            raise ValueError(f"Login module not specified in JAAS config at position {module.position}")
        if i + 1 >= len(tokens):
            raise ValueError("Login module control flag not specified in JAAS config")
        flag = tokens[i + 1]
        if flag.text is None or flag.text.upper() not in _UPPER_FLAGS:  # Kafka: toUpperCase(Locale.ROOT)
            raise ValueError(f"Invalid login module control flag in JAAS config at position {flag.position} "
                             f"(one of {', '.join(FLAGS)})")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i].kind != ";":
            key = tokens[i]
            if i + 1 >= len(tokens) or tokens[i + 1].kind != "=":  # the key is not named: it may be a value
                raise ValueError(f"Expected <name>=<value> in JAAS config at position {key.position}")
            if i + 2 >= len(tokens) or tokens[i + 2].text is None:
                name = "" if key.text is None else f" '{key.text}'"
                raise ValueError(f"Value not specified for key{name} in JAAS config at position "
                                 f"{tokens[i + 1].position}")
            if key.text is not None:  # Kafka keeps `5="x"` under a null key, which no lookup finds
                options[key.text] = tokens[i + 2].text or ""
            i += 3
        if i >= len(tokens):
            raise ValueError("JAAS config entry not terminated by semi-colon")
        i += 1
        entries.append(JaasEntry(module.text, FLAGS[_UPPER_FLAGS.index(flag.text.upper())], options))
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    return entries


def single_entry(entries: Sequence[JaasEntry]) -> JaasEntry:
    """The one entry a listener's `sasl.jaas.config` must hold (Kafka's JaasContext.loadServerContext)."""
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def plain_users(entries: Sequence[JaasEntry]) -> dict[str, str]:
    """The `user_<name>="<password>"` options of the PlainLoginModule entries; when several entries name a user,
    the first wins (Kafka's JaasContext.configEntryOption, which PlainServerCallbackHandler asks)."""
    users: dict[str, str] = {}
    for entry in entries:
        if entry.module == PLAIN_LOGIN_MODULE:
            for name, value in entry.options.items():
                if name.startswith(PLAIN_USER_PREFIX) and len(name) > len(PLAIN_USER_PREFIX):
                    users.setdefault(name[len(PLAIN_USER_PREFIX):], value)
    return users
