"""Test TLS material: bench/lib/tls_certs.py's (one maker for tests and benchmarks)."""

from bench.lib.tls_certs import (
    ENCRYPTED_KEY_PASSWORD,
    ODD_CLIENT_DN,
    ODD_CLIENT_SUBJECT,
    Certs,
    create_scram_user,
    make_certs,
    self_signed,
)

__all__ = ["ENCRYPTED_KEY_PASSWORD", "ODD_CLIENT_DN", "ODD_CLIENT_SUBJECT", "Certs", "create_scram_user", "make_certs",
           "self_signed"]
