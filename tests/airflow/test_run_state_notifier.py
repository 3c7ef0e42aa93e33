"""The DAG's failure callback, RunStateNotifier, as dag.test() (`proofflow run`) calls it:
with the serialized DAG, which has no template environment (Airflow 3.3 raised AttributeError
there on every failed run). Through dag.test: tests/airflow/test_dag_proof_run.py; in a real
scheduler's dag processor: tests/airflow/test_scheduler_run.py."""
from __future__ import annotations

import datetime

from airflow.sdk import DAG
from airflow.serialization.serialized_objects import DagSerialization

from proofflow.airflow.notifications.run_state import RunStateNotifier


def _serialized_dag():
    with DAG("proof_run_like", schedule=None, start_date=datetime.datetime(2026, 1, 1)) as dag:
        pass
    return DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))


def test_failure_callback_with_the_serialized_dag_marks_the_run(store_url, monkeypatch):
    from proofflow.timing import TimingStore
    monkeypatch.setenv("PROOFFLOW_DB_URL", store_url)
    store = TimingStore(store_url)
    store.upsert_run("proof_run_like", "r-1", state="running")
    RunStateNotifier("failed")({"dag": _serialized_dag(), "run_id": "r-1"})
    assert store.run("proof_run_like", "r-1")["state"] == "failed"
