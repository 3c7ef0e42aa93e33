"""busy time is the union of a device's spans, not their sum (the prover service uploads the
next proof while the device computes the one before: a sum counted the overlap twice): view
device_spans, run_summary and steady_state* read it, the steady window counting a warm-up
proof still on the device; run_summary's busy fraction is per device; runs records the backend
and staging asked for beside those that ran

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Frozen copies of proofflow/timing/views.py at this revision ({epoch:EXPR}: epoch seconds of
# a timestamp, rendered per dialect by revision 0003's renderer).
DEVICE_SPANS = """CREATE VIEW device_spans AS
WITH spans AS (
    SELECT id, dag_id, run_id, task_id, map_index, try_number, partition, device, phase, start, "end", duration_s,
           CASE WHEN phase IN ('ntt', 'msm') THEN 1 ELSE 0 END AS kernel
    FROM task_timings
    WHERE task_id LIKE '%prove_gpu' AND phase IN ('h2d', 'ntt', 'msm', 'd2h')
), covered AS (
    SELECT s.*,
           MAX("end") OVER (PARTITION BY dag_id, run_id, device ORDER BY start, "end", id
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until,
           MAX("end") OVER (PARTITION BY dag_id, run_id, device, kernel ORDER BY start, "end", id
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS kernel_until
    FROM spans s
)
SELECT dag_id, run_id, task_id, map_index, try_number, partition, device, phase, kernel, start, "end", duration_s,
       CASE WHEN busy_until IS NULL OR busy_until <= start THEN start
            WHEN busy_until >= "end" THEN "end" ELSE busy_until END AS union_start,
       CASE WHEN busy_until IS NULL OR busy_until <= start THEN duration_s
            WHEN busy_until >= "end" THEN 0 ELSE {epoch:"end"} - {epoch:busy_until} END AS union_s,
       CASE WHEN kernel = 0 THEN NULL WHEN kernel_until IS NULL OR kernel_until <= start THEN start
            WHEN kernel_until >= "end" THEN "end" ELSE kernel_until END AS kernel_union_start,
       CASE WHEN kernel = 0 THEN 0 WHEN kernel_until IS NULL OR kernel_until <= start THEN duration_s
            WHEN kernel_until >= "end" THEN 0 ELSE {epoch:"end"} - {epoch:kernel_until} END AS kernel_union_s
FROM covered"""

RUN_SUMMARY = """CREATE VIEW run_summary AS
WITH span AS (
    SELECT dag_id, run_id, MIN(start) AS first_start, MAX("end") AS last_end
    FROM task_timings GROUP BY dag_id, run_id
), gpu AS (
    SELECT dag_id, run_id,
           SUM(CASE WHEN phase = 'task' THEN duration_s ELSE 0 END) AS gpu_slot_s,
           SUM(CASE WHEN phase = 'pool_wait' THEN duration_s ELSE 0 END) AS pool_wait_s
    FROM task_timings WHERE task_id LIKE '%prove_gpu' GROUP BY dag_id, run_id
), busy AS (
    SELECT dag_id, run_id, SUM(union_s) AS gpu_busy_s, COUNT(DISTINCT device) AS devices
    FROM device_spans GROUP BY dag_id, run_id
), flags AS (
    SELECT dag_id, run_id, COUNT(DISTINCT partition) AS flagged_partitions, COUNT(*) AS flags
    FROM h2d_flags GROUP BY dag_id, run_id
), base AS (
    SELECT r.dag_id, r.run_id, r.state, r.circuit, r.log2, r.partitions, r.backend, r.backend_requested,
           r.staging, r.staging_requested, r.host, r.started_at, r.finished_at,
           COALESCE(r.wall_s, {epoch:s.last_end} - {epoch:s.first_start}) AS wall_s,
           COALESCE(r.proofs_verified, 0) AS proofs_verified, COALESCE(b.devices, 0) AS devices,
           COALESCE(b.gpu_busy_s, 0) AS gpu_busy_s, COALESCE(g.gpu_slot_s, 0) AS gpu_slot_s,
           COALESCE(g.pool_wait_s, 0) AS pool_wait_s,
           COALESCE(f.flagged_partitions, 0) AS flagged_partitions, COALESCE(f.flags, 0) AS flags
    FROM runs r
    LEFT JOIN span s ON s.dag_id = r.dag_id AND s.run_id = r.run_id
    LEFT JOIN gpu g ON g.dag_id = r.dag_id AND g.run_id = r.run_id
    LEFT JOIN busy b ON b.dag_id = r.dag_id AND b.run_id = r.run_id
    LEFT JOIN flags f ON f.dag_id = r.dag_id AND f.run_id = r.run_id
)
SELECT dag_id, run_id, state, circuit, log2, partitions, backend, backend_requested, staging, staging_requested, host,
       started_at, finished_at, wall_s, proofs_verified, devices, gpu_busy_s, gpu_slot_s, pool_wait_s,
       gpu_busy_s / NULLIF(wall_s * CASE WHEN devices > 1 THEN devices ELSE 1 END, 0) AS gpu_busy_fraction,
       gpu_slot_s / NULLIF(wall_s, 0) AS gpu_slot_fraction,
       flagged_partitions, flags
FROM base"""

STEADY_STATE = """CREATE VIEW steady_state AS
WITH g AS (
    SELECT * FROM gpu_partitions WHERE gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
), w AS (
    SELECT dag_id, run_id, MIN(gpu_start) AS window_start, MAX(gpu_end) AS window_end,
           MAX({epoch:gpu_end}) - MIN({epoch:gpu_start}) AS window_s
    FROM g GROUP BY dag_id, run_id
), busy AS (
    SELECT d.dag_id, d.run_id, d.device,
           SUM(CASE WHEN d.union_s = 0 OR d."end" <= w.window_start OR d.union_start >= w.window_end THEN 0
                WHEN d.union_start >= w.window_start AND d."end" <= w.window_end THEN d.union_s
                ELSE {epoch:CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END}
                     - {epoch:CASE WHEN d.union_start > w.window_start THEN d.union_start ELSE w.window_start END} END) AS busy_s,
           SUM(CASE WHEN d.kernel_union_s = 0 OR d."end" <= w.window_start OR d.kernel_union_start >= w.window_end THEN 0
                WHEN d.kernel_union_start >= w.window_start AND d."end" <= w.window_end THEN d.kernel_union_s
                ELSE {epoch:CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END}
                     - {epoch:CASE WHEN d.kernel_union_start > w.window_start THEN d.kernel_union_start ELSE w.window_start END} END) AS kernel_s
    FROM device_spans d
    JOIN w ON w.dag_id = d.dag_id AND w.run_id = d.run_id
    JOIN (SELECT DISTINCT dag_id, run_id, device FROM g) gd
      ON gd.dag_id = d.dag_id AND gd.run_id = d.run_id AND gd.device = d.device
    GROUP BY d.dag_id, d.run_id, d.device
), per_run AS (
    SELECT dag_id, run_id, SUM(busy_s) AS busy_s, SUM(kernel_s) AS kernel_s FROM busy GROUP BY dag_id, run_id
)
SELECT g.dag_id, g.run_id, (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AS warmup_partitions, (SELECT value FROM report_settings WHERE name = 'warmup_seconds') AS warmup_seconds,
       COUNT(*) AS partitions, COUNT(DISTINCT g.device) AS devices,
       MIN(g.gpu_start) AS window_start, MAX(g.gpu_end) AS window_end, MAX(w.window_s) AS window_s,
       COALESCE(MAX(b.busy_s), 0) AS gpu_busy_s,
       COALESCE(MAX(b.busy_s), 0) / NULLIF(MAX(w.window_s) * COUNT(DISTINCT g.device), 0) AS gpu_busy_fraction,
       COALESCE(MAX(b.kernel_s), 0) AS gpu_kernel_s,
       COALESCE(MAX(b.kernel_s), 0) / NULLIF(MAX(w.window_s) * COUNT(DISTINCT g.device), 0) AS kernel_busy_fraction,
       MAX(w.window_s) / COUNT(*) AS s_per_partition,
       AVG(g.slot_s) AS mean_slot_s, AVG(g.pool_wait_s) AS mean_pool_wait_s,
       AVG(g.mutex_wait_s) AS mean_mutex_wait_s, AVG(g.barrier_wait_s) AS mean_barrier_wait_s,
       SUM(g.h2d_bytes) / NULLIF(SUM(g.h2d_transfer_s), 0) / 1e9 AS h2d_gbps
FROM g
JOIN w ON w.dag_id = g.dag_id AND w.run_id = g.run_id
LEFT JOIN per_run b ON b.dag_id = g.dag_id AND b.run_id = g.run_id
GROUP BY g.dag_id, g.run_id"""

STEADY_STATE_DEVICES = """CREATE VIEW steady_state_devices AS
WITH g AS (
    SELECT * FROM gpu_partitions WHERE gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
), w AS (
    SELECT dag_id, run_id, MIN(gpu_start) AS window_start, MAX(gpu_end) AS window_end,
           MAX({epoch:gpu_end}) - MIN({epoch:gpu_start}) AS window_s
    FROM g GROUP BY dag_id, run_id
), busy AS (
    SELECT d.dag_id, d.run_id, d.device,
           SUM(CASE WHEN d.union_s = 0 OR d."end" <= w.window_start OR d.union_start >= w.window_end THEN 0
                WHEN d.union_start >= w.window_start AND d."end" <= w.window_end THEN d.union_s
                ELSE {epoch:CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END}
                     - {epoch:CASE WHEN d.union_start > w.window_start THEN d.union_start ELSE w.window_start END} END) AS busy_s,
           SUM(CASE WHEN d.kernel_union_s = 0 OR d."end" <= w.window_start OR d.kernel_union_start >= w.window_end THEN 0
                WHEN d.kernel_union_start >= w.window_start AND d."end" <= w.window_end THEN d.kernel_union_s
                ELSE {epoch:CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END}
                     - {epoch:CASE WHEN d.kernel_union_start > w.window_start THEN d.kernel_union_start ELSE w.window_start END} END) AS kernel_s
    FROM device_spans d
    JOIN w ON w.dag_id = d.dag_id AND w.run_id = d.run_id
    JOIN (SELECT DISTINCT dag_id, run_id, device FROM g) gd
      ON gd.dag_id = d.dag_id AND gd.run_id = d.run_id AND gd.device = d.device
    GROUP BY d.dag_id, d.run_id, d.device
)
SELECT g.dag_id, g.run_id, g.device, COUNT(*) AS partitions, MAX(w.window_s) AS window_s,
       COALESCE(MAX(b.busy_s), 0) AS gpu_busy_s,
       COALESCE(MAX(b.busy_s), 0) / NULLIF(MAX(w.window_s), 0) AS gpu_busy_fraction,
       COALESCE(MAX(b.kernel_s), 0) / NULLIF(MAX(w.window_s), 0) AS kernel_busy_fraction
FROM g
JOIN w ON w.dag_id = g.dag_id AND w.run_id = g.run_id
LEFT JOIN busy b ON b.dag_id = g.dag_id AND b.run_id = g.run_id AND b.device = g.device
GROUP BY g.dag_id, g.run_id, g.device"""

# Created in this order, dropped in the reverse (run_summary and steady_state* read device_spans).
VIEWS = [("device_spans", DEVICE_SPANS), ("run_summary", RUN_SUMMARY), ("steady_state", STEADY_STATE),
         ("steady_state_devices", STEADY_STATE_DEVICES)]
REQUESTED = ("backend_requested", "staging_requested")


def _revision(filename: str):
    """An earlier revision's module (frozen SQL and its renderer), loaded from this folder."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(filename[:-3], Path(__file__).with_name(filename))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _drop_views() -> None:
    for name, _sql in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")


def _create(views) -> None:
    render = _revision("0003_checks_reporting.py")._render  # {epoch:EXPR} as at 0003
    dialect = op.get_bind().dialect.name
    for _name, sql in views:
        op.execute(render(sql, dialect))


def upgrade() -> None:
    _drop_views()
    for name in REQUESTED:
        op.add_column("runs", sa.Column(name, sa.String(16)))
    _create(VIEWS)


def downgrade() -> None:
    _drop_views()  # first: SQLite drops no column a view reads
    for name in REQUESTED:
        op.drop_column("runs", name)
    m0003, m0005 = dict(_revision("0003_checks_reporting.py").VIEWS), dict(_revision("0005_kernel_busy.py").VIEWS)
    _create([("run_summary", m0003["run_summary"]), ("steady_state", m0005["steady_state"]),
             ("steady_state_devices", m0005["steady_state_devices"])])
