"""Two runs in flight through Airflow: a low-priority proof_run whose partition waits in the
prover service's queue while a high-priority run's jobs keep coming, then ``proofflow
cancel`` of it: its waiting job dropped before the device, the run marked failed as the UI
marks it (its teardowns still run, and it ends failed), its staging released and its scratch
removed, within seconds. The run's priority also moved the Airflow priority_weight of each
of its task instances, its mapped partition's included (the cluster policy,
proofflow/airflow/policy.py), a band below a high run's."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proofflow.prover.service.client import ServiceClient
from proofflow.spec import Priority
from service_inputs import Blockers

ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "proof_run"
CONF = {"log2": 8, "partitions": 1, "backend": "cpu", "priority": "low"}


def _weights(dr) -> dict:
    """Each task's priority_weight in a run (one per task: its mapped instances share it)."""
    out = {}
    for ti in dr.get_task_instances():
        out.setdefault(ti.task_id, set()).add(ti.priority_weight)
    assert all(len(w) == 1 for w in out.values()), out
    return {task: w.pop() for task, w in out.items()}


def _check_weights(low) -> None:
    """A low run's weights (dag.test created its partitions' instances as it mapped them)
    against a high run's, created as the UI's trigger creates a run."""
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.utils.session import create_session
    from airflow.utils.types import DagRunTriggeredByType
    assert {ti.map_index for ti in low.get_task_instances() if ti.task_id == "partition.prove_gpu"} == {0}
    low_weights = _weights(low)
    with create_session() as session:
        high = trigger_dag(DAG_ID, run_id=f"high-{low.run_id}", conf={**CONF, "priority": "high"},
                           triggered_by=DagRunTriggeredByType.TEST, session=session)
        high_weights = _weights(high)
        session.delete(high)  # no scheduler here: nothing would run it
    assert set(low_weights) == set(high_weights) and len(high_weights) == 11
    for task, weight in high_weights.items():
        assert weight - low_weights[task] == Priority.HIGH.weight - Priority.LOW.weight == 2000, task
    assert min(high_weights.values()) > max(low_weights.values()), "every task of the high run goes first"
    # within a run, the upstream rule's order stays: a partition's later task first
    assert low_weights["partition.prove_gpu"] > low_weights["partition.synthesize"] > low_weights["validate"]


def _until(condition, what, timeout=120.0):
    deadline = time.time() + timeout
    while not (value := condition()):
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def _running_run_id():
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select
    with create_session() as session:
        return session.scalar(select(DagRun.run_id).where(DagRun.dag_id == DAG_ID, DagRun.state == "running")
                              .order_by(DagRun.id.desc()).limit(1))


@pytest.mark.slow
def test_a_low_run_waits_behind_a_high_one_then_proofflow_cancel_drops_it(proof_run_dag, mimc8_key_dir, monkeypatch,
                                                                         tmp_path):
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    service = ServiceClient("cpu", 0)
    service.ensure_running()
    try:
        _cancel_a_waiting_low_run(service, mimc8_key_dir, url)
    finally:
        service.stop()


def _cancel_a_waiting_low_run(service, key_dir, url):
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select
    from proofflow.prover import layout
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.timing import TimingStore
    code = ("import json, sys\nfrom airflow.dag_processing.dagbag import DagBag\n"
            f"dr = DagBag({str(ROOT / 'dags')!r}).get_dag('proof_run').test(run_conf=json.loads(sys.argv[1]))\n"
            "print('STATE', dr.state)\n")
    with Blockers(key_dir) as blockers:
        _until(lambda: service.status()["busy"], "the blockers on the device")
        run = subprocess.Popen([sys.executable, "-c", code, json.dumps(CONF)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        try:
            # the run's one partition reaches prove_gpu: its low job waits behind the high ones
            _until(lambda: service.status()["queued_by_priority"].get("low") == 1 or run.poll() is not None,
                   "the run's job in the service's queue")
            run_id = _running_run_id()
            assert run.poll() is None and run_id
            # high jobs that came after it go first: the device proves them, the low job waits
            proved = blockers.proofs
            _until(lambda: blockers.proofs >= proved + 3, "high jobs overtaking the low one", timeout=30)
            assert service.status()["queued_by_priority"].get("low") == 1
            t0 = time.time()
            out = subprocess.run([sys.executable, "-m", "proofflow.cli", "cancel", run_id, "--json"],
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr[-3000:]
            done = json.loads(out.stdout)  # the one JSON object: Airflow's log lines go to stderr
            assert (done["state"], done["dropped"], done["on_device"], done["scratch_removed"]) == \
                ("running", 1, 0, True)
            log, _ = run.communicate(timeout=60)  # the run ends: its teardowns run, then it is failed
            ended = time.time() - t0
        finally:
            if run.poll() is None:
                run.kill()
        assert blockers.errors == [] and blockers.proofs > 0
    assert "STATE failed" in log, log[-3000:]
    assert ended < 30, f"the run took {ended:.1f} s to end after its cancel"
    with create_session() as session:
        dr = session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == run_id))
        states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in dr.get_task_instances()}
        _check_weights(dr)
    assert states["partition.prove_gpu"] == "failed" and states["check_h2d"] == "skipped"
    # the teardowns still ran; the last one fails the run, which the skipped check_h2d would pass
    assert (states["cleanup_scratch"], states["publish_summary"]) == ("success", "failed")
    store = TimingStore(url)
    row = store.run(DAG_ID, run_id)
    assert row["state"] == "failed" and row["failed_task"] == "cancel" and "proofflow cancel" in row["error"]
    phases = {r["phase"] for r in store.timings(DAG_ID, run_id, "partition.prove_gpu")}
    assert not phases & {"h2d", "ntt", "msm"}, "the cancelled job never reached the device"
    assert not layout.run_dir(DAG_ID, run_id).exists()
    owner = layout.run_owner(DAG_ID, run_id)
    assert [lease for lease in SharedStaging.from_settings().leases() if lease.owner.startswith(owner)] == []
    assert service.status()["jobs_cancelled"] == 1


def test_cancel_of_an_unknown_run_is_refused_with_where_it_looked(airflow_home, tmp_path):
    import os
    deployment = subprocess.run([sys.executable, "-m", "proofflow.cli", "cancel", "nope"], capture_output=True,
                                text=True, timeout=120)  # AIRFLOW_HOME set: that Airflow's metadata DB
    assert deployment.returncode == 2
    assert deployment.stderr.splitlines()[-1] == "error: no run 'nope' of proof_run in Airflow's metadata DB"
    assert deployment.stdout == "" and "Traceback" not in deployment.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    local = subprocess.run([sys.executable, "-m", "proofflow.cli", "--home", str(tmp_path / "h"), "cancel", "nope"],
                           capture_output=True, text=True, timeout=120, env=env)  # the embedded Airflow of `run`
    assert local.returncode == 2 and "`proofflow run` has made none in" in local.stderr, local.stderr
    assert not (tmp_path / "h").exists(), "nothing set up for a run that is not there"
