"""The SASL mechanisms a listener offers: an exchange per authentication (PLAIN with the listener's JAAS users,
SCRAM with the stored credentials)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.security.listener_config import ListenerSecurity
from coordinator.security.plain import PlainServer, jaas_user_verifier
from coordinator.security.scram import ScramMechanism, ScramServer


def new_exchange(security: ListenerSecurity, mechanism: str, scram_credentials: Callable[[str, str], Any]) -> Any:
    """The exchange of `mechanism` (one of the listener's enabled ones, checked by the gate)."""
    if mechanism == "PLAIN":
        return PlainServer(jaas_user_verifier(security.plain_users))
    scram = ScramMechanism.from_name(mechanism)
    if scram is None:
        raise ValueError(f"no SASL mechanism {mechanism!r} here")
    return ScramServer(scram, lambda user: scram_credentials(user, mechanism))
