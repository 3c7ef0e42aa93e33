"""prover-service phases: device spans order the GPU's work, the steady window is measured on
them, mutex and barrier waits per attempt, per-device steady state

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# Frozen copies of proofflow/timing/views.py at this revision ({epoch:EXPR}: epoch seconds of
# a timestamp, rendered per dialect by revision 0003's renderer).
PHASE_SPANS = """CREATE VIEW phase_spans AS
SELECT run_id, dag_id, task_id, map_index, try_number, partition, phase, host, device,
       start, "end", duration_s
FROM task_timings
WHERE task_id LIKE '%prove_gpu'
  AND phase IN ('pool_wait', 'queue_wait', 'service_start', 'key_load', 'staging_wait', 'prefetch', 'mutex_wait', 'key_upload', 'load_key', 'load', 'h2d', 'ntt', 'msm', 'd2h', 'msm_g2_wait', 'assemble', 'finalize')"""

POOL_WAITS = """CREATE VIEW pool_waits AS
SELECT w.dag_id, w.run_id, w.task_id, w.map_index, w.partition, w.try_number,
       w.start AS ready_at, w."end" AS started_at, w.duration_s AS pool_wait_s, t.duration_s AS task_s,
       m.duration_s AS mutex_wait_s
FROM task_timings w
LEFT JOIN task_timings t ON t.dag_id = w.dag_id AND t.run_id = w.run_id AND t.task_id = w.task_id
     AND t.map_index = w.map_index AND t.try_number = w.try_number AND t.phase = 'task'
LEFT JOIN task_timings m ON m.dag_id = w.dag_id AND m.run_id = w.run_id AND m.task_id = w.task_id
     AND m.map_index = w.map_index AND m.try_number = w.try_number AND m.phase = 'mutex_wait'
WHERE w.task_id LIKE '%prove_gpu' AND w.phase = 'pool_wait'"""

GPU_PARTITIONS = """CREATE VIEW gpu_partitions AS
WITH att AS (
    SELECT dag_id, run_id, task_id, map_index, try_number, MAX(partition) AS partition, MAX(device) AS device,
           MIN(CASE WHEN phase = 'task' THEN start END) AS start,
           MAX(CASE WHEN phase = 'task' THEN "end" END) AS "end",
           MIN(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN start END) AS busy_start,
           MAX(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN "end" END) AS busy_end,
           SUM(CASE WHEN phase = 'task' THEN duration_s ELSE 0 END) AS slot_s,
           SUM(CASE WHEN phase IN ('h2d', 'ntt', 'msm', 'd2h') THEN duration_s ELSE 0 END) AS busy_s,
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
       a.slot_s, a.busy_s, a.h2d_s, a.pool_wait_s, a.mutex_wait_s, a.barrier_wait_s,
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
       SUM(g.busy_s) / NULLIF(MAX(w.window_s), 0) AS gpu_busy_fraction
FROM g JOIN w ON w.dag_id = g.dag_id AND w.run_id = g.run_id
GROUP BY g.dag_id, g.run_id, g.device"""

# Created in this order, dropped in the reverse (steady_state* read gpu_partitions).
VIEWS = [("phase_spans", PHASE_SPANS), ("pool_waits", POOL_WAITS), ("gpu_partitions", GPU_PARTITIONS),
         ("steady_state", STEADY_STATE), ("steady_state_devices", STEADY_STATE_DEVICES)]
REPLACED = ["phase_spans", "pool_waits", "gpu_partitions", "steady_state"]


def _revision(filename: str):
    """An earlier revision's module (frozen SQL and its renderer), loaded from this folder."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(filename[:-3], Path(__file__).with_name(filename))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def upgrade() -> None:
    render = _revision("0003_checks_reporting.py")._render  # {epoch:EXPR} as at 0003
    for name, _sql in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    dialect = op.get_bind().dialect.name
    for _name, sql in VIEWS:
        op.execute(render(sql, dialect))


def downgrade() -> None:
    # back to the views of revisions 0002 (phase_spans) and 0003 (the others)
    m0003 = _revision("0003_checks_reporting.py")
    for name, _sql in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    dialect = op.get_bind().dialect.name
    for name, sql in m0003.VIEWS:
        if name in REPLACED and name != "phase_spans":
            op.execute(m0003._render(sql, dialect))
    op.execute(_revision("0002_phase_spans_view.py").PHASE_SPANS)
