"""``TimingStoreHook``: the timing store from the one setting that names it.

Order: env ``PROOFFLOW_DB_URL``; else the Airflow connection ``proofflow_timing`` (read
through the task SDK's ``BaseHook``, so inside a task it comes from the API server, and
outside one from ``AIRFLOW_CONN_PROOFFLOW_TIMING`` or a secrets backend); else SQLite under
``$PROOFFLOW_HOME``. The connection may be of type ``postgres`` (host, port, login,
password, schema = database), ``sqlite`` (host = file path), or any type with
``extra = {"url": "<sqlalchemy url>"}``.
"""
from __future__ import annotations

import logging
from urllib.parse import quote

from proofflow import settings

log = logging.getLogger(__name__)


def url_from_connection(conn) -> str:
    extra = conn.extra_dejson or {}
    if extra.get("url"):
        return extra["url"]
    ctype = (conn.conn_type or "").lower()
    if ctype in ("postgres", "postgresql"):
        from sqlalchemy.engine import URL
        return URL.create("postgresql+psycopg2", username=conn.login or None, password=conn.password or None,
                          host=conn.host or None, port=conn.port or None,
                          database=conn.schema or None).render_as_string(hide_password=False)
    if ctype == "sqlite":
        return f"sqlite:///{conn.host}"
    raise ValueError(f"connection {conn.conn_id!r} of type {conn.conn_type!r} cannot name a timing store: "
                     "use type postgres or sqlite, or put a SQLAlchemy URL in its extra as {\"url\": ...}")


def resolve_db_url(conn_id: str = settings.TIMING_CONN_ID, use_connection: bool = True) -> str:
    url = settings.db_url_from_env()
    if url:
        return url
    if use_connection:
        try:
            from airflow.sdk import BaseHook
            conn = BaseHook.get_connection(conn_id)
        except Exception as exc:  # not defined (AirflowNotFoundException) or no Airflow context: the default
            log.debug("no connection %s (%s); using the default timing store", conn_id, exc)
        else:
            return url_from_connection(conn)
    return settings.default_db_url()


def _base():
    try:
        from airflow.sdk import BaseHook
        return BaseHook
    except ImportError:  # the store itself works without Airflow
        return object


class TimingStoreHook(_base()):
    conn_name_attr = "proofflow_conn_id"
    default_conn_name = settings.TIMING_CONN_ID
    conn_type = "proofflow_timing"
    hook_name = "proofflow timing store"

    def __init__(self, proofflow_conn_id: str = settings.TIMING_CONN_ID, **kwargs):
        super().__init__(**kwargs)
        self.proofflow_conn_id = proofflow_conn_id
        self._store = None

    def get_url(self) -> str:
        return resolve_db_url(self.proofflow_conn_id)

    def get_store(self):
        if self._store is None:
            from proofflow.timing.store import TimingStore
            self._store = TimingStore(self.get_url())
        return self._store

    def get_conn(self):
        return self.get_store().engine
