"""A run whose task is killed from outside (SIGKILL, as the kernel's out-of-memory killer
sends it) says so (#36): its task raised nothing, yet the runs row, `proofflow summary`,
`proofflow run`'s output and --json, the report and the run's note name the kill, the task
and the partition. Under a real scheduler (LocalExecutor) the DAG's failure callback reads the
killed try's end from its log (the file here, the same through the REST API); under
`proofflow run` the command sees its run's process killed. The messages themselves:
tests/airflow/test_task_end.py."""
import json
import os
import subprocess
import sys

import pytest

import local_stack as stack

pytestmark = pytest.mark.slow

FAULT_AT = "task.synthesize.synthesis"  # a partition's synthesis, where a big partition runs out of memory


def _says_killed(error: str, partition: int) -> None:
    assert error.startswith(f"partition {partition} failed in partition.synthesize: "), error
    assert "killed (SIGKILL, exit code -9; try 1 of 1" in error, error
    assert "out-of-memory killer" in error and "PROOFFLOW_SYNTH_CONCURRENCY" in error, error


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proofflow.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def _report_text(store, run_id: str, capfd) -> str:
    from proofflow.timing.report import print_report, run_report
    capfd.readouterr()
    print_report(run_report(store, "proof_run", run_id))
    return capfd.readouterr().out


@pytest.mark.reliability
def test_a_task_killed_under_the_scheduler_is_told_everywhere(tmp_path, pg_new_database, capfd):
    from proofflow.airflow import task_end
    from proofflow.airflow.hooks.api import AirflowApi
    from proofflow.spec import RunFailure
    from proofflow.timing import TimingStore
    meta_url, timing_url = pg_new_database("airflow"), pg_new_database("timing")
    port = stack.free_port()
    marker = tmp_path / "fault-fired"
    env = stack.airflow_env(
        tmp_path / "airflow", meta_url, port, PROOFFLOW_HOME=str(tmp_path / "proofflow"),
        PROOFFLOW_DB_URL=timing_url, PROOFFLOW_RUNTIME=str(tmp_path / "rt"), PROOFFLOW_SERVICE_IDLE_S="60",
        PROOFFLOW_RETRIES="0", PROOFFLOW_BATCH_CRON="none", PROOFFLOW_FAULT=f"kill:{FAULT_AT}:{marker}",
        **stack.api_connection_env(f"http://127.0.0.1:{port}"))
    stack.proofflow_setup(env, gpu_slots=1)
    from proofflow.prover.service.client import stop_all
    try:
        with stack.running(env, tmp_path) as (base, procs):
            stack.wait("proof_run to be parsed",
                       lambda: stack.api(base, "/api/v2/dags/proof_run")["is_paused"] is False, 180, 2, procs=procs)
            run_id = stack.trigger(base, "proof_run", {"log2": 8, "partitions": 2, "backend": "cpu"})
            state, tis = stack.wait_for_run(base, "proof_run", run_id, 300, procs)
            assert state == "failed" and marker.exists()
            (killed,) = [t for t in tis if t["state"] == "failed"]
            assert (killed["task_id"], killed["try_number"]) == ("partition.synthesize", 1)
            # the try's end, as the REST API serves its log (the callback read the file here)
            log = AirflowApi(base).task_log("proof_run", run_id, killed["task_id"], 1, killed["map_index"])
            assert task_end.from_log(log).signal == 9
            store = TimingStore(timing_url)
            row = stack.wait("the failure callback's cause",
                             lambda: (r := store.run("proof_run", run_id)) and r["failed_task"] and r, 120, 2,
                             procs=procs)
            # the run's note, written by publish_summary before the cause was known, written again
            note = stack.wait("the note with the cause", lambda: "SIGKILL" in (n := stack.api(
                base, f"/api/v2/dags/proof_run/dagRuns/{run_id}")["note"] or "") and n, 60, 2, procs=procs)
    finally:
        stop_all(tmp_path / "rt")

    cause = RunFailure.from_row(row)
    assert (row["state"], cause.task_id, cause.map_index, cause.input) == ("failed", "partition.synthesize",
                                                                              killed["map_index"], None)
    _says_killed(cause.line(), killed["map_index"])
    assert f"Error: {cause.line()}" in note
    summary = _cli({**env, "PROOFFLOW_FAULT": ""}, "summary", run_id, "--json")
    assert summary.returncode == 0, summary.stderr[-3000:]
    assert json.loads(summary.stdout)["error"] == cause.line()
    assert cause.line() in _report_text(store, run_id, capfd)


def test_proofflow_run_tells_the_kill_of_its_run(tmp_path, capfd):
    """`proofflow run` runs dag.test in a child: the kill ends the child, and the command
    records the cause, cleans the run's scratch and prints it, in --json too."""
    home = tmp_path / "pf"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update(PYTHONUNBUFFERED="1", PROOFFLOW_HOME=str(home), PROOFFLOW_RETRIES="0",
               PROOFFLOW_FAULT=f"kill:{FAULT_AT}:{tmp_path / 'fault-fired'}")
    out = _cli(env, "run", "--log2", "8", "--partitions", "2", "--json")
    assert out.returncode == 1, out.stderr[-4000:]
    s = json.loads(out.stdout.strip().splitlines()[-1])
    assert s["state"] == s["airflow_state"] == "failed" and (tmp_path / "fault-fired").exists()
    partition = s["failure"]["map_index"]
    _says_killed(s["error"], partition)
    assert f"error: {s['error']}\n" in out.stderr
    assert not any((home / "scratch").rglob("*")), "the killed run's scratch was left"

    from proofflow.timing import TimingStore
    store = TimingStore(f"sqlite:///{home / 'timing.db'}")
    assert store.run("proof_run", s["run_id"])["error"] == s["failure"]["message"]
    assert s["error"] in _report_text(store, s["run_id"], capfd)
