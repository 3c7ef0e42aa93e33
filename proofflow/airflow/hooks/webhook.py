"""``WebhookHook``: JSON POSTs to the URL of an http connection (``proofflow_webhook``):
schema http/https, host, port, extra ``endpoint`` (path) and ``headers``, or extra ``url``;
a login or password goes as HTTP basic auth."""
from __future__ import annotations

import base64
import json
import urllib.request

from proofflow import settings
from proofflow.airflow.hooks.connections import optional_connection


def webhook_url(conn) -> str:
    extra = conn.extra_dejson or {}
    if extra.get("url"):
        return extra["url"]
    host = conn.host or ""
    if "://" not in host:
        host = f"{conn.schema or 'http'}://{host}"
    if conn.port:
        host = f"{host.rstrip('/')}:{conn.port}"
    endpoint = extra.get("endpoint", "")
    return host.rstrip("/") + ("/" + endpoint.lstrip("/") if endpoint else "")


class WebhookHook:
    def __init__(self, http_conn_id: str = settings.WEBHOOK_CONN_ID, timeout: float = 10.0):
        self.http_conn_id, self.timeout = http_conn_id, timeout

    def configured(self) -> bool:
        return optional_connection(self.http_conn_id) is not None

    def post(self, payload: dict) -> tuple[str, int]:
        """POST ``payload`` as JSON; returns (url, HTTP status). Raises on failure."""
        conn = optional_connection(self.http_conn_id)
        if conn is None:
            raise LookupError(f"no connection {self.http_conn_id}")
        url = webhook_url(conn)
        headers = {"Content-Type": "application/json", **((conn.extra_dejson or {}).get("headers") or {})}
        if conn.login or conn.password:
            token = base64.b64encode(f"{conn.login or ''}:{conn.password or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        req = urllib.request.Request(url, data=json.dumps(payload, default=str).encode(), headers=headers,
                                     method="POST")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return url, resp.status
