"""proof_batch: on a schedule, trigger one proof_run per pending work file.

Schedule: cron from PROOFFLOW_BATCH_CRON (default every 15 minutes; ``none``: only when
triggered). Work: JSON files of
proof_run params in PROOFFLOW_PENDING (see proofflow/airflow/pending.py). UI and REST triggers of
proof_run with parameters need no batch: trigger proof_run directly.
"""
from __future__ import annotations

import datetime as dt

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, task

from proofflow import settings

deployment = settings.current()

with DAG(
    dag_id="proof_batch",
    description="Trigger proof_run for each pending work file.",
    schedule=deployment.batch_cron,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args={"queue": deployment.cpu_queue},  # CeleryExecutor: the CPU workers
    tags=["proofflow"],
    doc_md=__doc__,
) as dag:

    @task
    def claim_pending() -> list[dict]:
        from proofflow.airflow.pending import claim
        return claim()

    TriggerDagRunOperator.partial(task_id="trigger_proof_run", trigger_dag_id="proof_run",
                                  wait_for_completion=False).expand(conf=claim_pending())
