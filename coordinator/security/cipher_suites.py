"""Kafka's `ssl.cipher.suites` in OpenSSL's terms.

Kafka takes Java's names, which are the IANA ones (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); OpenSSL names TLS 1.2
suites its own way (ECDHE-RSA-AES128-GCM-SHA256) and TLS 1.3 suites by their IANA names. A name is rewritten into
OpenSSL's spelling and looked up in the list of suites this OpenSSL has (`SSLContext.get_ciphers()`), so only
suites the library really has are accepted; OpenSSL names are accepted as they are.
"""

from __future__ import annotations

import functools
import re
import ssl
from collections.abc import Mapping

# Java lists this pseudo-suite among its defaults (RFC 5746's signal); OpenSSL always does secure renegotiation.
RENEGOTIATION_SCSV = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"

_AUTHENTICATED = ("auth-rsa", "auth-ecdsa", "auth-dss")
_KEY_AGREEMENTS = ("kx-ecdhe", "kx-dhe", "kx-rsa")
_KEY_EXCHANGES = {"RSA": "", "DH_anon": "ADH-", "ECDH_anon": "AECDH-", "SRP_SHA": "SRP-"}
_IANA = re.compile(r"TLS_(?P<kx>\w+?)_WITH_(?P<cipher>[A-Z0-9]+)_(?P<rest>\w+)", re.ASCII)


@functools.cache
def _openssl_suites() -> dict[str, Mapping[str, object]]:
    """Every suite this OpenSSL has, by name (`SSLContext.get_ciphers()`'s descriptions)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers("ALL:COMPLEMENTOFALL:@SECLEVEL=0")
    return {suite["name"]: suite for suite in context.get_ciphers()}


def _candidates(iana: str) -> list[str]:
    """OpenSSL's possible spellings of an IANA TLS 1.2 name (OpenSSL's naming has a few irregular families)."""
    match = _IANA.fullmatch(iana)
    if match is None:
        return []
    kx = _KEY_EXCHANGES.get(match["kx"], match["kx"].replace("_", "-") + "-")
    cipher, rest = match["cipher"], match["rest"]
    if cipher == "3DES":
        bodies = ["DES-CBC3-" + rest.removeprefix("EDE_CBC_")]
    elif cipher == "NULL":
        bodies = ["NULL-" + rest]
    else:
        size, _, mode = rest.partition("_")  # AES + 128 + GCM_SHA256
        mode = mode.replace("CCM_8", "CCM8")
        if cipher == "CHACHA20":
            bodies = ["CHACHA20-POLY1305"]
        else:
            bodies = [f"{cipher}{size}-{mode.removeprefix('CBC_')}", f"{cipher}{size}-{mode}",
                      f"{cipher}-{size}-{mode}"]
    names = [kx + body.replace("_", "-") for body in bodies]
    if kx == "ECDHE-RSA-":  # ECDHE-ARIA128-GCM-SHA256: OpenSSL leaves the RSA out of its ARIA names
        names += ["ECDHE-" + body.replace("_", "-") for body in bodies]
    return names


def openssl_name(name: str) -> str:
    """OpenSSL's name of a suite given by its Java/IANA or OpenSSL name; ValueError if this OpenSSL has none, or if
    it is one a server with a certificate cannot or must not serve (anonymous, unencrypted, PSK and SRP suites: a
    security level does not stop them when they are asked for by name)."""
    known = _openssl_suites()
    found = next((n for n in (name, *_candidates(name)) if n in known), None)
    if found is None:
        raise ValueError(f"{name} is not a cipher suite of {ssl.OPENSSL_VERSION}")
    suite = known[found]
    if suite["protocol"] != "TLSv1.3" and (suite["auth"] not in _AUTHENTICATED or suite["kea"] not in _KEY_AGREEMENTS
                                           or not suite["symmetric"]):
        raise ValueError(f"{name} is refused: anonymous, unencrypted, PSK and SRP suites are not served")
    return found


def is_tls13(openssl_suite: str) -> bool:
    return _openssl_suites()[openssl_suite]["protocol"] == "TLSv1.3"


def default_tls13_suites() -> frozenset[str]:
    """The TLS 1.3 suites a server context offers (Python cannot narrow them: it has no SSL_CTX_set_ciphersuites)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    return frozenset(suite["name"] for suite in context.get_ciphers() if suite["protocol"] == "TLSv1.3")
