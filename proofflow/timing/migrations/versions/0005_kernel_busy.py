"""kernel busy: gpu_partitions gets kernel_s (ntt+msm), steady_state gpu_kernel_s and
kernel_busy_fraction, steady_state_devices kernel_busy_fraction (the busy fraction counts
transfers in flight; the kernel fraction shows what a slow copy leaves idle)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Frozen copies of proofflow/timing/views.py at this revision ({epoch:EXPR}: epoch seconds of
# a timestamp, rendered per dialect by revision 0003's renderer).
GPU_PARTITIONS = """CREATE VIEW gpu_partitions AS
WITH att AS (
    SELECT dag_id, run_id, task_id, map_index, try_number, MAX(partition) AS partition, MAX(device) AS device,
           MIN(CASE WHEN phase = 'task' THEN start END) AS start,
           MAX(CASE WHEN phase = 'task' THEN "end" END) AS "end",
           MIN(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN start END) AS busy_start,
           MAX(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN "end" END) AS busy_end,
           SUM(CASE WHEN phase = 'task' THEN duration_s ELSE 0 END) AS slot_s,
           SUM(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN duration_s ELSE 0 END) AS busy_s,
           SUM(CASE WHEN phase IN ('ntt', 'msm') THEN duration_s ELSE 0 END) AS kernel_s,
           SUM(CASE WHEN phase = 'h2d' THEN duration_s ELSE 0 END) AS h2d_s,
           SUM(CASE WHEN phase = 'pool_wait' THEN duration_s ELSE 0 END) AS pool_wait_s,
           SUM(CASE WHEN phase = 'mutex_wait' THEN duration_s ELSE 0 END) AS mutex_wait_s,
           SUM(CASE WHEN phase = 'msm_g2_wait' THEN duration_s ELSE 0 END) AS barrier_wait_s
    FROM task_timings WHERE task_id LIKE '%prove_gpu'
    GROUP BY dag_id, run_id, task_id, map_index, try_number
), run0 AS (
    SELECT dag_id, run_id, MIN(start) AS run_start FROM task_timings GROUP BY dag_id, run_id
)
SELECT a.dag_id, a.run_id, a.partition, a.map_index, a.try_number, a.device, a.start, a."end",
       COALESCE(a.busy_start, a.start) AS gpu_start, COALESCE(a.busy_end, a."end") AS gpu_end,
       a.slot_s, a.busy_s, a.kernel_s, a.h2d_s, a.pool_wait_s, a.mutex_wait_s, a.barrier_wait_s,
       x.bytes AS h2d_bytes, x.duration_s AS h2d_transfer_s,
       ROW_NUMBER() OVER (PARTITION BY a.dag_id, a.run_id
                          ORDER BY COALESCE(a.busy_start, a.start), a.map_index, a.try_number) AS gpu_rank,
       {epoch:COALESCE(a.busy_start, a.start)} - {epoch:r.run_start} AS offset_s
FROM att a
JOIN run0 r ON r.dag_id = a.dag_id AND r.run_id = a.run_id
LEFT JOIN transfers x ON x.dag_id = a.dag_id AND x.run_id = a.run_id AND x.task_id = a.task_id
     AND x.map_index = a.map_index AND x.try_number = a.try_number AND x.direction = 'h2d'
WHERE a.start IS NOT NULL"""

STEADY_STATE = """CREATE VIEW steady_state AS
SELECT g.dag_id, g.run_id, (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AS warmup_partitions, (SELECT value FROM report_settings WHERE name = 'warmup_seconds') AS warmup_seconds,
       COUNT(*) AS partitions, COUNT(DISTINCT g.device) AS devices,
       MIN(g.gpu_start) AS window_start, MAX(g.gpu_end) AS window_end,
       MAX({epoch:g.gpu_end}) - MIN({epoch:g.gpu_start}) AS window_s,
       SUM(g.busy_s) AS gpu_busy_s,
       SUM(g.busy_s) / NULLIF((MAX({epoch:g.gpu_end}) - MIN({epoch:g.gpu_start})) * COUNT(DISTINCT g.device), 0)
           AS gpu_busy_fraction,
       SUM(g.kernel_s) AS gpu_kernel_s,
       SUM(g.kernel_s) / NULLIF((MAX({epoch:g.gpu_end}) - MIN({epoch:g.gpu_start})) * COUNT(DISTINCT g.device), 0)
           AS kernel_busy_fraction,
       (MAX({epoch:g.gpu_end}) - MIN({epoch:g.gpu_start})) / COUNT(*) AS s_per_partition,
       AVG(g.slot_s) AS mean_slot_s, AVG(g.pool_wait_s) AS mean_pool_wait_s,
       AVG(g.mutex_wait_s) AS mean_mutex_wait_s, AVG(g.barrier_wait_s) AS mean_barrier_wait_s,
       SUM(g.h2d_bytes) / NULLIF(SUM(g.h2d_transfer_s), 0) / 1e9 AS h2d_gbps
FROM gpu_partitions g
WHERE g.gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND g.offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
GROUP BY g.dag_id, g.run_id"""

STEADY_STATE_DEVICES = """CREATE VIEW steady_state_devices AS
WITH g AS (
    SELECT * FROM gpu_partitions WHERE gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
), w AS (
    SELECT dag_id, run_id, MAX({epoch:gpu_end}) - MIN({epoch:gpu_start}) AS window_s FROM g GROUP BY dag_id, run_id
)
SELECT g.dag_id, g.run_id, g.device, COUNT(*) AS partitions, MAX(w.window_s) AS window_s, SUM(g.busy_s) AS gpu_busy_s,
       SUM(g.busy_s) / NULLIF(MAX(w.window_s), 0) AS gpu_busy_fraction,
       SUM(g.kernel_s) / NULLIF(MAX(w.window_s), 0) AS kernel_busy_fraction
FROM g JOIN w ON w.dag_id = g.dag_id AND w.run_id = g.run_id
GROUP BY g.dag_id, g.run_id, g.device"""

# Created in this order, dropped in the reverse (steady_state* read gpu_partitions).
VIEWS = [("gpu_partitions", GPU_PARTITIONS), ("steady_state", STEADY_STATE),
         ("steady_state_devices", STEADY_STATE_DEVICES)]


def _revision(filename: str):
    """An earlier revision's module (frozen SQL and its renderer), loaded from this folder."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(filename[:-3], Path(__file__).with_name(filename))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _replace(views) -> None:
    render = _revision("0003_checks_reporting.py")._render  # {epoch:EXPR} as at 0003
    for name, _sql in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    dialect = op.get_bind().dialect.name
    for _name, sql in views:
        op.execute(render(sql, dialect))


def upgrade() -> None:
    _replace(VIEWS)


def downgrade() -> None:
    m0004 = dict(_revision("0004_service_phases.py").VIEWS)
    _replace([(name, m0004[name]) for name, _sql in VIEWS])
