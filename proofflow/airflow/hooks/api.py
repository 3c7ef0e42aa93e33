"""The Airflow REST API, as proofflow's tasks reach it: ``AirflowApiHook`` takes the base URL
and credentials from one Airflow connection (``proofflow_airflow_api``, type http), never
from code or other settings.

    airflow connections add proofflow_airflow_api --conn-type http --conn-host 127.0.0.1 \\
        --conn-port 8080 --conn-schema http --conn-login admin --conn-password '...'

(or ``--conn-host http://airflow.example.com/base``); ``proofflow setup`` creates it, with a
login the auth manager has, where none is defined (``bootstrap.ensure_api_connection``). With a login, a JWT comes from
``POST /auth/token`` (the FAB and the simple auth manager both take a username and password
there); without one the requests go unauthenticated (an auth manager that lets everyone in,
e.g. the simple auth manager's all-admins mode). ``AirflowApi`` is the
client itself, usable with a base URL and a token or credentials (the tests drive their
deployments through it).
"""
from __future__ import annotations

import datetime as dt
import json
import urllib.error
import urllib.parse
import urllib.request

from proofflow import settings

q = urllib.parse.quote


class AirflowApiError(RuntimeError):
    """A request that failed: ``status`` is the HTTP status (None: no answer), ``body`` the
    parsed error body when there was one."""

    def __init__(self, message: str, status: int | None = None, body=None):
        super().__init__(message)
        self.status, self.body = status, body


def base_url(conn) -> str:
    host = (conn.host or "").rstrip("/")
    if not host:
        raise AirflowApiError(f"connection {conn.conn_id!r} has no host: set it to the API server's address")
    if "://" in host:
        return host
    return f"{conn.schema or 'http'}://{host}" + (f":{conn.port}" if conn.port else "")


class AirflowApi:
    def __init__(self, base: str, login: str | None = None, password: str | None = None, token: str | None = None,
                 timeout: float = 10):
        self.base, self.timeout = base.rstrip("/"), timeout
        self._login, self._password, self._token = login, password, token

    def call(self, method: str, path: str, body=None, auth: bool = True):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth and (self._token or self._login):
            headers["Authorization"] = f"Bearer {self.token()}"
        req = urllib.request.Request(self.base + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as exc:  # the response body names the problem; no credential is in it
            raw = exc.read()
            try:
                parsed = json.loads(raw or b"null")
            except ValueError:
                parsed = raw.decode(errors="replace")
            raise AirflowApiError(f"{method} {path}: HTTP {exc.code}: {raw[:300].decode(errors='replace')}",
                                  exc.code, parsed) from None
        except (urllib.error.URLError, OSError) as exc:
            raise AirflowApiError(f"{method} {path}: {exc}") from None

    def token(self) -> str:
        if self._token is None:
            out = self.call("POST", "/auth/token", {"username": self._login, "password": self._password}, auth=False)
            self._token = out["access_token"]
        return self._token

    def set_dag_run_note(self, dag_id: str, run_id: str, note: str) -> dict:
        return self.call("PATCH", f"/api/v2/dags/{q(dag_id, safe='')}/dagRuns/{q(run_id, safe='')}"
                                  "?update_mask=note", {"note": note})

    def task_instance(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> dict:
        return self.call("GET", f"/api/v2/dags/{q(dag_id, safe='')}/dagRuns/{q(run_id, safe='')}/taskInstances/"
                                f"{q(task_id, safe='')}" + (f"/{map_index}" if map_index >= 0 else ""))

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1) -> list:
        """The records of a try's log (structured: dicts with ``event``), read by the API
        server wherever the try ran."""
        out = self.call("GET", f"/api/v2/dags/{q(dag_id, safe='')}/dagRuns/{q(run_id, safe='')}/taskInstances/"
                               f"{q(task_id, safe='')}/logs/{int(try_number)}?full_content=true&map_index={int(map_index)}")
        return list(out.get("content") or [])

    def queued_when(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> float | None:
        """When a task instance was queued (epoch seconds), or None."""
        value = self.task_instance(dag_id, run_id, task_id, map_index).get("queued_when")
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


class AirflowApiHook:
    """The API client of the connection ``conn_id`` (read through the task SDK)."""

    def __init__(self, conn_id: str = settings.API_CONN_ID):
        self.conn_id = conn_id

    def get_conn(self) -> AirflowApi:
        from airflow.sdk import BaseHook
        conn = BaseHook.get_connection(self.conn_id)
        return AirflowApi(base_url(conn), conn.login or None, conn.password or None)
