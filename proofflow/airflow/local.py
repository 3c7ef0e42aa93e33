"""``proofflow run``: one proof_run end to end on an embedded Airflow: a local AIRFLOW_HOME
with a SQLite metadata DB, pool ``gpu``, the ``proofflow_timing`` connection, then
``dag.test()``, which runs every task in one process: a child of the command's (``python
-m proofflow.airflow.local``), so that a run killed from outside (the kernel's out-of-memory
killer picks the process synthesizing a big partition) ends the child only, and the command
records and tells why. Nothing stays running afterwards."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from proofflow import settings, spec
from proofflow.airflow import bootstrap, task_end

DAG_ID = "proof_run"


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
    """proof_run with ``conf``, run by a child process (its output goes where this one's
    does, its result comes back in a file); a child killed by a signal leaves its run
    recorded as failed with that cause (``_ended``)."""
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="proofflow-run-") as tmp:
        result = Path(tmp) / "result.json"
        child = subprocess.Popen([sys.executable, "-m", "proofflow.airflow.local", str(result), str(log_path or "")],
                                 stdin=subprocess.PIPE)
        try:
            child.communicate(json.dumps(conf).encode())
        except BaseException:  # an interrupt reaches the child too: its own handling ends the run
            child.wait()
            raise
        out = json.loads(result.read_text()) if result.exists() else None
    if out is None and child.returncode < 0:
        return _ended(conf, started, -child.returncode)
    if out is None or "refused" in out:
        raise LocalRunError(out["refused"] if out else f"proof_run's process exited with code {child.returncode} "
                            "without a result: its error is in the log")
    return LocalRun(**out["run"])


def _ended(conf: dict, started: float, signum: int) -> LocalRun:
    """The run a child started (after ``started``) and that was killed by ``signum``: the
    task it was running (the one dag.test started last) and the run marked failed in
    Airflow, the cause recorded in the timing store; the run's scratch and staging released
    as its cleanup task would, its prover service stopped."""
    import socket
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState, State, TaskInstanceState
    from sqlalchemy import select
    from proofflow.prover import files, layout
    from proofflow.prover.service.client import stop_all
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.timing.store import open_store, resolve_url
    since = dt.datetime.fromtimestamp(started, dt.timezone.utc)
    with create_session() as session:
        dr = session.scalars(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.start_date >= since)
                             .order_by(DagRun.id.desc()).limit(1)).first()
        tis = sorted((t for t in dr.get_task_instances(session=session) if t.start_date), key=lambda t: t.start_date) \
            if dr else []
        if not tis:
            raise LocalRunError(f"proof_run's process was killed by signal {signum} before any task ran")
        ti = tis[-1]
        run_id, task_id, mi, try_number = dr.run_id, ti.task_id, ti.map_index, ti.try_number
        message = task_end.explain(task_end.TaskEnd(signal=signum), task_id, try_number, (ti.max_tries or 0) + 1,
                                   ti.hostname or socket.gethostname())
        for t in tis:
            if t.state not in State.finished:
                t.state = TaskInstanceState.FAILED
        dr.state = DagRunState.FAILED
    url = resolve_url()
    store = open_store(url)
    cause = spec.RunFailure(task_id, message, *task_end.failed_partition(conf, mi, settings.current().run_input_roots))
    task_end.record(store, DAG_ID, run_id, cause)
    store.upsert_run(DAG_ID, run_id, state="failed", finished_at=time.time())
    files.remove_tree(layout.run_dir(DAG_ID, run_id))
    SharedStaging.from_settings().release_owned(layout.run_owner(DAG_ID, run_id))
    stop_all()
    return LocalRun(run_id, "failed", url)


def _run_here(conf: dict, log_path: Path | None) -> LocalRun:
    dags = settings.current().dags_folder
    if not (dags / "proof_run.py").exists():
        raise FileNotFoundError(f"no proof_run.py in the dags folder {dags} (set PROOFFLOW_DAGS_FOLDER)")
    setup = bootstrap.setup_all(log_path=log_path)
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(str(dags))
    dag = bag.get_dag(DAG_ID)
    if dag is None:
        raise LocalRunError(f"proof_run did not load from {dags}: {bag.import_errors}")
    dr = dag.test(run_conf=conf)
    from proofflow.prover.service.client import stop_all
    stop_all()  # the run's prover service: a one-off command leaves nothing running
    return LocalRun(dr.run_id, str(getattr(dr.state, "value", dr.state)), setup["timing_url"])


def _child(argv: list[str]) -> None:
    """The child's side: the conf on stdin; the result, or why the run was refused, as JSON
    in the file ``argv[0]``. Any other error is printed, and the child exits without one."""
    from proofflow.prover import files
    result, log_path = Path(argv[0]), Path(argv[1]) if argv[1] else None
    conf = json.load(sys.stdin)
    try:
        reply = {"run": asdict(_run_here(conf, log_path))}
    except (LocalRunError, FileNotFoundError) as exc:
        reply = {"refused": str(exc)}
    files.write_json(result, reply)


if __name__ == "__main__":
    _child(sys.argv[1:])
