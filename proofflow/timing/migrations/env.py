"""Alembic environment of the timing store. Run through ``TimingStore.upgrade()`` (which
passes its connection in ``config.attributes["connection"]``) or the ``alembic`` CLI with
``-x url=...``; the version table is ``proofflow_alembic_version`` so the store can share a
database with Airflow's own (whose table is ``alembic_version``)."""
from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from proofflow.timing.models import metadata

VERSION_TABLE = "proofflow_alembic_version"
config = context.config


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    engine = create_engine(url)
    with engine.begin() as conn:
        _run(conn)
    engine.dispose()


def run_migrations_offline() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    context.configure(url=url, target_metadata=metadata, version_table=VERSION_TABLE, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
