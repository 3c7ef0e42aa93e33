"""The Airflow REST API as a task reaches it: base URL and credentials from one Airflow
connection (``proofflow_airflow_api``, type http), never from code.

    airflow connections add proofflow_airflow_api --conn-type http --conn-host 127.0.0.1 \\
        --conn-port 8080 --conn-schema http --conn-login proofflow --conn-password '...'

(or ``--conn-host http://airflow.example.com/base``). With a login, a JWT comes from
``POST /auth/token``; without one the requests go unauthenticated (an auth manager that
lets everyone in, e.g. the simple auth manager's all-admins mode).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

API_CONN_ID = "proofflow_airflow_api"


class AirflowApiError(RuntimeError):
    pass


def base_url(conn) -> str:
    host = (conn.host or "").rstrip("/")
    if not host:
        raise AirflowApiError(f"connection {conn.conn_id!r} has no host: set it to the API server's address")
    if "://" in host:
        return host
    return f"{conn.schema or 'http'}://{host}" + (f":{conn.port}" if conn.port else "")


class AirflowApi:
    def __init__(self, base: str, login: str | None = None, password: str | None = None, timeout: float = 10):
        self.base, self.timeout = base.rstrip("/"), timeout
        self._login, self._password = login, password
        self._token: str | None = None

    @classmethod
    def from_connection(cls, conn_id: str = API_CONN_ID) -> "AirflowApi":
        from airflow.sdk import BaseHook
        conn = BaseHook.get_connection(conn_id)
        return cls(base_url(conn), conn.login or None, conn.password or None)

    def _call(self, method: str, path: str, body=None, auth: bool = True):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth and self._login:
            headers["Authorization"] = f"Bearer {self.token()}"
        req = urllib.request.Request(self.base + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as exc:  # the response body names the problem; no credential is in it
            detail = exc.read()[:300].decode(errors="replace")
            raise AirflowApiError(f"{method} {path}: HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise AirflowApiError(f"{method} {path}: {exc}") from None

    def token(self) -> str:
        if self._token is None:
            out = self._call("POST", "/auth/token", {"username": self._login, "password": self._password}, auth=False)
            self._token = out["access_token"]
        return self._token

    def set_dag_run_note(self, dag_id: str, run_id: str, note: str) -> dict:
        q = urllib.parse.quote
        return self._call("PATCH", f"/api/v2/dags/{q(dag_id, safe='')}/dagRuns/{q(run_id, safe='')}"
                                   "?update_mask=note", {"note": note})
