"""CeleryExecutor routing: prove_gpu (in pool gpu) and stage (it talks to the host's prover
service) go to the GPU queue, every other task of both DAGs to the CPU queue, queue names
from the environment; a worker's identity through Airflow's hostname_callable."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dags():
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    return bag.dags


def _routes(dags) -> dict:
    return {(dag_id, t.task_id): (t.queue, t.pool) for dag_id, dag in dags.items() for t in dag.tasks}


def test_prove_gpu_and_stage_go_to_the_gpu_queue_everything_else_to_cpu(airflow_home):
    routes = _routes(_dags())
    assert routes.pop(("proof_run", "partition.prove_gpu")) == ("gpu", "gpu")
    assert routes.pop(("proof_run", "partition.stage"))[0] == "gpu"
    assert {dag_id for dag_id, _ in routes} == {"proof_run", "proof_batch"}
    assert {queue for queue, _ in routes.values()} == {"cpu"}
    assert "gpu" not in {pool for _, pool in routes.values()}


def test_queue_names_come_from_the_environment(airflow_home, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_GPU_QUEUE", "gpu-h200")
    monkeypatch.setenv("PROOFFLOW_CPU_QUEUE", "synth")
    routes = _routes(_dags())
    assert routes.pop(("proof_run", "partition.prove_gpu"))[0] == "gpu-h200"
    assert routes.pop(("proof_run", "partition.stage"))[0] == "gpu-h200"
    assert {queue for queue, _ in routes.values()} == {"synth"}


def test_worker_name_is_the_hostname_airflow_records(monkeypatch):
    from airflow.sdk.api.client import get_hostname
    from airflow.utils.net import getfqdn
    from proofflow.airflow import worker
    monkeypatch.setenv("AIRFLOW__CORE__HOSTNAME_CALLABLE", "proofflow.airflow.worker.hostname")
    monkeypatch.setenv("PROOFFLOW_WORKER_NAME", "gpu-host-3")
    assert get_hostname() == "gpu-host-3"  # what the task runner stamps on the task instance
    monkeypatch.setenv("PROOFFLOW_WORKER_NAME", " ")
    assert worker.hostname() == getfqdn()


@pytest.mark.parametrize("name", ["PROOFFLOW_GPU_QUEUE", "PROOFFLOW_CPU_QUEUE"])
def test_empty_queue_setting_keeps_the_default(monkeypatch, name):
    from proofflow import settings
    monkeypatch.setenv(name, "")
    assert (settings.current().gpu_queue, settings.current().cpu_queue) == ("gpu", "cpu")
