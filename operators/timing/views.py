"""SQL views over the timing tables: ``phase_spans`` (migration 0002) and the reporting views
of migration 0003, listed in ``sql/schema.sql`` (Postgres text) and behind ``proofflow report``.

One SQL text per view serves Postgres and SQLite; the only dialect-specific piece is turning
a timestamp into epoch seconds (``{epoch:...}``), filled in by ``views_for(dialect)``.

    run_summary       one row per run: wall time, partitions, proofs verified, GPU busy time
                      (the device phases h2d+ntt+msm+d2h of every prove_gpu attempt), GPU slot
                      time (prove_gpu task rows), pool wait, GPU busy fraction (busy / wall),
                      flagged partitions
    phase_stats_run   per run, task and phase: count, total, mean, p50, p95, max (seconds)
    phase_stats       the same across runs, per (dag, log2, backend, staging, task, phase)
    h2d_partitions    one row per H2D transfer: bytes, ms, GB/s, memory kind, host, device,
                      flagged by check_h2d (and why, with the expected ms and the floor)
    pool_waits        per prove_gpu attempt: ready at, started at, pool wait, task seconds
    gpu_partitions    per prove_gpu attempt, in GPU order: rank, offset from the run's start,
                      slot/busy/h2d seconds, H2D bytes (the steady-state window's input)
    steady_state      per run, the GPU attempts after the warm-up (the first
                      ``warmup_partitions`` attempts and those starting in the first
                      ``warmup_seconds`` are left out; both from table ``report_settings``):
                      partitions, window, busy fraction, seconds per partition, H2D GB/s

Percentiles are nearest-rank (the smallest value whose rank r satisfies r >= p * n), computed
with window functions, so Postgres and SQLite give the same figures.
"""
from __future__ import annotations

PHASE_SPANS = """CREATE VIEW phase_spans AS
SELECT run_id, dag_id, task_id, map_index, try_number, partition, phase, host, device,
       start, "end", duration_s
FROM task_timings
WHERE task_id LIKE '%prove_gpu'
  AND phase IN ('pool_wait', 'load', 'h2d', 'ntt', 'msm', 'd2h', 'finalize')"""

GPU_PHASES = "('h2d', 'ntt', 'msm', 'd2h')"

RUN_SUMMARY = """CREATE VIEW run_summary AS
WITH span AS (
    SELECT dag_id, run_id, MIN(start) AS first_start, MAX("end") AS last_end
    FROM task_timings GROUP BY dag_id, run_id
), gpu AS (
    SELECT dag_id, run_id,
           SUM(CASE WHEN phase IN GPU_PHASES THEN duration_s ELSE 0 END) AS gpu_busy_s,
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
FROM base""".replace("GPU_PHASES", GPU_PHASES)

_STATS_COLUMNS = """COUNT(*) AS count, SUM(duration_s) AS total_s, AVG(duration_s) AS mean_s,
       MIN(CASE WHEN rn >= 0.50 * n THEN duration_s END) AS p50_s,
       MIN(CASE WHEN rn >= 0.95 * n THEN duration_s END) AS p95_s,
       MAX(duration_s) AS max_s"""

PHASE_STATS_RUN = f"""CREATE VIEW phase_stats_run AS
WITH ranked AS (
    SELECT dag_id, run_id, task_id, phase, duration_s,
           ROW_NUMBER() OVER (PARTITION BY dag_id, run_id, task_id, phase ORDER BY duration_s) AS rn,
           COUNT(*) OVER (PARTITION BY dag_id, run_id, task_id, phase) AS n
    FROM task_timings
)
SELECT dag_id, run_id, task_id, phase,
       {_STATS_COLUMNS}
FROM ranked GROUP BY dag_id, run_id, task_id, phase"""

PHASE_STATS = f"""CREATE VIEW phase_stats AS
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
       {_STATS_COLUMNS}
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
           SUM(CASE WHEN phase IN GPU_PHASES THEN duration_s ELSE 0 END) AS busy_s,
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
WHERE a.start IS NOT NULL""".replace("GPU_PHASES", GPU_PHASES)

# The steady-state query, once: the view reads the warm-up from report_settings, the report
# CLI binds its own (--warmup-partitions / --warmup-seconds) into the same text.
STEADY_STATE_SELECT = """SELECT g.dag_id, g.run_id, {K} AS warmup_partitions, {S} AS warmup_seconds,
       COUNT(*) AS partitions, MIN(g.start) AS window_start, MAX(g."end") AS window_end,
       MAX({epoch:g."end"}) - MIN({epoch:g.start}) AS window_s,
       SUM(g.busy_s) AS gpu_busy_s,
       SUM(g.busy_s) / NULLIF(MAX({epoch:g."end"}) - MIN({epoch:g.start}), 0) AS gpu_busy_fraction,
       (MAX({epoch:g."end"}) - MIN({epoch:g.start})) / COUNT(*) AS s_per_partition,
       AVG(g.slot_s) AS mean_slot_s,
       SUM(g.h2d_bytes) / NULLIF(SUM(g.h2d_transfer_s), 0) / 1e9 AS h2d_gbps
FROM gpu_partitions g
WHERE g.gpu_rank > {K} AND g.offset_s >= {S}
GROUP BY g.dag_id, g.run_id"""
_SETTING = "(SELECT value FROM report_settings WHERE name = '{}')"
STEADY_STATE = "CREATE VIEW steady_state AS\n" + STEADY_STATE_SELECT.replace(
    "{K}", _SETTING.format("warmup_partitions")).replace("{S}", _SETTING.format("warmup_seconds"))

# Order matters: gpu_partitions before steady_state.
VIEWS = {
    "phase_spans": PHASE_SPANS,
    "run_summary": RUN_SUMMARY,
    "phase_stats_run": PHASE_STATS_RUN,
    "phase_stats": PHASE_STATS,
    "h2d_partitions": H2D_PARTITIONS,
    "pool_waits": POOL_WAITS,
    "gpu_partitions": GPU_PARTITIONS,
    "steady_state": STEADY_STATE,
}
REPORTING_VIEWS = [name for name in VIEWS if name != "phase_spans"]


def epoch_sql(expr: str, dialect: str) -> str:
    """Epoch seconds (double precision) of a timestamp expression."""
    if dialect == "sqlite":
        return f"((julianday({expr}) - 2440587.5) * 86400.0)"
    return f"CAST(EXTRACT(EPOCH FROM {expr}) AS DOUBLE PRECISION)"


def render(sql: str, dialect: str) -> str:
    """Fill in the ``{epoch:EXPR}`` markers for a dialect (postgresql or sqlite)."""
    out, i = [], 0
    while True:
        j = sql.find("{epoch:", i)
        if j < 0:
            out.append(sql[i:])
            return "".join(out)
        k = sql.find("}", j)
        out += [sql[i:j], epoch_sql(sql[j + len("{epoch:"):k], dialect)]
        i = k + 1


def views_for(dialect: str) -> dict[str, str]:
    return {name: render(sql, dialect) for name, sql in VIEWS.items()}


def steady_state_query(dialect: str) -> str:
    """The steady-state SELECT with bind parameters :warmup_partitions and :warmup_seconds."""
    sql = STEADY_STATE_SELECT.replace("{K}", "CAST(:warmup_partitions AS FLOAT)").replace(
        "{S}", "CAST(:warmup_seconds AS FLOAT)")
    return render(sql, dialect)
