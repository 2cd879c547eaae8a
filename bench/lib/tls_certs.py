"""Throwaway TLS material made at test or benchmark time with the openssl command (nothing secret is committed):
a CA, a server certificate for localhost/127.0.0.1 signed by it, client certificates signed by it (one with a
subject full of RFC 2253 specials), and an untrusted CA with a client certificate of its own. Keys are unencrypted
PEM except `server_key_encrypted` (password ENCRYPTED_KEY_PASSWORD). `self_signed` makes a certificate of any
subject (principal tests)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ENCRYPTED_KEY_PASSWORD = "key-pass-42"
# openssl -subj syntax (a '+' joins a multi-valued relative name) and Java's X500Principal.getName() of it
ODD_CLIENT_SUBJECT = r'/C=US/O=Acme, Inc./OU=eng+CN=a\+b+UID=zed/CN= #x=y;<"q">\\ /emailAddress=a@x.io'
ODD_CLIENT_DN = (r'1.2.840.113549.1.9.1=#16066140782e696f,CN=\ \#x\=y\;\<\"q\"\>\\\ ,'
                 r'CN=a\+b+OU=eng+UID=zed,O=Acme\, Inc.,C=US')


@dataclass(frozen=True)
class Certs:
    dir: Path
    ca: Path  # the trusted CA's certificate
    server: Path  # server key + certificate chain in one PEM file (ssl.keystore.location)
    server_cert: Path
    server_key: Path
    server_key_encrypted: Path  # the same key, encrypted with ENCRYPTED_KEY_PASSWORD
    client_cert: Path  # subject CN=alice,OU=eng,O=Example,C=US, signed by the trusted CA
    client_key: Path
    untrusted_ca: Path
    untrusted_client_cert: Path
    untrusted_client_key: Path
    odd_client_cert: Path  # subject ODD_CLIENT_SUBJECT, signed by the trusted CA
    odd_client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the openssl command is needed to make test certificates (apt-get install openssl)")
    subprocess.run([openssl, *args], cwd=cwd, check=True, capture_output=True)


def _ca(directory: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=directory)


def _signed(directory: Path, name: str, subject: str, ca: str, san: str | None = None) -> None:
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-utf8", "-multivalue-rdn", "-subj", subject,
             "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=directory)
    extensions = directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-days", "2", "-out", f"{name}.pem", "-extfile", extensions.name, cwd=directory)


def make_certs(directory: Path) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    _ca(directory, "ca")
    _ca(directory, "untrusted-ca")
    _signed(directory, "server", "/CN=localhost", "ca", "DNS:localhost,IP:127.0.0.1")
    _signed(directory, "client", "/C=US/O=Example/OU=eng/CN=alice", "ca")
    _signed(directory, "untrusted-client", "/CN=mallory", "untrusted-ca")
    _signed(directory, "odd-client", ODD_CLIENT_SUBJECT, "ca")
    _openssl("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{ENCRYPTED_KEY_PASSWORD}",
             "-out", "server-encrypted.key", cwd=directory)
    bundle = directory / "server-keystore.pem"
    bundle.write_text((directory / "server.key").read_text() + (directory / "server.pem").read_text())
    return Certs(directory, directory / "ca.pem", bundle, directory / "server.pem", directory / "server.key",
                 directory / "server-encrypted.key", directory / "client.pem", directory / "client.key",
                 directory / "untrusted-ca.pem", directory / "untrusted-client.pem", directory / "untrusted-client.key",
                 directory / "odd-client.pem", directory / "odd-client.key")


def self_signed(directory: Path, name: str, subject: str, string_mask: str = "utf8only") -> Path:
    """A self-signed certificate (EC P-256) of `subject` (openssl -subj syntax, '+' joins a multi-valued name);
    `string_mask` is openssl's choice of ASN.1 string types (`pkix`: BMPString for non-ASCII text)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / f"{name}.cnf"
    config.write_text(f"[req]\ndistinguished_name=dn\nstring_mask={string_mask}\n[dn]\n")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
             "-utf8", "-multivalue-rdn", "-config", config.name, "-subj", subject, "-keyout", f"{name}.key",
             "-out", f"{name}.pem", cwd=directory)
    return directory / f"{name}.pem"


def create_scram_user(bootstrap: str, user: str, password: str, iterations: int = 8192) -> None:
    """A SCRAM-SHA-512 user through confluent-kafka's AdminClient (AlterUserScramCredentials)."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations),
                                          password.encode())
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the answer: its handle serves the future
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=15)
