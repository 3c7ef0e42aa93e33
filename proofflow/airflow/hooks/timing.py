"""``TimingStoreHook``: the timing store from the one setting that names it.

Order (``proofflow.timing.store.resolve_url``): env ``PROOFFLOW_DB_URL``; else the Airflow
connection ``proofflow_timing`` (inside a task read through the task SDK, i.e. from the API
server; in the API server itself from its secrets backends and metadata DB); else SQLite
under ``$PROOFFLOW_HOME``. The connection may be of type ``proofflow_timing`` (this hook's,
registered by the provider: its form is in ``proofflow.airflow.get_provider_info``) or
``postgres`` (host, port, login, password, schema = database: a PostgreSQL store), ``sqlite``
(host = file path), or any type with ``extra = {"url": "<sqlalchemy url>"}``.
"""
from __future__ import annotations

import logging

from airflow.sdk import BaseHook

from proofflow import settings

log = logging.getLogger(__name__)


def url_from_connection(conn) -> str:
    extra = conn.extra_dejson or {}
    if extra.get("url"):
        return extra["url"]
    ctype = (conn.conn_type or "").lower()
    if ctype in ("postgres", "postgresql", TimingStoreHook.conn_type):
        from sqlalchemy.engine import URL
        return URL.create("postgresql+psycopg2", username=conn.login or None, password=conn.password or None,
                          host=conn.host or None, port=conn.port or None,
                          database=conn.schema or None).render_as_string(hide_password=False)
    if ctype == "sqlite":
        return f"sqlite:///{conn.host}"
    raise ValueError(f"connection {conn.conn_id!r} of type {conn.conn_type!r} cannot name a timing store: use type "
                     f"{TimingStoreHook.conn_type}, postgres or sqlite, or put a SQLAlchemy URL in its extra as "
                     '{"url": ...}')


class TimingStoreHook(BaseHook):
    """The timing store of one Airflow connection; Airflow maps connection type
    ``proofflow_timing`` to this hook (``Connection.get_hook``)."""

    conn_name_attr = "proofflow_conn_id"
    default_conn_name = settings.TIMING_CONN_ID
    conn_type = "proofflow_timing"
    hook_name = "proofflow timing store"

    def __init__(self, proofflow_conn_id: str = settings.TIMING_CONN_ID, in_api_server: bool = False, **kwargs):
        """``in_api_server``: look the connection up as the API server does (secrets backends,
        then the metadata DB), not through the task SDK."""
        super().__init__(**kwargs)
        self.proofflow_conn_id, self.in_api_server = proofflow_conn_id, in_api_server

    def _connection_url(self) -> str | None:
        try:
            if self.in_api_server:
                from airflow.models.connection import Connection
                conn = Connection.get_connection_from_secrets(self.proofflow_conn_id)
            else:
                conn = BaseHook.get_connection(self.proofflow_conn_id)
        except Exception as exc:  # not defined (AirflowNotFoundException) or no Airflow context: the default
            log.debug("no connection %s (%s); using the default timing store", self.proofflow_conn_id, exc)
            return None
        return url_from_connection(conn)

    def get_url(self) -> str:
        from proofflow.timing.store import resolve_url
        return resolve_url(self._connection_url)

    def get_store(self):
        from proofflow.timing.store import open_store
        return open_store(self.get_url())

    def get_conn(self):
        return self.get_store().engine
