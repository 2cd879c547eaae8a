"""Kafka's JAAS config text (JaasConfig over java.io.StreamTokenizer): the texts Kafka's docs and tools write, the
tokenizer's corners (quotes, escapes, comments, numbers), the errors (where, never what), PLAIN's users."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from coordinator.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasEntry,
    parse_jaas,
    plain_users,
    single_entry,
)


def test_the_plain_and_scram_texts_kafka_documents():
    plain = parse_jaas(f'{PLAIN_LOGIN_MODULE} required user_alice="alice-secret" user_bob="b";')
    assert plain == [JaasEntry(PLAIN_LOGIN_MODULE, "required", {"user_alice": "alice-secret", "user_bob": "b"})]
    scram = parse_jaas(f'{SCRAM_LOGIN_MODULE} required username="admin" password="x";')
    assert scram == [JaasEntry(SCRAM_LOGIN_MODULE, "required", {"username": "admin", "password": "x"})]
    assert plain_users(plain) == {"alice": "alice-secret", "bob": "b"}
    assert plain_users(scram) == {}


def test_several_entries_flags_in_any_case_and_layout():
    text = 'a.B REQUIRED x="1";\n  c.D Optional\n    y = "2"\n    z=bare_word.v-2$ ;  e.F sufficient; g.H requisite;'
    assert [(e.module, e.flag, e.options) for e in parse_jaas(text)] == [
        ("a.B", "required", {"x": "1"}), ("c.D", "optional", {"y": "2", "z": "bare_word.v-2$"}),
        ("e.F", "sufficient", {}), ("g.H", "requisite", {})]


def test_quoted_strings_as_streamtokenizer_reads_them():
    entry, = parse_jaas(r"""M required a="x \"q\" \\ \n\t\101\477\3777" b='single "q"' c="" "d"='quoted key';""")
    assert entry.options == {"a": 'x "q" \\ \n\tA' + "\x27" + "7" + "\xff7", "b": 'single "q"', "c": "",
                             "d": "quoted key"}
    # an unterminated string ends at the line end, as Java's does
    assert parse_jaas('M required a="open\n b="x";')[0].options == {"a": "open", "b": "x"}


def test_comments_and_unicode_words():
    text = "/* lead */ M // to the end of the line\n required /* inline */ ключ=значение é=ü;"
    assert parse_jaas(text)[0].options == {"ключ": "значение", "é": "ü"}


def test_the_last_value_of_an_option_wins_and_a_nameless_option_is_dropped():
    assert parse_jaas('M required k="1" k="2" 5="x";')[0].options == {"k": "2"}


@pytest.mark.parametrize("text, message", [
    ("", "Login module not specified"),
    ("   /* only a comment */", "Login module not specified"),
    ("5 required;", "Login module not specified in JAAS config at position 0"),
    ("M", "Login module control flag not specified"),
    ("M maybe;", "Invalid login module control flag in JAAS config at position 2"),
    ('M required k="v"', "not terminated by semi-colon"),
    ("M required k;", "Expected <name>=<value> in JAAS config at position 11"),
    ("M required k=;", "Value not specified for key 'k' in JAAS config at position 12"),
    ("M required k=123;", "Value not specified for key 'k'"),  # a number is not a value (no sval)
    ("M required k=-x;", "Value not specified for key 'k'"),  # a lone '-' is a character, not a word
    ("M required k=a@b;", "Expected <name>=<value>"),  # '@' ends the word
    ("M required k=/etc/x;", "Value not specified for key 'k'"),  # '/' starts a comment
])
def test_errors_say_where(text, message):
    with pytest.raises(ValueError, match=message):
        parse_jaas(text)


# a marker no message could hold by chance, then anything a password may hold (inside quotes)
SECRET = st.text(st.characters(codec="utf-8", exclude_characters='"\\\n\r'), max_size=30).map(lambda s: "s3cr3t" + s)


@pytest.mark.parametrize("template", [
    'M required user_a="{s}" user_b',  # no '=' after a name
    'M required user_a="{s}" "{s}";',  # a quoted string where a name should be
    'M required user_a="{s}"',  # no ';'
    'M required user_a={s} x=;',  # an unquoted password with spaces or odd characters
    '"{s}" maybe user_a="{s}";',
    '"{s}";',
])
@given(secret=SECRET)
def test_an_error_never_shows_a_value(template, secret):
    text = template.format(s=secret)
    try:
        parse_jaas(text)
    except ValueError as exc:
        assert secret not in str(exc)


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


NAME = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$.\-]{0,20}", fullmatch=True)
VALUE = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
ENTRY = st.tuples(NAME, st.sampled_from(["required", "requisite", "sufficient", "optional"]),
                  st.dictionaries(NAME, VALUE, max_size=5))


@given(st.lists(ENTRY, min_size=1, max_size=3), st.sampled_from([" ", "\n  ", "\t", " /* c */ "]))
def test_any_written_entries_read_back(entries, gap):
    text = gap.join(f"{module} {flag}{gap}" + gap.join(f"{k}={_quote(v)}" for k, v in options.items()) + ";"
                    for module, flag, options in entries)
    assert [(e.module, e.flag, e.options) for e in parse_jaas(text)] == entries


def test_plain_users_from_the_plain_entries_only_the_first_naming_a_user_wins():
    entries = parse_jaas(f'{PLAIN_LOGIN_MODULE} required user_alice="1" user_="x" username="admin" password="p"; '
                         f'other.Module required user_bob="2"; '
                         f'{PLAIN_LOGIN_MODULE} optional user_alice="3" user_c="4";')
    assert plain_users(entries) == {"alice": "1", "c": "4"}


def test_a_listener_takes_a_single_entry_as_kafkas_jaas_context():
    one = parse_jaas('M required;')
    assert single_entry(one) is one[0]
    with pytest.raises(ValueError, match="JAAS config property contains 2 login modules, should be 1 module"):
        single_entry(parse_jaas("M required; N optional;"))
