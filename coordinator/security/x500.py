"""The subject of a client certificate as Java's `X500Principal.getName()` prints it (RFC 2253), which is the
string Kafka's DefaultKafkaPrincipalBuilder hands to `ssl.principal.mapping.rules`.

Java's rules, from sun.security.x509.AVA/RDN/X500Name: relative names most specific first (the reverse of the
certificate's order), the values of a multi-valued name joined with '+' in the certificate's order; CN, C, L, ST,
O, OU, STREET, DC and UID by keyword, every other type as its dotted OID with `#` and the hex of the value's DER
encoding (EMAILADDRESS is `1.2.840.113549.1.9.1=#16...`); in a string value `,=+<>#;"\\` are escaped with a
backslash (Java escapes '=' and '#' anywhere, more than RFC 2253 asks), NUL as `\\00`, and every leading and
trailing space. BMPString values are read as UTF-16, the 8-bit string types as Latin-1, as JDK 21+ do (JDK 17
reads every string type as UTF-8, garbling non-ASCII BMPString and TeletexString values).

The DER certificate (`getpeercert(binary_form=True)`) gives the exact string. The dict of `getpeercert()` has lost
each value's ASN.1 string type, so for the `#hex` attributes that type is guessed as OpenSSL encodes it by default.
"""

from __future__ import annotations

from typing import NamedTuple


class Attribute(NamedTuple):
    oid: str  # dotted
    tag: int  # the value's ASN.1 tag (0x0C UTF8String, 0x13 PrintableString, ...)
    content: bytes  # the value's DER content octets


Name = tuple[tuple[Attribute, ...], ...]  # relative names in the certificate's order

_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
             "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID"}
_LATIN1_TAGS = (0x13, 0x14, 0x16, 0x1B)  # PrintableString, TeletexString, IA5String, GeneralString
_UTF8, _BMP, _PRINTABLE, _IA5 = 0x0C, 0x1E, 0x13, 0x16
_ESCAPED = frozenset(',=+<>#;"\\')
_SEQUENCE, _SET, _OID = 0x30, 0x31, 0x06


def _element(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the DER element at `pos`; ValueError if it does not fit before `end`."""
    if pos + 2 > end:
        raise ValueError("truncated DER")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        size = length & 0x7F
        if not 0 < size <= 4 or pos + size > end:
            raise ValueError("bad DER length")
        length = int.from_bytes(data[pos:pos + size], "big")
        pos += size
    if pos + length > end:
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _expect(data: bytes, pos: int, end: int, tag: int) -> tuple[int, int]:
    found, start, stop = _element(data, pos, end)
    if found != tag:
        raise ValueError(f"DER tag {found:#x} where {tag:#x} was expected")
    return start, stop


def _oid(content: bytes) -> str:
    values, value = [], 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    if not values:
        raise ValueError("empty OID")
    first = min(values[0] // 40, 2)
    return ".".join(str(v) for v in (first, values[0] - 40 * first, *values[1:]))


def name_of_der(data: bytes, pos: int = 0, end: int | None = None) -> Name:
    """A DER `Name` (SEQUENCE OF SET OF AttributeTypeAndValue) at `pos`."""
    start, stop = _expect(data, pos, len(data) if end is None else end, _SEQUENCE)
    rdns = []
    while start < stop:
        rdn_start, rdn_stop = _expect(data, start, stop, _SET)
        attributes = []
        while rdn_start < rdn_stop:
            ava_start, ava_stop = _expect(data, rdn_start, rdn_stop, _SEQUENCE)
            oid_start, oid_stop = _expect(data, ava_start, ava_stop, _OID)
            tag, value_start, value_stop = _element(data, oid_stop, ava_stop)
            attributes.append(Attribute(_oid(data[oid_start:oid_stop]), tag, data[value_start:value_stop]))
            rdn_start = ava_stop
        rdns.append(tuple(attributes))
        start = rdn_stop
    return tuple(rdns)


def subject_of_certificate(der: bytes) -> Name:
    """The subject of a DER X.509 certificate; ValueError if it is not one."""
    cert_start, cert_stop = _expect(der, 0, len(der), _SEQUENCE)
    pos, tbs_stop = _expect(der, cert_start, cert_stop, _SEQUENCE)
    if _element(der, pos, tbs_stop)[0] == 0xA0:  # [0] version
        pos = _element(der, pos, tbs_stop)[2]
    for _field in ("serialNumber", "signature", "issuer", "validity"):
        pos = _element(der, pos, tbs_stop)[2]
    return name_of_der(der, pos, tbs_stop)


def _der_length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


def _escape(text: str) -> str:
    out = "".join("\\00" if c == "\0" else "\\" + c if c in _ESCAPED else c for c in text)
    body = out.strip(" \r")
    if not body:
        return "".join("\\" + c for c in out)
    lead, trail = out[:len(out) - len(out.lstrip(" \r"))], out[len(out.rstrip(" \r")):]
    return "".join("\\" + c for c in lead) + body + "".join("\\" + c for c in trail)


def _value(attribute: Attribute) -> str:
    tag, content = attribute.tag, attribute.content
    if tag == _UTF8:
        return _escape(content.decode("utf-8", errors="replace"))
    if tag == _BMP:
        return _escape(content.decode("utf-16-be", errors="replace"))
    return _escape(content.decode("latin-1"))


def rfc2253(name: Name) -> str:
    """Java's X500Principal.getName() of a name."""
    rdns = []
    for rdn in reversed(name):
        parts = []
        for attribute in rdn:
            keyword = _KEYWORDS.get(attribute.oid)
            if keyword is None or attribute.tag not in (_UTF8, _BMP, *_LATIN1_TAGS):
                der = bytes([attribute.tag]) + _der_length(len(attribute.content)) + attribute.content
                parts.append(f"{keyword or attribute.oid}=#{der.hex()}")
            else:
                parts.append(f"{keyword}={_value(attribute)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


# getpeercert()'s attribute names (OpenSSL's long names) -> OID, and the string type OpenSSL gives them by default
_LONG_NAMES = {
    "commonName": "2.5.4.3", "countryName": "2.5.4.6", "localityName": "2.5.4.7",
    "stateOrProvinceName": "2.5.4.8", "organizationName": "2.5.4.10", "organizationalUnitName": "2.5.4.11",
    "streetAddress": "2.5.4.9", "domainComponent": "0.9.2342.19200300.100.1.25",
    "userId": "0.9.2342.19200300.100.1.1", "emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5",
    "title": "2.5.4.12", "surname": "2.5.4.4", "givenName": "2.5.4.42", "initials": "2.5.4.43",
    "generationQualifier": "2.5.4.44", "dnQualifier": "2.5.4.46", "pseudonym": "2.5.4.65", "name": "2.5.4.41",
    "postalCode": "2.5.4.17", "businessCategory": "2.5.4.15", "organizationIdentifier": "2.5.4.97",
    "description": "2.5.4.13", "postOfficeBox": "2.5.4.18", "unstructuredName": "1.2.840.113549.1.9.2",
    "jurisdictionCountryName": "1.3.6.1.4.1.311.60.2.1.3",
    "jurisdictionStateOrProvinceName": "1.3.6.1.4.1.311.60.2.1.2",
    "jurisdictionLocalityName": "1.3.6.1.4.1.311.60.2.1.1",
}
_DEFAULT_TAGS = {"2.5.4.6": _PRINTABLE, "2.5.4.5": _PRINTABLE, "2.5.4.46": _PRINTABLE,
                 "1.3.6.1.4.1.311.60.2.1.3": _PRINTABLE, "1.2.840.113549.1.9.1": _IA5,
                 "0.9.2342.19200300.100.1.25": _IA5, "1.2.840.113549.1.9.2": _IA5}


def _guessed(oid: str, value: str) -> Attribute:
    tag = _DEFAULT_TAGS.get(oid, _UTF8)
    if tag != _UTF8 and value.isascii():
        return Attribute(oid, tag, value.encode("ascii"))
    return Attribute(oid, _UTF8, value.encode("utf-8"))


def name_of_peercert(subject: tuple) -> Name:
    """The `subject` of `getpeercert()`'s dict as a Name (an attribute OpenSSL has no name for is a dotted OID)."""
    return tuple(tuple(_guessed(_LONG_NAMES.get(key, key), value) for key, value in rdn) for rdn in subject)
