"""The timing tables. ``sql/schema.sql`` is generated from this metadata (Postgres dialect)
and the Alembic migrations in ``migrations/`` build the same tables; tests check both.

One row per (dag, run, task, map index, try number, phase) in ``task_timings``: a retried
task adds rows under its own try number, a rerun of the same try replaces its rows (unique
constraint + upsert), nothing is ever duplicated. The phase spans inside ``prove_gpu``
(pool_wait, load, h2d, ntt, msm, d2h, finalize) are ``task_timings`` rows of that task, also
queryable as the view ``phase_spans`` (``views.py``, migration 0002).
"""
from __future__ import annotations

from sqlalchemy import (BigInteger, Boolean, Column, DateTime, Float, Index, Integer, MetaData, String, Table, Text,
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
    Column("backend", String(16)),  # what ran: cpu | gpu
    Column("staging", String(16)),  # where a/b/c really lived: pinned | pageable (the CPU backend pins nothing)
    # what the run asked for (its conf), where it may differ from the above: auto | cpu | gpu; pinned | pageable
    Column("backend_requested", String(16)),
    Column("staging_requested", String(16)),
    Column("seed", BigInteger),
    Column("state", String(32), nullable=False, server_default="running"),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("wall_s", Float),
    Column("proofs_verified", Integer),
    Column("bundle_dir", Text),
    Column("host", String(255)),
    Column("curve", String(32)),  # a registered curve's name (none: a run from before curves were recorded)
    # why a failed run failed (spec.RunFailure): the task, its map index (the partition), the
    # partition's input (relative to its input root, or "inline") and the message
    Column("failed_task", String(ID)),
    Column("failed_map_index", Integer),
    Column("failed_input", Text),
    Column("error", Text),
    # the client's idempotency key (spec.REQUEST_ID): at most one run of a dag holds a request id
    # (the unique index makes the claim atomic); a later run of the same request is recorded
    # with state "duplicate", no request_id and duplicate_of naming the run that holds it
    # (proofflow.timing.requests)
    Column("request_id", String(128)),
    Column("duplicate_of", String(ID)),
    Index("uq_runs_request", "dag_id", "request_id", unique=True),
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

# -- issue 6: calibration, H2D checks, reporting --------------------------------------------
# A reference host-to-device rate per (host, device), measured by ``proofflow calibrate``
# (proofflow/timing/calibrate.py): one row per transfer size of one calibration batch, so the
# expected time of a transfer comes from the rate measured at (or interpolated to) its size.
calibrations = Table(
    "calibrations", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("host", String(255), nullable=False),
    Column("device", String(64), nullable=False),
    Column("memory_kind", String(16), nullable=False),
    Column("method", String(64), nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("reps", Integer, nullable=False),
    Column("median_ms", Float, nullable=False),
    Column("best_ms", Float),
    Column("gbps", Float, nullable=False),
    Column("batch", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("host", "device", "memory_kind", "batch", "bytes", name="uq_calibrations_batch_size"),
    Index("ix_calibrations_host_device", "host", "device"),
)

# One row per partition flagged by check_h2d (partition NULL: a run-level finding), replaced
# as a whole each time the run is checked.
h2d_flags = Table(
    "h2d_flags", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("dag_id", String(ID), nullable=False),
    Column("run_id", String(ID), nullable=False),
    Column("partition", Integer),
    Column("try_number", Integer),
    Column("bytes", BigInteger),
    Column("measured_ms", Float),
    Column("expected_ms", Float),
    Column("gbps", Float),
    Column("floor_gbps", Float),
    Column("reason", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_h2d_flags_run", "dag_id", "run_id"),
)

# Great Expectations' validation result of each check_h2d attempt (the JSON, as GX writes it).
check_results = Table(
    "check_results", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("dag_id", String(ID), nullable=False),
    Column("run_id", String(ID), nullable=False),
    Column("check_name", String(64), nullable=False),
    Column("try_number", Integer, nullable=False),
    Column("success", Boolean, nullable=False),
    Column("evaluated", Integer, nullable=False),
    Column("flagged", Integer, nullable=False),
    Column("result_json", Text),
    Column("report_dir", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("dag_id", "run_id", "check_name", "try_number", name="uq_check_results_attempt"),
)

# Settings the reporting views read (the steady-state window's warm-up): name -> value.
report_settings = Table(
    "report_settings", metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Float, nullable=False),
)
REPORT_SETTING_DEFAULTS = {"warmup_partitions": 1.0, "warmup_seconds": 0.0}
CHECK_RESULT_KEY = ("dag_id", "run_id", "check_name", "try_number")
