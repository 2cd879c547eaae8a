"""Where `./dev setup-clients` put each client, and what to do when one is missing.

Missing tools are never skipped silently: in CI (CI=true) they fail the test; on a developer
machine they skip with a reason that says how to install them.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
HERE = Path(__file__).resolve().parent
JAVA_DIR = TOOLS / "java"
JAVA_CLASSES = JAVA_DIR / "classes"
NODE_PREFIX = TOOLS / "node"


def java_classpath() -> str:
    return f"{JAVA_DIR}/*:{JAVA_CLASSES}"


def missing(client: str) -> str | None:
    """Why `client` cannot run here, or None when everything it needs is installed."""
    if client == "java":
        if shutil.which("java") is None:
            return "no `java` on PATH"
        classes = [JAVA_CLASSES / f"{name}.class" for name in ("GroupConsumer", "TxnProcessor")]
        if not (JAVA_DIR / "kafka-clients.jar").exists() or not all(c.exists() for c in classes):
            return f"kafka-clients or the drivers' classes (GroupConsumer, TxnProcessor) missing under {JAVA_DIR}"
    elif client == "kafkajs":
        if shutil.which("node") is None:
            return "no `node` on PATH"
        if not (NODE_PREFIX / "node_modules" / "kafkajs" / "package.json").exists():
            return f"kafkajs missing under {NODE_PREFIX}"
    elif client == "kcat":
        if shutil.which("kcat") is None:
            return "no `kcat` on PATH"
    else:
        module = {"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent": "confluent_kafka"}[client]
        try:
            __import__(module)
        except ImportError as exc:
            return f"{module} does not import in {sys.executable}: {exc}"
    return None


def require(client: str) -> None:
    """Fail (CI) or skip loudly (elsewhere) when `client` is not installed."""
    reason = missing(client)
    if reason is None:
        return
    message = f"{client}: {reason}; install the clients with `./dev setup-clients` (./dev test does it)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
