"""SQL views over the timing tables, created by migration 0002 and listed in schema.sql."""

PHASE_SPANS = """CREATE VIEW phase_spans AS
SELECT run_id, dag_id, task_id, map_index, try_number, partition, phase, host, device,
       start, "end", duration_s
FROM task_timings
WHERE task_id LIKE '%prove_gpu'
  AND phase IN ('pool_wait', 'load', 'h2d', 'ntt', 'msm', 'd2h', 'finalize')"""

VIEWS = {"phase_spans": PHASE_SPANS}
