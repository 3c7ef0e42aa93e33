"""``proofflow run``: one proof_run end to end on an embedded Airflow: a local AIRFLOW_HOME
with a SQLite metadata DB, pool ``gpu``, the ``proofflow_timing`` connection, then
``dag.test()`` in this process. Nothing stays running afterwards."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from proofflow import settings
from proofflow.airflow import bootstrap


class LocalRunError(RuntimeError):
    """proof_run could not be loaded from the DAG files."""


@dataclass
class LocalRun:
    run_id: str
    state: str
    timing_url: str


def configure() -> Path:
    """Point this process at the embedded Airflow home, ``$PROOFFLOW_HOME/airflow`` (before
    Airflow is imported)."""
    return Path(bootstrap.configure_env()["AIRFLOW_HOME"])


def run_proof_run(conf: dict, log_path: Path | None = None) -> LocalRun:
    dags = settings.current().dags_folder
    if not (dags / "proof_run.py").exists():
        raise FileNotFoundError(f"no proof_run.py in the dags folder {dags} (set PROOFFLOW_DAGS_FOLDER)")
    setup = bootstrap.setup_all(log_path=log_path)
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(str(dags))
    dag = bag.get_dag("proof_run")
    if dag is None:
        raise LocalRunError(f"proof_run did not load from {dags}: {bag.import_errors}")
    dr = dag.test(run_conf=conf)
    from proofflow.prover.service.client import stop_all
    stop_all()  # the run's prover service: a one-off command leaves nothing running
    return LocalRun(dr.run_id, str(getattr(dr.state, "value", dr.state)), setup["timing_url"])
