"""Optional connections and Variables, looked up through the task SDK: what proofflow's
notifiers and checks read where a deployment may or may not have configured something."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def optional_connection(conn_id: str):
    """The connection, or None when it is not defined (or no Airflow context is there)."""
    from airflow.sdk import BaseHook
    try:
        return BaseHook.get_connection(conn_id)
    except Exception as exc:
        log.info("no connection %s (%s)", conn_id, exc)
        return None


def variable(name: str) -> str | None:
    """An Airflow Variable, or None when it is not set or cannot be read here."""
    from airflow.sdk import Variable
    try:
        return Variable.get(name, default=None)
    except Exception:  # no API server reachable: the callers fall back to their defaults
        return None
