"""The storage URL in log lines: `redact` hides its password (no driver import, so the settings can use it
in local mode too)."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit, urlunsplit

_PASSWORD_PARAMETER = re.compile(r"(password=)[^&\s]*", re.IGNORECASE)


def redact(url: str) -> str:
    """The URL with any password replaced by '***', for log lines and error messages."""
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        parts = SplitResult(parts.scheme, netloc, parts.path, parts.query, parts.fragment)
    return _PASSWORD_PARAMETER.sub(r"\1***", urlunsplit(parts))
