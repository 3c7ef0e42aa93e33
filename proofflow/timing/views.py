"""SQL views over the timing tables: ``phase_spans`` (migration 0002) and the reporting views
of migrations 0003-0006, listed in ``sql/schema.sql`` (Postgres text) and behind ``proofflow report``.

One SQL text per view serves Postgres and SQLite; the only dialect-specific piece is turning
a timestamp into epoch seconds (``{epoch:...}``), filled in by ``views_for(dialect)``.

A device's busy time is the union of its device-phase spans (h2d, ntt, msm, d2h of every
prove_gpu attempt), never their sum: the prover service uploads the next proof while the
device computes the one before, so spans of one device overlap, and a sum counts the overlap
twice (a steady state read 100.1% busy). A busy fraction is busy time over wall time per
device, so it never exceeds 1.

    device_spans      one row per device phase of a prove_gpu attempt, and its piece of its
                      device's busy time in the run: union_start..end, union_s seconds (the
                      part no earlier span of the device covered; 0 when covered); the same
                      over the kernels alone (kernel_union_start, kernel_union_s; ntt and msm)
    run_summary       one row per run: wall time, partitions, proofs verified, the backend and
                      staging that ran and those asked for, devices, busy time (the union of the
                      device spans, per device, summed over the devices), GPU slot time
                      (prove_gpu task rows), pool wait, busy fraction (busy / wall / devices),
                      flagged partitions
    phase_stats_run   per run, task and phase: count, total, mean, p50, p95, max (seconds)
    phase_stats       the same across runs, per (dag, log2, backend, staging, task, phase)
    h2d_partitions    one row per H2D transfer: bytes, ms, GB/s, memory kind, host, device,
                      flagged by check_h2d (and why, with the expected ms and the floor)
    pool_waits        per prove_gpu attempt: ready at, started at, pool wait, task seconds,
                      mutex wait (waiting in the prover service for the device)
    gpu_partitions    per prove_gpu attempt, in device order: device, device span (first device
                      phase's start to last one's end), rank, offset from the run's start,
                      slot/busy/kernel/h2d/pool-wait/mutex-wait/barrier-wait seconds (busy: the
                      attempt's own device phases, which never overlap each other), H2D bytes
    steady_state      per run, the attempts after the warm-up (the first ``warmup_partitions``
                      attempts and those starting in the first ``warmup_seconds`` are left out;
                      both from table ``report_settings``): partitions, devices, window (first
                      device span's start to the last one's end), busy seconds (the union of
                      the run's device spans on each of those devices, clipped to the window:
                      a warm-up proof still computing when the window opens counts), busy
                      fraction (busy / window / devices), kernel busy fraction (the same over
                      ntt+msm only, no transfers), seconds per partition, mean
                      pool/mutex/barrier waits, H2D GB/s
    steady_state_devices  the same window, per device: busy seconds, busy and kernel fractions

Percentiles are nearest-rank (the smallest value whose rank r satisfies r >= p * n), computed
with window functions, so Postgres and SQLite give the same figures.
"""
from __future__ import annotations

from proofflow import phases

PROVE_PHASES = phases.sql_list(phases.PROVE_PHASES)

PHASE_SPANS = """CREATE VIEW phase_spans AS
SELECT run_id, dag_id, task_id, map_index, try_number, partition, phase, host, device,
       start, "end", duration_s
FROM task_timings
WHERE task_id LIKE '%prove_gpu'
  AND phase IN PROVE_PHASES""".replace("PROVE_PHASES", PROVE_PHASES)

GPU_PHASES = phases.sql_list(phases.DEVICE_PHASES)
KERNEL_PHASES = phases.sql_list(phases.KERNEL_PHASES)

# The union of intervals in SQL both dialects run: in start order, each span keeps only its
# part after the latest end among the spans before it on its device. The kept parts are
# disjoint and cover the union, so their seconds sum to the busy time and, clipped to a window,
# to the busy time inside it. A span nothing overlaps keeps its duration_s (no epoch
# arithmetic: SQLite's is to the millisecond).
DEVICE_SPANS = """CREATE VIEW device_spans AS
WITH spans AS (
    SELECT id, dag_id, run_id, task_id, map_index, try_number, partition, device, phase, start, "end", duration_s,
           CASE WHEN phase IN KERNEL_PHASES THEN 1 ELSE 0 END AS kernel
    FROM task_timings
    WHERE task_id LIKE '%prove_gpu' AND phase IN GPU_PHASES
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
FROM covered""".replace("KERNEL_PHASES", KERNEL_PHASES).replace("GPU_PHASES", GPU_PHASES)

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
       w.start AS ready_at, w."end" AS started_at, w.duration_s AS pool_wait_s, t.duration_s AS task_s,
       m.duration_s AS mutex_wait_s
FROM task_timings w
LEFT JOIN task_timings t ON t.dag_id = w.dag_id AND t.run_id = w.run_id AND t.task_id = w.task_id
     AND t.map_index = w.map_index AND t.try_number = w.try_number AND t.phase = 'task'
LEFT JOIN task_timings m ON m.dag_id = w.dag_id AND m.run_id = w.run_id AND m.task_id = w.task_id
     AND m.map_index = w.map_index AND m.try_number = w.try_number AND m.phase = 'mutex_wait'
WHERE w.task_id LIKE '%prove_gpu' AND w.phase = 'pool_wait'"""

# A GPU attempt's device span: its first device phase's start to its last one's end (the
# task's own span when it has none). With the prover service a task waits while others'
# device work runs, so the device spans, not the tasks', order the GPU's work.
GPU_PARTITIONS = """CREATE VIEW gpu_partitions AS
WITH att AS (
    SELECT dag_id, run_id, task_id, map_index, try_number, MAX(partition) AS partition, MAX(device) AS device,
           MIN(CASE WHEN phase = 'task' THEN start END) AS start,
           MAX(CASE WHEN phase = 'task' THEN "end" END) AS "end",
           MIN(CASE WHEN phase IN GPU_PHASES THEN start END) AS busy_start,
           MAX(CASE WHEN phase IN GPU_PHASES THEN "end" END) AS busy_end,
           SUM(CASE WHEN phase = 'task' THEN duration_s ELSE 0 END) AS slot_s,
           SUM(CASE WHEN phase IN GPU_PHASES THEN duration_s ELSE 0 END) AS busy_s,
           SUM(CASE WHEN phase IN KERNEL_PHASES THEN duration_s ELSE 0 END) AS kernel_s,
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
WHERE a.start IS NOT NULL""".replace("GPU_PHASES", GPU_PHASES).replace("KERNEL_PHASES", KERNEL_PHASES)

# The steady-state query, once: the view reads the warm-up from report_settings, the report
# CLI binds its own (--warmup-partitions / --warmup-seconds) into the same text. Busy time
# per device with a steady attempt: its union pieces (device_spans) clipped to the window.


def _clipped(start: str, seconds: str) -> str:
    """The seconds of device_spans d's piece ``start``..end inside window w."""
    return (f"""CASE WHEN d.{seconds} = 0 OR d."end" <= w.window_start OR d.{start} >= w.window_end THEN 0
                WHEN d.{start} >= w.window_start AND d."end" <= w.window_end THEN d.{seconds}
                ELSE {{epoch:CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END}}
                     - {{epoch:CASE WHEN d.{start} > w.window_start THEN d.{start} ELSE w.window_start END}} END""")


_STEADY_WITH = f"""WITH g AS (
    SELECT * FROM gpu_partitions WHERE gpu_rank > {{K}} AND offset_s >= {{S}}
), w AS (
    SELECT dag_id, run_id, MIN(gpu_start) AS window_start, MAX(gpu_end) AS window_end,
           MAX({{epoch:gpu_end}}) - MIN({{epoch:gpu_start}}) AS window_s
    FROM g GROUP BY dag_id, run_id
), busy AS (
    SELECT d.dag_id, d.run_id, d.device,
           SUM({_clipped("union_start", "union_s")}) AS busy_s,
           SUM({_clipped("kernel_union_start", "kernel_union_s")}) AS kernel_s
    FROM device_spans d
    JOIN w ON w.dag_id = d.dag_id AND w.run_id = d.run_id
    JOIN (SELECT DISTINCT dag_id, run_id, device FROM g) gd
      ON gd.dag_id = d.dag_id AND gd.run_id = d.run_id AND gd.device = d.device
    GROUP BY d.dag_id, d.run_id, d.device
)"""
# busy / (window x devices): the mean busy fraction of the devices the run used.
STEADY_STATE_SELECT = _STEADY_WITH + """, per_run AS (
    SELECT dag_id, run_id, SUM(busy_s) AS busy_s, SUM(kernel_s) AS kernel_s FROM busy GROUP BY dag_id, run_id
)
SELECT g.dag_id, g.run_id, {K} AS warmup_partitions, {S} AS warmup_seconds,
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
# The same window per device: each device's busy fraction over the run's steady window.
STEADY_STATE_DEVICES_SELECT = _STEADY_WITH + """
SELECT g.dag_id, g.run_id, g.device, COUNT(*) AS partitions, MAX(w.window_s) AS window_s,
       COALESCE(MAX(b.busy_s), 0) AS gpu_busy_s,
       COALESCE(MAX(b.busy_s), 0) / NULLIF(MAX(w.window_s), 0) AS gpu_busy_fraction,
       COALESCE(MAX(b.kernel_s), 0) / NULLIF(MAX(w.window_s), 0) AS kernel_busy_fraction
FROM g
JOIN w ON w.dag_id = g.dag_id AND w.run_id = g.run_id
LEFT JOIN busy b ON b.dag_id = g.dag_id AND b.run_id = g.run_id AND b.device = g.device
GROUP BY g.dag_id, g.run_id, g.device"""
_SETTING = "(SELECT value FROM report_settings WHERE name = '{}')"


def _with_settings(sql: str) -> str:
    return sql.replace("{K}", _SETTING.format("warmup_partitions")).replace("{S}", _SETTING.format("warmup_seconds"))


STEADY_STATE = "CREATE VIEW steady_state AS\n" + _with_settings(STEADY_STATE_SELECT)
STEADY_STATE_DEVICES = "CREATE VIEW steady_state_devices AS\n" + _with_settings(STEADY_STATE_DEVICES_SELECT)

# Order matters: a view after those it reads.
VIEWS = {
    "phase_spans": PHASE_SPANS,
    "device_spans": DEVICE_SPANS,
    "run_summary": RUN_SUMMARY,
    "phase_stats_run": PHASE_STATS_RUN,
    "phase_stats": PHASE_STATS,
    "h2d_partitions": H2D_PARTITIONS,
    "pool_waits": POOL_WAITS,
    "gpu_partitions": GPU_PARTITIONS,
    "steady_state": STEADY_STATE,
    "steady_state_devices": STEADY_STATE_DEVICES,
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


def _bound(select: str, dialect: str) -> str:
    return render(select.replace("{K}", "CAST(:warmup_partitions AS FLOAT)").replace(
        "{S}", "CAST(:warmup_seconds AS FLOAT)"), dialect)


def steady_state_query(dialect: str) -> str:
    """The steady-state SELECT with bind parameters :warmup_partitions and :warmup_seconds."""
    return _bound(STEADY_STATE_SELECT, dialect)


def steady_state_devices_query(dialect: str) -> str:
    """The per-device steady-state SELECT, with the same bind parameters."""
    return _bound(STEADY_STATE_DEVICES_SELECT, dialect)
