"""The timing tables. ``sql/schema.sql`` is generated from this metadata (Postgres dialect)
and the Alembic migrations in ``migrations/`` build the same tables; tests check both.

One row per (dag, run, task, map index, try number, phase) in ``task_timings``: a retried
task adds rows under its own try number, a rerun of the same try replaces its rows (unique
constraint + upsert), nothing is ever duplicated. The phase spans inside ``prove_gpu``
(pool_wait, load, h2d, ntt, msm, d2h, finalize) are ``task_timings`` rows of that task, also
queryable as the view ``phase_spans`` (``views.py``, migration 0002).
"""
from __future__ import annotations

from sqlalchemy import (BigInteger, Column, DateTime, Float, Index, Integer, MetaData, String, Table, Text,
                        UniqueConstraint)

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

ID = 250  # Airflow's own limit for dag, run and task ids

runs = Table(
    "runs", metadata,
    Column("dag_id", String(ID), primary_key=True),
    Column("run_id", String(ID), primary_key=True),
    Column("circuit", String(64)),
    Column("log2", Integer),
    Column("partitions", Integer),
    Column("backend", String(16)),
    Column("staging", String(16)),
    Column("seed", BigInteger),
    Column("state", String(32), nullable=False, server_default="running"),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("wall_s", Float),
    Column("proofs_verified", Integer),
    Column("bundle_dir", Text),
    Column("host", String(255)),
)

task_timings = Table(
    "task_timings", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("run_id", String(ID), nullable=False),
    Column("dag_id", String(ID), nullable=False),
    Column("task_id", String(ID), nullable=False),
    Column("map_index", Integer, nullable=False, server_default="-1"),
    Column("try_number", Integer, nullable=False),
    Column("partition", Integer),
    Column("phase", String(64), nullable=False),
    Column("host", String(255)),
    Column("device", String(64)),
    Column("start", DateTime(timezone=True), nullable=False),
    Column("end", DateTime(timezone=True), nullable=False),
    Column("duration_s", Float, nullable=False),
    UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "try_number", "phase",
                     name="uq_task_timings_attempt_phase"),
    Index("ix_task_timings_run", "dag_id", "run_id"),
)

transfers = Table(
    "transfers", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("run_id", String(ID), nullable=False),
    Column("dag_id", String(ID), nullable=False),
    Column("task_id", String(ID), nullable=False),
    Column("map_index", Integer, nullable=False, server_default="-1"),
    Column("partition", Integer),
    Column("try_number", Integer, nullable=False),
    Column("direction", String(16), nullable=False),  # h2s (host to staging), h2d, d2h
    Column("bytes", BigInteger, nullable=False),
    Column("memory_kind", String(16), nullable=False),  # pinned | pageable
    Column("start", DateTime(timezone=True)),
    Column("duration_s", Float, nullable=False),
    Column("gbps", Float),
    UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "try_number", "direction",
                     name="uq_transfers_attempt_direction"),
    Index("ix_transfers_run", "dag_id", "run_id"),
)

# Columns that identify a row for insert-or-update.
TIMING_KEY = ("dag_id", "run_id", "task_id", "map_index", "try_number", "phase")
TRANSFER_KEY = ("dag_id", "run_id", "task_id", "map_index", "try_number", "direction")
RUN_KEY = ("dag_id", "run_id")
