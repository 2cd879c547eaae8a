"""The principal of a TLS client: the certificate's subject as Java's X500Principal.getName() prints it (every
expected string below is what Java printed for the same bytes: JDK 17 and 25 agree on them unless noted), then
Kafka's ssl.principal.mapping.rules (the cases of Kafka's SslPrincipalMapperTest, and its grammar)."""

from __future__ import annotations

import ssl

import pytest

from coordinator.security.principal import NoMatchingRule, map_principal, parse_mapping_rules
from coordinator.security.tls import principal_of, server_context, tls_settings
from coordinator.security.x500 import name_of_der, rfc2253, subject_of_certificate
from tests.support.certs import self_signed
from tests.support.tls_handshake import handshake

DEFAULT = parse_mapping_rules("DEFAULT")


def _tlv(tag: int, content: bytes) -> bytes:
    size = len(content)
    length = bytes([size]) if size < 0x80 else bytes([0x81, size]) if size < 0x100 else bytes([0x82]) + \
        size.to_bytes(2, "big")
    return bytes([tag]) + length + content


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(p) for p in dotted.split("."))
    body = bytes([first * 40 + second])
    for value in rest:
        chunk = [value & 0x7F]
        value >>= 7
        while value:
            chunk.append(0x80 | (value & 0x7F))
            value >>= 7
        body += bytes(reversed(chunk))
    return _tlv(0x06, body)


def der_name(*rdns: list[tuple[str, int, bytes]]) -> bytes:
    """A DER Name: relative names in certificate order, each a list of (oid, string tag, content)."""
    return _tlv(0x30, b"".join(_tlv(0x31, b"".join(_tlv(0x30, _oid(oid) + _tlv(tag, value))
                                                    for oid, tag, value in rdn)) for rdn in rdns))


CN, ORG, OU, UTF8 = "2.5.4.3", "2.5.4.10", "2.5.4.11", 0x0C


@pytest.mark.parametrize("name, java", [
    (der_name([(CN, UTF8, b"x\x00y")]), r"CN=x\00y"),
    (der_name([(CN, UTF8, b"\r a \r")]), "CN=\\\r\\ a\\ \\\r"),  # leading and trailing spaces and CRs
    (der_name([(CN, UTF8, b"   ")]), r"CN=\ \ \ "),
    (der_name([(CN, 0x1C, "ab".encode("utf-32-be"))]), "CN=#1c080000006100000062"),  # not a string type Java reads
    (der_name([("1.2.3.4.99999", UTF8, b"v")], [(CN, UTF8, b"n")]), "CN=n,1.2.3.4.99999=#0c0176"),
    (der_name([("2.5.4.13", UTF8, b"d" * 200)]), "2.5.4.13=#0c81c8" + "64" * 200),  # a long-form DER length
    (der_name([(ORG, 0x14, b"caf\xe9")], [(OU, UTF8, b"tab\there")]), "OU=tab\there,O=café"),  # JDK 17: caf�
    (der_name([(CN, UTF8, b"b"), (CN, UTF8, b"a")]), "CN=b+CN=a"),  # a multi-valued name keeps the DER order
    (der_name(), ""),
])
def test_rfc2253_of_der_names_as_java_prints_them(name, java):
    assert rfc2253(name_of_der(name)) == java


@pytest.fixture(scope="module")
def odd_certificates(tmp_path_factory):
    directory = tmp_path_factory.mktemp("subjects")
    return {
        "specials": self_signed(directory, "specials", '/CN=  #lead=eq"q\\\\<a>;s  /O=#x /OU= /ST=é日本'
                                '/street=1 Main St/DC=example/DC=com/UID=u1/serialNumber=42/title=Boss/SN=Doe/GN=Jo'
                                '/dnQualifier=dq/postalCode=12345/name=nm'),
        "multi": self_signed(directory, "multi", "/C=US/O=Acme, Inc./OU=eng+CN=a\\+b+UID=zed/emailAddress=a@x.io"),
        "bmp": self_signed(directory, "bmp", "/CN=é日本+OU=x/O=plain/title=Tité", string_mask="pkix"),
    }


@pytest.mark.parametrize("which, java", [
    ("specials", r"2.5.4.41=#0c026e6d,2.5.4.17=#0c053132333435,2.5.4.46=#13026471,2.5.4.42=#0c024a6f,"
                 r"2.5.4.4=#0c03446f65,2.5.4.12=#0c04426f7373,2.5.4.5=#13023432,UID=u1,DC=com,DC=example,"
                 r"STREET=1 Main St,ST=é日本,OU=\ ,O=\#x\ ,CN=\ \ \#lead\=eq\"q\\\<a\>\;s\ \ "),
    ("multi", r"1.2.840.113549.1.9.1=#16066140782e696f,CN=a\+b+OU=eng+UID=zed,O=Acme\, Inc.,C=US"),
    # BMPString values (openssl's pkix mask); JDK 17 garbles the CN (it reads every string type as UTF-8)
    ("bmp", "2.5.4.12=#1e0800540069007400e9,O=plain,OU=x+CN=é日本"),
])
def test_the_subject_of_a_certificate_is_javas_rfc2253_string(odd_certificates, which, java):
    der = ssl.PEM_cert_to_DER_cert(odd_certificates[which].read_text())
    assert rfc2253(subject_of_certificate(der)) == java
    assert principal_of(der, DEFAULT) == "User:" + java


def test_the_peercert_dict_gives_the_same_string_but_must_guess_string_types(certs, odd_certificates):
    """getpeercert()'s dict has lost each value's ASN.1 type: for `#hex` attributes it is guessed (OpenSSL's
    default types), so only the BMPString title differs from Java's string."""
    for which, cert in odd_certificates.items():
        context = server_context(tls_settings({"ssl.keystore.location": str(certs.server), "ssl.client.auth":
                                               "required", "ssl.truststore.location": str(cert)}))
        seen = handshake(context, certs.ca, cert, cert.with_suffix(".key"))
        exact, guessed = principal_of(seen.peercert_der, DEFAULT), principal_of(seen.peercert, DEFAULT)
        assert exact == "User:" + rfc2253(subject_of_certificate(ssl.PEM_cert_to_DER_cert(cert.read_text())))
        if which == "bmp":
            assert guessed == exact.replace("#1e0800540069007400e9", "#0c05546974c3a9")
        else:
            assert guessed == exact


def test_without_a_certificate_the_principal_is_anonymous():
    assert principal_of(None, DEFAULT) == principal_of({}, DEFAULT) == principal_of(b"", DEFAULT) == "User:ANONYMOUS"


def test_a_subject_no_rule_maps_is_refused(odd_certificates):
    der = ssl.PEM_cert_to_DER_cert(odd_certificates["multi"].read_text())
    with pytest.raises(NoMatchingRule, match="no rule of ssl.principal.mapping.rules applies to 1.2.840"):
        principal_of(der, parse_mapping_rules("RULE:^CN=y$/y/"))
    with pytest.raises(NoMatchingRule):  # no rules at all refuse every certificate, as in Kafka
        principal_of(der, parse_mapping_rules(""))


# ---- Kafka's SslPrincipalMapperTest

@pytest.mark.parametrize("rules", [
    "DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
    "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
])
def test_valid_rules(rules):
    assert parse_mapping_rules(rules)


@pytest.mark.parametrize("rules", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
])
def test_invalid_rules(rules):
    with pytest.raises(ValueError, match="invalid rule"):
        parse_mapping_rules(rules)


def test_the_first_rule_that_applies_wins():
    rules = parse_mapping_rules(", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L", "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U", "DEFAULT"]))
    assert map_principal("CN=Duke,OU=ServiceUsers,O=Org,C=US", rules) == "duke"
    assert map_principal("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", rules) == "duke@sme"
    assert map_principal("cn=duke,ou=sme,dc=mycp,dc=com", rules) == "DUKE@SME"
    assert map_principal("cN=duke,OU=JavaSoft,O=Sun Microsystems", rules) == "DUKE"
    assert map_principal("OU=JavaSoft,O=Sun Microsystems,C=US", rules) == "OU=JavaSoft,O=Sun Microsystems,C=US"


@pytest.mark.parametrize("expected, rules", [
    ("[]", ""), ("[DEFAULT]", "DEFAULT"), ("[RULE:/]", "RULE://"), ("[RULE:/.*]", "RULE:/.*/"),
    ("[RULE:/.*/L]", "RULE:/.*/L"), ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
    ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "), ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
    ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
    ("[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
    ("[]", ",   , , ,      , , ,   "), ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
    ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
    ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
    ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
    ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
    ("[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
     "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT"),
])
def test_rules_split_as_kafka_splits_them(expected, rules):
    assert "[" + ", ".join(map(str, parse_mapping_rules(rules))) + "]" == expected


def test_a_comma_with_whitespace_in_a_pattern():
    rules = parse_mapping_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert map_principal("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz", rules) == "Tkac\\, Adam"


@pytest.mark.parametrize("rule, dn, name", [
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1\\/$2/", "CN=a,OU=b,O=c", "a/b"),  # \x: a literal x
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$4/", "CN=a,OU=b,O=c", "a@$4"),  # past the last group: literal (Kafka)
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$12/", "CN=a,OU=b,O=c", "a2"),  # as many digits as name a group (Java)
    ("RULE:^CN=(.*?),OU=(.*?)$/$0!/", "CN=a,OU=b", "CN=a,OU=b!"),
    ("RULE:^CN=([a-z]+)(,OU=x)?.*$/$1$2/", "CN=a,O=b", "a"),  # a group that took no part is empty
    ("RULE:^CN=(.*?),.*$/\\$1 \\\\ $1/", "CN=a,O=b", "$1 \\ a"),
])
def test_replacements_follow_java(rule, dn, name):
    assert map_principal(dn, parse_mapping_rules(rule)) == name


@pytest.mark.parametrize("rule, message", [
    ("RULE:^CN=.*$/$1/", "refers to \\$1 but the pattern has no group"),
    ("RULE:^CN=(.*)$/$x/", "illegal group reference"),
    ("RULE:^CN=(.*$/$1/", "invalid pattern"),
])
def test_a_rule_that_can_only_fail_is_refused_at_start_up(rule, message):
    with pytest.raises(ValueError, match=message):
        parse_mapping_rules(rule)
