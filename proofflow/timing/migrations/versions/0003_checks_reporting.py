"""calibrations, h2d_flags, check_results, report_settings; the reporting views

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

ID = 250

# Frozen copies of proofflow/timing/views.py at this revision ({epoch:EXPR}: epoch seconds of
# a timestamp, rendered per dialect as views.render does).
RUN_SUMMARY = """CREATE VIEW run_summary AS
WITH span AS (
    SELECT dag_id, run_id, MIN(start) AS first_start, MAX("end") AS last_end
    FROM task_timings GROUP BY dag_id, run_id
), gpu AS (
    SELECT dag_id, run_id,
           SUM(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN duration_s ELSE 0 END) AS gpu_busy_s,
           SUM(CASE WHEN phase = 'task' THEN duration_s ELSE 0 END) AS gpu_slot_s,
           SUM(CASE WHEN phase = 'pool_wait' THEN duration_s ELSE 0 END) AS pool_wait_s
    FROM task_timings WHERE task_id LIKE '%prove_gpu' GROUP BY dag_id, run_id
), flags AS (
    SELECT dag_id, run_id, COUNT(DISTINCT partition) AS flagged_partitions, COUNT(*) AS flags
    FROM h2d_flags GROUP BY dag_id, run_id
), base AS (
    SELECT r.dag_id, r.run_id, r.state, r.circuit, r.log2, r.partitions, r.backend, r.staging, r.host,
           r.started_at, r.finished_at,
           COALESCE(r.wall_s, {epoch:s.last_end} - {epoch:s.first_start}) AS wall_s,
           COALESCE(r.proofs_verified, 0) AS proofs_verified,
           COALESCE(g.gpu_busy_s, 0) AS gpu_busy_s, COALESCE(g.gpu_slot_s, 0) AS gpu_slot_s,
           COALESCE(g.pool_wait_s, 0) AS pool_wait_s,
           COALESCE(f.flagged_partitions, 0) AS flagged_partitions, COALESCE(f.flags, 0) AS flags
    FROM runs r
    LEFT JOIN span s ON s.dag_id = r.dag_id AND s.run_id = r.run_id
    LEFT JOIN gpu g ON g.dag_id = r.dag_id AND g.run_id = r.run_id
    LEFT JOIN flags f ON f.dag_id = r.dag_id AND f.run_id = r.run_id
)
SELECT dag_id, run_id, state, circuit, log2, partitions, backend, staging, host, started_at, finished_at,
       wall_s, proofs_verified, gpu_busy_s, gpu_slot_s, pool_wait_s,
       gpu_busy_s / NULLIF(wall_s, 0) AS gpu_busy_fraction,
       gpu_slot_s / NULLIF(wall_s, 0) AS gpu_slot_fraction,
       flagged_partitions, flags
FROM base"""

PHASE_STATS_RUN = """CREATE VIEW phase_stats_run AS
WITH ranked AS (
    SELECT dag_id, run_id, task_id, phase, duration_s,
           ROW_NUMBER() OVER (PARTITION BY dag_id, run_id, task_id, phase ORDER BY duration_s) AS rn,
           COUNT(*) OVER (PARTITION BY dag_id, run_id, task_id, phase) AS n
    FROM task_timings
)
SELECT dag_id, run_id, task_id, phase,
       COUNT(*) AS count, SUM(duration_s) AS total_s, AVG(duration_s) AS mean_s,
       MIN(CASE WHEN rn >= 0.50 * n THEN duration_s END) AS p50_s,
       MIN(CASE WHEN rn >= 0.95 * n THEN duration_s END) AS p95_s,
       MAX(duration_s) AS max_s
FROM ranked GROUP BY dag_id, run_id, task_id, phase"""

PHASE_STATS = """CREATE VIEW phase_stats AS
WITH rows_ AS (
    SELECT t.dag_id, r.log2, r.backend, r.staging, t.run_id, t.task_id, t.phase, t.duration_s
    FROM task_timings t LEFT JOIN runs r ON r.dag_id = t.dag_id AND r.run_id = t.run_id
), ranked AS (
    SELECT dag_id, log2, backend, staging, run_id, task_id, phase, duration_s,
           ROW_NUMBER() OVER (PARTITION BY dag_id, log2, backend, staging, task_id, phase ORDER BY duration_s) AS rn,
           COUNT(*) OVER (PARTITION BY dag_id, log2, backend, staging, task_id, phase) AS n
    FROM rows_
)
SELECT dag_id, log2, backend, staging, task_id, phase, COUNT(DISTINCT run_id) AS runs,
       COUNT(*) AS count, SUM(duration_s) AS total_s, AVG(duration_s) AS mean_s,
       MIN(CASE WHEN rn >= 0.50 * n THEN duration_s END) AS p50_s,
       MIN(CASE WHEN rn >= 0.95 * n THEN duration_s END) AS p95_s,
       MAX(duration_s) AS max_s
FROM ranked GROUP BY dag_id, log2, backend, staging, task_id, phase"""

H2D_PARTITIONS = """CREATE VIEW h2d_partitions AS
SELECT x.dag_id, x.run_id, x.partition, x.map_index, x.try_number, x.task_id, x.bytes,
       x.duration_s * 1000.0 AS ms, x.gbps, x.memory_kind, x.start, t.host, t.device,
       CASE WHEN f.id IS NULL THEN 0 ELSE 1 END AS flagged,
       f.expected_ms, f.floor_gbps, f.reason
FROM transfers x
LEFT JOIN task_timings t ON t.dag_id = x.dag_id AND t.run_id = x.run_id AND t.task_id = x.task_id
     AND t.map_index = x.map_index AND t.try_number = x.try_number AND t.phase = 'task'
LEFT JOIN h2d_flags f ON f.dag_id = x.dag_id AND f.run_id = x.run_id AND f.partition = x.partition
     AND f.try_number = x.try_number
WHERE x.direction = 'h2d'"""

POOL_WAITS = """CREATE VIEW pool_waits AS
SELECT w.dag_id, w.run_id, w.task_id, w.map_index, w.partition, w.try_number,
       w.start AS ready_at, w."end" AS started_at, w.duration_s AS pool_wait_s, t.duration_s AS task_s
FROM task_timings w
LEFT JOIN task_timings t ON t.dag_id = w.dag_id AND t.run_id = w.run_id AND t.task_id = w.task_id
     AND t.map_index = w.map_index AND t.try_number = w.try_number AND t.phase = 'task'
WHERE w.task_id LIKE '%prove_gpu' AND w.phase = 'pool_wait'"""

GPU_PARTITIONS = """CREATE VIEW gpu_partitions AS
WITH att AS (
    SELECT dag_id, run_id, task_id, map_index, try_number, MAX(partition) AS partition,
           MIN(CASE WHEN phase = 'task' THEN start END) AS start,
           MAX(CASE WHEN phase = 'task' THEN "end" END) AS "end",
           SUM(CASE WHEN phase = 'task' THEN duration_s ELSE 0 END) AS slot_s,
           SUM(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN duration_s ELSE 0 END) AS busy_s,
           SUM(CASE WHEN phase = 'h2d' THEN duration_s ELSE 0 END) AS h2d_s,
           SUM(CASE WHEN phase = 'pool_wait' THEN duration_s ELSE 0 END) AS pool_wait_s
    FROM task_timings WHERE task_id LIKE '%prove_gpu'
    GROUP BY dag_id, run_id, task_id, map_index, try_number
), run0 AS (
    SELECT dag_id, run_id, MIN(start) AS run_start FROM task_timings GROUP BY dag_id, run_id
)
SELECT a.dag_id, a.run_id, a.partition, a.map_index, a.try_number, a.start, a."end",
       a.slot_s, a.busy_s, a.h2d_s, a.pool_wait_s, x.bytes AS h2d_bytes, x.duration_s AS h2d_transfer_s,
       ROW_NUMBER() OVER (PARTITION BY a.dag_id, a.run_id ORDER BY a.start, a.map_index, a.try_number) AS gpu_rank,
       {epoch:a.start} - {epoch:r.run_start} AS offset_s
FROM att a
JOIN run0 r ON r.dag_id = a.dag_id AND r.run_id = a.run_id
LEFT JOIN transfers x ON x.dag_id = a.dag_id AND x.run_id = a.run_id AND x.task_id = a.task_id
     AND x.map_index = a.map_index AND x.try_number = a.try_number AND x.direction = 'h2d'
WHERE a.start IS NOT NULL"""

STEADY_STATE = """CREATE VIEW steady_state AS
SELECT g.dag_id, g.run_id, (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AS warmup_partitions, (SELECT value FROM report_settings WHERE name = 'warmup_seconds') AS warmup_seconds,
       COUNT(*) AS partitions, MIN(g.start) AS window_start, MAX(g."end") AS window_end,
       MAX({epoch:g."end"}) - MIN({epoch:g.start}) AS window_s,
       SUM(g.busy_s) AS gpu_busy_s,
       SUM(g.busy_s) / NULLIF(MAX({epoch:g."end"}) - MIN({epoch:g.start}), 0) AS gpu_busy_fraction,
       (MAX({epoch:g."end"}) - MIN({epoch:g.start})) / COUNT(*) AS s_per_partition,
       AVG(g.slot_s) AS mean_slot_s,
       SUM(g.h2d_bytes) / NULLIF(SUM(g.h2d_transfer_s), 0) / 1e9 AS h2d_gbps
FROM gpu_partitions g
WHERE g.gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND g.offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
GROUP BY g.dag_id, g.run_id"""

VIEWS = [("run_summary", RUN_SUMMARY), ("phase_stats_run", PHASE_STATS_RUN), ("phase_stats", PHASE_STATS),
         ("h2d_partitions", H2D_PARTITIONS), ("pool_waits", POOL_WAITS), ("gpu_partitions", GPU_PARTITIONS),
         ("steady_state", STEADY_STATE)]
SETTINGS = {"warmup_partitions": 1.0, "warmup_seconds": 0.0}


def _epoch(expr: str, dialect: str) -> str:
    if dialect == "sqlite":
        return f"((julianday({expr}) - 2440587.5) * 86400.0)"
    return f"CAST(EXTRACT(EPOCH FROM {expr}) AS DOUBLE PRECISION)"


def _render(sql: str, dialect: str) -> str:
    out, i = [], 0
    while True:
        j = sql.find("{epoch:", i)
        if j < 0:
            out.append(sql[i:])
            return "".join(out)
        k = sql.find("}", j)
        out += [sql[i:j], _epoch(sql[j + len("{epoch:"):k], dialect)]
        i = k + 1


def _pk_id():
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True)


def upgrade() -> None:
    op.create_table(
        "calibrations",
        _pk_id(),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("device", sa.String(64), nullable=False),
        sa.Column("memory_kind", sa.String(16), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("reps", sa.Integer, nullable=False),
        sa.Column("median_ms", sa.Float, nullable=False),
        sa.Column("best_ms", sa.Float),
        sa.Column("gbps", sa.Float, nullable=False),
        sa.Column("batch", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_calibrations"),
        sa.UniqueConstraint("host", "device", "memory_kind", "batch", "bytes", name="uq_calibrations_batch_size"),
    )
    op.create_index("ix_calibrations_host_device", "calibrations", ["host", "device"])
    op.create_table(
        "h2d_flags",
        _pk_id(),
        sa.Column("dag_id", sa.String(ID), nullable=False),
        sa.Column("run_id", sa.String(ID), nullable=False),
        sa.Column("partition", sa.Integer),
        sa.Column("try_number", sa.Integer),
        sa.Column("bytes", sa.BigInteger),
        sa.Column("measured_ms", sa.Float),
        sa.Column("expected_ms", sa.Float),
        sa.Column("gbps", sa.Float),
        sa.Column("floor_gbps", sa.Float),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_h2d_flags"),
    )
    op.create_index("ix_h2d_flags_run", "h2d_flags", ["dag_id", "run_id"])
    op.create_table(
        "check_results",
        _pk_id(),
        sa.Column("dag_id", sa.String(ID), nullable=False),
        sa.Column("run_id", sa.String(ID), nullable=False),
        sa.Column("check_name", sa.String(64), nullable=False),
        sa.Column("try_number", sa.Integer, nullable=False),
        sa.Column("success", sa.Boolean, nullable=False),
        sa.Column("evaluated", sa.Integer, nullable=False),
        sa.Column("flagged", sa.Integer, nullable=False),
        sa.Column("result_json", sa.Text),
        sa.Column("report_dir", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_check_results"),
        sa.UniqueConstraint("dag_id", "run_id", "check_name", "try_number", name="uq_check_results_attempt"),
    )
    settings = op.create_table(
        "report_settings",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_report_settings"),
    )
    op.bulk_insert(settings, [{"name": k, "value": v} for k, v in SETTINGS.items()])
    dialect = op.get_bind().dialect.name
    for _name, sql in VIEWS:
        op.execute(_render(sql, dialect))


def downgrade() -> None:
    for name, _sql in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.drop_table("report_settings")
    op.drop_table("check_results")
    op.drop_index("ix_h2d_flags_run", table_name="h2d_flags")
    op.drop_table("h2d_flags")
    op.drop_index("ix_calibrations_host_device", table_name="calibrations")
    op.drop_table("calibrations")
