"""The client side of the server's HTTP listener: a group's rebalance history (GET {http}/groups/{group}/rebalances)
and a share group's share partitions (GET {http}/api/groups/{group}).

The answer is JSON {"group_id": ..., "rebalances": [{"started_at", "cause", "detail", "generation",
"members", "joined", "left", "duration_ms", "outcome"}, ...]}, oldest first. Only the HTTP listener
of this server has it (Apache Kafka has no such endpoint), so it is asked only when --http is given.
Credentials for an endpoint with `http.auth=basic` go in the URL, `http://user:password@host:port`: they are
sent as HTTP Basic and never printed.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from coordinator.cli.client import CliError


def history_url(base: str, group: str) -> str:
    return f"{base.rstrip('/')}/groups/{urllib.parse.quote(group, safe='')}/rebalances"


def without_credentials(base: str) -> tuple[str, str | None]:
    """The URL without its `user:password@`, and the Basic Authorization header they make (None without)."""
    parts = urllib.parse.urlsplit(base)
    if parts.username is None:
        return base, None
    user, password = urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")
    netloc = parts.netloc.rpartition("@")[2]
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)), f"Basic {token}"


def fetch_json(base: str, path: str, timeout: float) -> Any:
    """GET `path` of the server's HTTP listener at `base`, as JSON; CliError (one line) when it cannot be had."""
    base, authorization = without_credentials(base)
    url = f"{base.rstrip('/')}/{path}"
    request = urllib.request.Request(url, headers={} if authorization is None else {"Authorization": authorization})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read()
    except urllib.error.HTTPError as exc:
        raise CliError(f"GET {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CliError(f"GET {url}: {reason}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise CliError(f"GET {url}: the answer is not JSON") from None


def fetch_history(base: str, group: str, timeout: float) -> dict[str, Any]:
    """The group's rebalance history; CliError (one line) when it cannot be had."""
    path = f"groups/{urllib.parse.quote(group, safe='')}/rebalances"
    data = fetch_json(base, path, timeout)
    if not isinstance(data, dict) or not isinstance(data.get("rebalances"), list):
        raise CliError(f"GET {history_url(without_credentials(base)[0], group)}: the answer has no \"rebalances\" "
                       "list")
    return data


def fetch_share_partitions(base: str, group: str, timeout: float) -> list[dict[str, Any]]:
    """A share group's share partitions as the HTTP listener shows them (in-flight, acquired, acknowledged)."""
    path = f"api/groups/{urllib.parse.quote(group, safe='')}"
    data = fetch_json(base, path, timeout)
    rows = data.get("share_partitions") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise CliError(f"GET {path}: the answer has no \"share_partitions\" list")
    return [r for r in rows if isinstance(r, dict)]
