-- proofflow timing store, generated from proofflow/timing/models.py by
-- `python -m proofflow.timing.schema` (tests check this file is current).
-- Managed by the Alembic migrations in proofflow/timing/migrations; this file is for reference.

CREATE TABLE calibrations (
	id BIGSERIAL NOT NULL,
	host VARCHAR(255) NOT NULL,
	device VARCHAR(64) NOT NULL,
	memory_kind VARCHAR(16) NOT NULL,
	method VARCHAR(64) NOT NULL,
	bytes BIGINT NOT NULL,
	reps INTEGER NOT NULL,
	median_ms FLOAT NOT NULL,
	best_ms FLOAT,
	gbps FLOAT NOT NULL,
	batch VARCHAR(64) NOT NULL,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	CONSTRAINT pk_calibrations PRIMARY KEY (id),
	CONSTRAINT uq_calibrations_batch_size UNIQUE (host, device, memory_kind, batch, bytes)
);

CREATE INDEX ix_calibrations_host_device ON calibrations (host, device);

CREATE TABLE check_results (
	id BIGSERIAL NOT NULL,
	dag_id VARCHAR(250) NOT NULL,
	run_id VARCHAR(250) NOT NULL,
	check_name VARCHAR(64) NOT NULL,
	try_number INTEGER NOT NULL,
	success BOOLEAN NOT NULL,
	evaluated INTEGER NOT NULL,
	flagged INTEGER NOT NULL,
	result_json TEXT,
	report_dir TEXT,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	CONSTRAINT pk_check_results PRIMARY KEY (id),
	CONSTRAINT uq_check_results_attempt UNIQUE (dag_id, run_id, check_name, try_number)
);

CREATE TABLE h2d_flags (
	id BIGSERIAL NOT NULL,
	dag_id VARCHAR(250) NOT NULL,
	run_id VARCHAR(250) NOT NULL,
	partition INTEGER,
	try_number INTEGER,
	bytes BIGINT,
	measured_ms FLOAT,
	expected_ms FLOAT,
	gbps FLOAT,
	floor_gbps FLOAT,
	reason TEXT NOT NULL,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	CONSTRAINT pk_h2d_flags PRIMARY KEY (id)
);

CREATE INDEX ix_h2d_flags_run ON h2d_flags (dag_id, run_id);

CREATE TABLE report_settings (
	name VARCHAR(64) NOT NULL,
	value FLOAT NOT NULL,
	CONSTRAINT pk_report_settings PRIMARY KEY (name)
);

CREATE TABLE runs (
	dag_id VARCHAR(250) NOT NULL,
	run_id VARCHAR(250) NOT NULL,
	circuit VARCHAR(64),
	log2 INTEGER,
	partitions INTEGER,
	backend VARCHAR(16),
	staging VARCHAR(16),
	backend_requested VARCHAR(16),
	staging_requested VARCHAR(16),
	seed BIGINT,
	state VARCHAR(32) DEFAULT 'running' NOT NULL,
	started_at TIMESTAMP WITH TIME ZONE,
	finished_at TIMESTAMP WITH TIME ZONE,
	wall_s FLOAT,
	proofs_verified INTEGER,
	bundle_dir TEXT,
	host VARCHAR(255),
	curve VARCHAR(32),
	failed_task VARCHAR(250),
	failed_map_index INTEGER,
	failed_input TEXT,
	error TEXT,
	request_id VARCHAR(128),
	duplicate_of VARCHAR(250),
	CONSTRAINT pk_runs PRIMARY KEY (dag_id, run_id)
);

CREATE UNIQUE INDEX uq_runs_request ON runs (dag_id, request_id);

CREATE TABLE task_timings (
	id BIGSERIAL NOT NULL,
	run_id VARCHAR(250) NOT NULL,
	dag_id VARCHAR(250) NOT NULL,
	task_id VARCHAR(250) NOT NULL,
	map_index INTEGER DEFAULT '-1' NOT NULL,
	try_number INTEGER NOT NULL,
	partition INTEGER,
	phase VARCHAR(64) NOT NULL,
	host VARCHAR(255),
	device VARCHAR(64),
	start TIMESTAMP WITH TIME ZONE NOT NULL,
	"end" TIMESTAMP WITH TIME ZONE NOT NULL,
	duration_s FLOAT NOT NULL,
	CONSTRAINT pk_task_timings PRIMARY KEY (id),
	CONSTRAINT uq_task_timings_attempt_phase UNIQUE (dag_id, run_id, task_id, map_index, try_number, phase)
);

CREATE INDEX ix_task_timings_run ON task_timings (dag_id, run_id);

CREATE TABLE transfers (
	id BIGSERIAL NOT NULL,
	run_id VARCHAR(250) NOT NULL,
	dag_id VARCHAR(250) NOT NULL,
	task_id VARCHAR(250) NOT NULL,
	map_index INTEGER DEFAULT '-1' NOT NULL,
	partition INTEGER,
	try_number INTEGER NOT NULL,
	direction VARCHAR(16) NOT NULL,
	bytes BIGINT NOT NULL,
	memory_kind VARCHAR(16) NOT NULL,
	start TIMESTAMP WITH TIME ZONE,
	duration_s FLOAT NOT NULL,
	gbps FLOAT,
	CONSTRAINT pk_transfers PRIMARY KEY (id),
	CONSTRAINT uq_transfers_attempt_direction UNIQUE (dag_id, run_id, task_id, map_index, try_number, direction)
);

CREATE INDEX ix_transfers_run ON transfers (dag_id, run_id);

CREATE VIEW phase_spans AS
SELECT run_id, dag_id, task_id, map_index, try_number, partition, phase, host, device,
       start, "end", duration_s
FROM task_timings
WHERE task_id LIKE '%prove_gpu'
  AND phase IN ('pool_wait', 'queue_wait', 'service_start', 'key_load', 'staging_wait', 'prefetch', 'mutex_wait', 'key_upload', 'load_key', 'load', 'h2d', 'ntt', 'msm', 'd2h', 'msm_g2_wait', 'assemble', 'finalize');

CREATE VIEW device_spans AS
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
            WHEN busy_until >= "end" THEN 0 ELSE CAST(EXTRACT(EPOCH FROM "end") AS DOUBLE PRECISION) - CAST(EXTRACT(EPOCH FROM busy_until) AS DOUBLE PRECISION) END AS union_s,
       CASE WHEN kernel = 0 THEN NULL WHEN kernel_until IS NULL OR kernel_until <= start THEN start
            WHEN kernel_until >= "end" THEN "end" ELSE kernel_until END AS kernel_union_start,
       CASE WHEN kernel = 0 THEN 0 WHEN kernel_until IS NULL OR kernel_until <= start THEN duration_s
            WHEN kernel_until >= "end" THEN 0 ELSE CAST(EXTRACT(EPOCH FROM "end") AS DOUBLE PRECISION) - CAST(EXTRACT(EPOCH FROM kernel_until) AS DOUBLE PRECISION) END AS kernel_union_s
FROM covered;

CREATE VIEW run_summary AS
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
           COALESCE(r.wall_s, CAST(EXTRACT(EPOCH FROM s.last_end) AS DOUBLE PRECISION) - CAST(EXTRACT(EPOCH FROM s.first_start) AS DOUBLE PRECISION)) AS wall_s,
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
FROM base;

CREATE VIEW phase_stats_run AS
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
FROM ranked GROUP BY dag_id, run_id, task_id, phase;

CREATE VIEW phase_stats AS
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
FROM ranked GROUP BY dag_id, log2, backend, staging, task_id, phase;

CREATE VIEW h2d_partitions AS
SELECT x.dag_id, x.run_id, x.partition, x.map_index, x.try_number, x.task_id, x.bytes,
       x.duration_s * 1000.0 AS ms, x.gbps, x.memory_kind, x.start, t.host, t.device,
       CASE WHEN f.id IS NULL THEN 0 ELSE 1 END AS flagged,
       f.expected_ms, f.floor_gbps, f.reason
FROM transfers x
LEFT JOIN task_timings t ON t.dag_id = x.dag_id AND t.run_id = x.run_id AND t.task_id = x.task_id
     AND t.map_index = x.map_index AND t.try_number = x.try_number AND t.phase = 'task'
LEFT JOIN h2d_flags f ON f.dag_id = x.dag_id AND f.run_id = x.run_id AND f.partition = x.partition
     AND f.try_number = x.try_number
WHERE x.direction = 'h2d';

CREATE VIEW pool_waits AS
SELECT w.dag_id, w.run_id, w.task_id, w.map_index, w.partition, w.try_number,
       w.start AS ready_at, w."end" AS started_at, w.duration_s AS pool_wait_s, t.duration_s AS task_s,
       m.duration_s AS mutex_wait_s
FROM task_timings w
LEFT JOIN task_timings t ON t.dag_id = w.dag_id AND t.run_id = w.run_id AND t.task_id = w.task_id
     AND t.map_index = w.map_index AND t.try_number = w.try_number AND t.phase = 'task'
LEFT JOIN task_timings m ON m.dag_id = w.dag_id AND m.run_id = w.run_id AND m.task_id = w.task_id
     AND m.map_index = w.map_index AND m.try_number = w.try_number AND m.phase = 'mutex_wait'
WHERE w.task_id LIKE '%prove_gpu' AND w.phase = 'pool_wait';

CREATE VIEW gpu_partitions AS
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
       CAST(EXTRACT(EPOCH FROM COALESCE(a.busy_start, a.start)) AS DOUBLE PRECISION) - CAST(EXTRACT(EPOCH FROM r.run_start) AS DOUBLE PRECISION) AS offset_s
FROM att a
JOIN run0 r ON r.dag_id = a.dag_id AND r.run_id = a.run_id
LEFT JOIN transfers x ON x.dag_id = a.dag_id AND x.run_id = a.run_id AND x.task_id = a.task_id
     AND x.map_index = a.map_index AND x.try_number = a.try_number AND x.direction = 'h2d'
WHERE a.start IS NOT NULL;

CREATE VIEW steady_state AS
WITH g AS (
    SELECT * FROM gpu_partitions WHERE gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
), w AS (
    SELECT dag_id, run_id, MIN(gpu_start) AS window_start, MAX(gpu_end) AS window_end,
           MAX(CAST(EXTRACT(EPOCH FROM gpu_end) AS DOUBLE PRECISION)) - MIN(CAST(EXTRACT(EPOCH FROM gpu_start) AS DOUBLE PRECISION)) AS window_s
    FROM g GROUP BY dag_id, run_id
), busy AS (
    SELECT d.dag_id, d.run_id, d.device,
           SUM(CASE WHEN d.union_s = 0 OR d."end" <= w.window_start OR d.union_start >= w.window_end THEN 0
                WHEN d.union_start >= w.window_start AND d."end" <= w.window_end THEN d.union_s
                ELSE CAST(EXTRACT(EPOCH FROM CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END) AS DOUBLE PRECISION)
                     - CAST(EXTRACT(EPOCH FROM CASE WHEN d.union_start > w.window_start THEN d.union_start ELSE w.window_start END) AS DOUBLE PRECISION) END) AS busy_s,
           SUM(CASE WHEN d.kernel_union_s = 0 OR d."end" <= w.window_start OR d.kernel_union_start >= w.window_end THEN 0
                WHEN d.kernel_union_start >= w.window_start AND d."end" <= w.window_end THEN d.kernel_union_s
                ELSE CAST(EXTRACT(EPOCH FROM CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END) AS DOUBLE PRECISION)
                     - CAST(EXTRACT(EPOCH FROM CASE WHEN d.kernel_union_start > w.window_start THEN d.kernel_union_start ELSE w.window_start END) AS DOUBLE PRECISION) END) AS kernel_s
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
GROUP BY g.dag_id, g.run_id;

CREATE VIEW steady_state_devices AS
WITH g AS (
    SELECT * FROM gpu_partitions WHERE gpu_rank > (SELECT value FROM report_settings WHERE name = 'warmup_partitions') AND offset_s >= (SELECT value FROM report_settings WHERE name = 'warmup_seconds')
), w AS (
    SELECT dag_id, run_id, MIN(gpu_start) AS window_start, MAX(gpu_end) AS window_end,
           MAX(CAST(EXTRACT(EPOCH FROM gpu_end) AS DOUBLE PRECISION)) - MIN(CAST(EXTRACT(EPOCH FROM gpu_start) AS DOUBLE PRECISION)) AS window_s
    FROM g GROUP BY dag_id, run_id
), busy AS (
    SELECT d.dag_id, d.run_id, d.device,
           SUM(CASE WHEN d.union_s = 0 OR d."end" <= w.window_start OR d.union_start >= w.window_end THEN 0
                WHEN d.union_start >= w.window_start AND d."end" <= w.window_end THEN d.union_s
                ELSE CAST(EXTRACT(EPOCH FROM CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END) AS DOUBLE PRECISION)
                     - CAST(EXTRACT(EPOCH FROM CASE WHEN d.union_start > w.window_start THEN d.union_start ELSE w.window_start END) AS DOUBLE PRECISION) END) AS busy_s,
           SUM(CASE WHEN d.kernel_union_s = 0 OR d."end" <= w.window_start OR d.kernel_union_start >= w.window_end THEN 0
                WHEN d.kernel_union_start >= w.window_start AND d."end" <= w.window_end THEN d.kernel_union_s
                ELSE CAST(EXTRACT(EPOCH FROM CASE WHEN d."end" < w.window_end THEN d."end" ELSE w.window_end END) AS DOUBLE PRECISION)
                     - CAST(EXTRACT(EPOCH FROM CASE WHEN d.kernel_union_start > w.window_start THEN d.kernel_union_start ELSE w.window_start END) AS DOUBLE PRECISION) END) AS kernel_s
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
GROUP BY g.dag_id, g.run_id, g.device;
