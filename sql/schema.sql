-- proofflow timing store, generated from operators/timing/models.py by
-- `python -m operators.timing.schema` (tests check this file is current).
-- Managed by the Alembic migrations in operators/timing/migrations; this file is for reference.

CREATE TABLE runs (
	dag_id VARCHAR(250) NOT NULL,
	run_id VARCHAR(250) NOT NULL,
	circuit VARCHAR(64),
	log2 INTEGER,
	partitions INTEGER,
	backend VARCHAR(16),
	staging VARCHAR(16),
	seed BIGINT,
	state VARCHAR(32) DEFAULT 'running' NOT NULL,
	started_at TIMESTAMP WITH TIME ZONE,
	finished_at TIMESTAMP WITH TIME ZONE,
	wall_s FLOAT,
	proofs_verified INTEGER,
	bundle_dir TEXT,
	host VARCHAR(255),
	CONSTRAINT pk_runs PRIMARY KEY (dag_id, run_id)
);

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
  AND phase IN ('pool_wait', 'load', 'h2d', 'ntt', 'msm', 'd2h', 'finalize');
