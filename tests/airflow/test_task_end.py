"""How a task's try ended when its code raised nothing (proofflow.airflow.task_end): read
from records shaped as Airflow 3's supervisor and task runner write them (the lines below
are copied from a real try's log), told with the settings that matter, recorded as the run's
cause only where none is. Through a real scheduler and `proofflow run`:
tests/airflow/test_killed_task_cause.py."""
import json
import re
import signal
import types

import pytest

from proofflow import settings
from proofflow.airflow import task_end
from proofflow.spec import RunFailure

START = [{"level": "info", "event": "::group::Pre Execute", "logger": "task"},
         {"level": "info", "event": "DAG bundles loaded: dags-folder", "try_number": 1,
          "logger": "airflow.dag_processing.bundles.manager.DagBundlesManager"},
         {"level": "info", "event": "::endgroup::", "logger": "task"}]
OWN = {"level": "info", "event": "synthesizing partition 3", "logger": "proofflow.prover.pipeline"}


def _signalled(number: int) -> dict:
    return {"level": "critical", "event": "Process terminated by signal. Likely out of memory error (OOM). For more "
            "information, see https://airflow.apache.org/docs/apache-airflow/stable/troubleshooting.html"
            "#process-terminated-by-signal.", "signal": -number, "signal_name": signal.Signals(number).name,
            "logger": "task"}


def _raised(exc_type: str, value: str) -> dict:
    return {"level": "error", "event": "Task failed with exception", "logger": "task",
            "error_detail": [{"exc_type": exc_type, "exc_value": value, "frames": []},
                             {"exc_type": "KeyError", "exc_value": "'cause'", "frames": []}]}


def _declared(message: str) -> set[str]:
    """The PROOFFLOW_ variables a message names, each a declared setting."""
    named = set(re.findall(r"PROOFFLOW_[A-Z0-9_]+", message))
    assert named <= {o.env for o in settings.OPTIONS}, named - {o.env for o in settings.OPTIONS}
    return named


def test_a_sigkill_is_told_as_the_out_of_memory_killer_with_the_task_s_memory_settings():
    end = task_end.from_log([*START, OWN, _signalled(9)])
    assert end == task_end.TaskEnd(signal=9, last_line="synthesizing partition 3")
    text = task_end.explain(end, "partition.synthesize", 1, 1, "gpu-host-2")
    assert text.startswith("the task's process was killed (SIGKILL, exit code -9; try 1 of 1 on gpu-host-2)")
    assert "out-of-memory killer" in text and "`dmesg`" in text and "on gpu-host-2 for 'Out of memory" in text
    assert text.endswith("; its last log line: synthesizing partition 3")
    assert _declared(text) == {"PROOFFLOW_SYNTH_CONCURRENCY", "PROOFFLOW_MAX_ACTIVE_RUNS", "PROOFFLOW_STAGING_BUDGET"}
    assert {"PROOFFLOW_GPU_DEPTH", "PROOFFLOW_KEY_BUDGET"} <= _declared(
        task_end.explain(end, "partition.prove_gpu", 2, 2))
    assert _declared(task_end.explain(end, "setup", 1)) == {"PROOFFLOW_SETUP_WORKERS", "PROOFFLOW_MAX_ACTIVE_RUNS"}


def test_airflow_s_own_lines_are_never_the_last_line():
    assert task_end.from_log([*START, _signalled(9)]).last_line is None


@pytest.mark.parametrize("number, says", [
    (signal.SIGTERM, "killed by SIGTERM (exit code -15; try 1 of 2)"),
    (signal.SIGSEGV, "crashed (SIGSEGV, exit code -11; try 1 of 2)"),
    (signal.SIGBUS, "killed by SIGBUS (exit code -7; try 1 of 2)"),
])
def test_other_signals_are_not_told_as_out_of_memory(number, says):
    end = task_end.from_log([*START, _signalled(number)])
    assert end.signal == number
    text = task_end.explain(end, "partition.stage", 1, 2)
    assert says in text and "out-of-memory" not in text
    if number == signal.SIGBUS:  # a full /dev/shm: the shared staging's budget
        assert "/dev/shm" in text and "PROOFFLOW_STAGING_BUDGET" in _declared(text)


def test_a_segfault_in_the_supervisor_s_words():
    segv = {"level": "critical", "event": "\n****** Received SIGSEGV ******\nSIGSEGV (Segmentation Violation) ...",
            "logger": "task"}
    assert task_end.from_log([*START, segv]).signal == signal.SIGSEGV


def test_a_process_stopped_by_airflow_is_not_an_out_of_memory_kill():
    """The supervisor escalates to SIGKILL when its SIGTERM is not obeyed: Airflow killed it."""
    stopped = [{"level": "error", "event": "Server indicated the task shouldn't be running anymore. Terminating "
                "process", "detail": {"reason": "not_running"}, "logger": "task"},
               {"level": "error", "event": "Task killed!", "logger": "task"}, _signalled(9)]
    end = task_end.from_log([*START, *stopped])
    text = task_end.explain(end, "partition.synthesize", 1, 1)
    assert end.stopped_by_airflow and text.startswith("Airflow stopped the task's process (try 1 of 1)")
    assert "out-of-memory" not in text and "heartbeat" in text


def test_an_exit_code_a_timeout_an_error_and_no_end():
    exited = {"level": "warning", "event": "Process exited abnormally", "exit_code": 3, "logger": "task"}
    assert task_end.explain(task_end.from_log([*START, exited]), "finalize_run", 1, 1) == \
        "the task's process exited with code 3 without reporting an error (try 1 of 1)"

    timed_out = task_end.from_log([*START, OWN, _raised("AirflowTaskTimeout", "Timeout, PID: 4242")])
    assert timed_out.timed_out and timed_out.raised is None
    text = task_end.explain(timed_out, "partition.prove_gpu", 2, 2, "h")
    assert text.startswith("the task ran past its execution_timeout and was stopped (try 2 of 2 on h)")
    assert "execution_timeout of 90 s" in task_end.explain(task_end.TaskEnd(timed_out=True, timeout_s=90.0),
                                                           "setup", 1)

    raised = task_end.from_log([*START, _raised("OSError", "[Errno 28] No space left on device")])
    assert task_end.explain(raised, "setup", 1, 1) == "OSError: [Errno 28] No space left on device (try 1 of 1)"

    lost = task_end.explain(task_end.from_log([*START, OWN]), "partition.stage", 1, 1)
    assert "records no end of its process" in lost and "heartbeat" in lost and "synthesizing partition 3" in lost
    unread = task_end.explain(task_end.from_log(None), "partition.stage", 1, 1)
    assert "could not be read" in unread and "proofflow_airflow_api" in unread


def test_the_log_file_where_airflow_writes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LOGGING__BASE_LOG_FOLDER", str(tmp_path))
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API", "")
    path = tmp_path / "dag_id=proof_run" / "run_id=r 1" / "task_id=partition.synthesize" / "map_index=3" / "attempt=2.log"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(r) for r in [*START, OWN, _signalled(9)]) + "\nnot json\n")
    records = task_end.attempt_log("proof_run", "r 1", "partition.synthesize", 3, 2)
    assert records[-1] == "not json" and task_end.from_log(records).signal == 9
    assert task_end.attempt_log("proof_run", "r 1", "partition.synthesize", 3, 1) is None  # no file, no API


def test_the_first_cause_is_the_run_s_and_a_success_stands(tmp_path):
    from proofflow.timing import TimingStore
    store = TimingStore(f"sqlite:///{tmp_path / 'timing.db'}")
    store.upsert_run("proof_run", "r", state="running")
    killed = RunFailure("partition.synthesize", "the task's process was killed", 2, "inputs/x.json")
    assert task_end.record(store, "proof_run", "r", killed)
    assert not task_end.record(store, "proof_run", "r", RunFailure("cleanup_scratch", "later"))
    row = store.run("proof_run", "r")
    assert row["state"] == "failed" and RunFailure.from_row(row) == killed
    store.upsert_run("proof_run", "ok", state="success")
    assert not task_end.record(store, "proof_run", "ok", killed)
    assert store.run("proof_run", "ok")["state"] == "success" and store.run("proof_run", "ok")["failed_task"] is None


def test_a_failed_partition_and_its_input_as_validate_resolves_the_run_s_conf(tmp_path, monkeypatch):
    circuits, inputs = tmp_path / "circuits", tmp_path / "in" / "batch"
    (circuits / "demo").mkdir(parents=True)
    (circuits / "demo" / "circuit.json").write_text(json.dumps({"name": "demo", "log2": 8, "wasm": "demo.wasm"}))
    inputs.mkdir(parents=True)
    for name in ("b.json", "a.json", "notes.txt"):
        (inputs / name).write_text("{}")
    monkeypatch.setenv("PROOFFLOW_CIRCUITS", str(circuits))
    roots = (tmp_path / "in",)
    conf = {"circuit": "demo", "inputs": str(inputs)}
    assert [task_end.failed_partition(conf, i, roots) for i in (0, 1, 2, -1)] == [
        (0, "batch/a.json"), (1, "batch/b.json"), (2, None), (None, None)]
    assert task_end.failed_partition({"circuit": "demo", "inputs": [{"x": 1}]}, 0, roots) == (0, "inline")
    assert task_end.failed_partition({"log2": 8}, 3, roots) == (3, None)  # a built-in circuit: no input
    assert task_end.failed_partition({"circuit": "demo", "inputs": "/elsewhere"}, 0, roots) == (0, None)
    # a chunk of several partitions: which one failed, only the task itself can tell
    assert task_end.failed_partition({**conf, "partitions_per_task": 2}, 0, roots) == (None, None)


def test_the_notifier_records_the_cause_of_a_killed_task(tmp_path, monkeypatch):
    """RunStateNotifier with the context Airflow gives a DAG's failure callback: the task
    instance that failed the run, whose try's log says SIGKILL."""
    from proofflow.airflow.notifications.run_state import RunStateNotifier
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    monkeypatch.setattr(task_end, "attempt_log", lambda *key: [*START, _signalled(9)] if key == (
        "proof_run", "r", "partition.synthesize", 1, 1) else None)
    store = TimingStore(url)
    store.upsert_run("proof_run", "r", state="running")
    ti = types.SimpleNamespace(task_id="partition.synthesize", map_index=1, try_number=1, hostname="w1",
                               task=types.SimpleNamespace(retries=0))
    dag_run = types.SimpleNamespace(dag_id="proof_run", run_id="r", conf={"log2": 8, "partitions": 2})
    RunStateNotifier("failed").notify({"dag_run": dag_run, "ti": ti})
    cause = RunFailure.from_row(store.run("proof_run", "r"))
    assert (cause.task_id, cause.map_index, cause.input) == ("partition.synthesize", 1, None)
    assert cause.message.startswith("the task's process was killed (SIGKILL, exit code -9; try 1 of 1 on w1)")


def test_a_task_past_its_execution_timeout_records_a_timeout(tmp_path, monkeypatch):
    """The task runner's alarm raises AirflowTaskTimeout (a BaseException) inside execute:
    the operator records the timeout as the cause, and the exception goes on."""
    import datetime as dt
    from airflow.sdk.exceptions import AirflowTaskTimeout
    from proofflow.airflow.operators.proof import ProofflowOperator
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)

    class Slow(ProofflowOperator):
        def run(self, context, rec):
            raise AirflowTaskTimeout("Timeout, PID: 4242")

    op = Slow(task_id="setup", retries=1, execution_timeout=dt.timedelta(seconds=90))
    ti = types.SimpleNamespace(dag_id="proof_run", run_id="r", task_id="setup", map_index=-1, try_number=2,
                               hostname="w1", start_date=None)
    with pytest.raises(AirflowTaskTimeout):
        op.execute.__wrapped__(op, {"ti": ti})
    cause = RunFailure.from_row(TimingStore(url).run("proof_run", "r"))
    assert cause.task_id == "setup" and cause.message.startswith(
        "the task ran past its execution_timeout of 90 s and was stopped (try 2 of 2 on w1)")
