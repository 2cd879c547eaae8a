"""One TLS handshake against a server SSLContext over a socket pair, with Python's client on the other side: what
each side saw (the client certificate as the server's getpeercert() dict and DER, the certificate the client was
shown, the protocol and suite). A refused handshake raises the server side's ssl.SSLError."""

from __future__ import annotations

import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Handshake:
    peercert: dict | None  # the server's getpeercert()
    peercert_der: bytes | None  # the server's getpeercert(binary_form=True)
    server_cert_der: bytes | None  # the certificate the client was shown
    version: str | None
    cipher: str | None


def handshake(context: ssl.SSLContext, ca: Path, client_cert: Path | None = None, client_key: Path | None = None,
              version: ssl.TLSVersion | None = None) -> Handshake:
    """The client trusts `ca`, checks the name localhost, presents `client_cert` if given, and speaks only
    `version` if given."""
    server_sock, client_sock = socket.socketpair()
    server_sock.settimeout(10)
    client_sock.settimeout(10)
    seen: dict = {}

    def serve() -> None:
        try:
            with context.wrap_socket(server_sock, server_side=True) as tls:
                seen["cert"], seen["der"] = tls.getpeercert(), tls.getpeercert(binary_form=True)
                tls.recv(1)
                tls.sendall(b"y")
        except (ssl.SSLError, OSError) as exc:
            seen["error"] = exc

    thread = threading.Thread(target=serve)
    thread.start()
    client = ssl.create_default_context(cafile=str(ca))
    if version is not None:
        client.minimum_version = client.maximum_version = version
    if client_cert:
        client.load_cert_chain(str(client_cert), str(client_key))
    shown = negotiated = cipher = None
    try:
        with client.wrap_socket(client_sock, server_hostname="localhost") as tls:
            shown, negotiated, cipher = tls.getpeercert(binary_form=True), tls.version(), (tls.cipher() or ("",))[0]
            tls.sendall(b"x")
            tls.recv(1)
    except (ssl.SSLError, OSError):
        pass
    thread.join(10)
    if "error" in seen:
        raise seen["error"]
    return Handshake(seen.get("cert"), seen.get("der"), shown, negotiated, cipher)
