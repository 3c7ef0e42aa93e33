"""Why a proof run's task failed when its own code raised nothing: its process was killed
from outside (the kernel's out-of-memory killer's SIGKILL, the usual end of a partition too
big for its host), crashed, or was lost with its worker. The task cannot record that cause
itself, as it does the errors it raises (``ProofflowOperator._record_failure``); what knows
it is Airflow: the task's supervisor writes the process's exit into the try's log ("Process
terminated by signal", with the signal; "Process exited abnormally", with the exit code),
and ``proofflow run`` sees its own child's exit status. This module reads those facts
(``TaskEnd``), says what they mean with the settings that bound the memory in play
(``explain``), and records the cause into the run's ``runs`` row when none is there yet
(``record``: the first failure is the cause)."""
from __future__ import annotations

import json
import logging
import signal
from dataclasses import dataclass

from proofflow import spec

log = logging.getLogger(__name__)

# what a try's process exit looks like in its log (airflow.sdk.execution_time.supervisor)
_SIGNALLED = "Process terminated by signal"
_EXITED = "Process exited abnormally"
_SEGV = "Received SIGSEGV"
_SERVER_STOPPED = "Server indicated the task shouldn't be running anymore"
_TIMEOUT = "AirflowTaskTimeout"  # the task runner's exception past execution_timeout
_LAST_LINE_CHARS = 240

# The settings that bound the memory each task uses at once, named in an out-of-memory cause.
_RUNS = "PROOFFLOW_MAX_ACTIVE_RUNS (runs at once)"
_STAGING = "PROOFFLOW_STAGING_BUDGET (shared memory of the partitions' a/b/c in flight on a host)"
_MEMORY_SETTINGS = {
    "synthesize": ("PROOFFLOW_SYNTH_CONCURRENCY (syntheses at once in a run; unset: no limit)", _RUNS, _STAGING),
    "stage": (_STAGING, "PROOFFLOW_GPU_DEPTH (partitions in flight per device)"),
    "prove_gpu": ("PROOFFLOW_GPU_DEPTH (partitions in flight per device)",
                  "PROOFFLOW_KEY_BUDGET (memory the prover service keeps proving keys resident in)", _STAGING),
    "setup": ("PROOFFLOW_SETUP_WORKERS (processes of the CPU setup)", _RUNS),
}


@dataclass(frozen=True)
class TaskEnd:
    """How a try's process ended, as its supervisor (or ``proofflow run``) saw it: killed by
    ``signal`` (a positive number), exited with ``exit_code``, stopped by Airflow itself
    (``stopped_by_airflow``: the task instance was no longer to run, e.g. marked failed or
    its heartbeat timed out), or ran past its execution_timeout (``timed_out``; of
    ``timeout_s`` seconds, where known); none of them: its log records no end (a lost
    worker). ``raised``: the exception the task runner logged (type: value), where the task
    itself failed; ``last_line``: the task's last log line; ``log_read``: False where its log
    could not be read."""
    signal: int | None = None
    exit_code: int | None = None
    stopped_by_airflow: bool = False
    timed_out: bool = False
    last_line: str | None = None
    timeout_s: float | None = None
    raised: str | None = None
    log_read: bool = True


def _event(record) -> str:
    return str(record.get("event", "")) if isinstance(record, dict) else str(record)


def _raised(fields: dict) -> str | None:
    """The exception of a task runner's "Task failed with exception" record: type: value."""
    detail = fields.get("error_detail")
    if not (isinstance(detail, list) and detail and isinstance(detail[0], dict)):
        return None
    return f"{detail[0].get('exc_type')}: {detail[0].get('exc_value')}"[:_LAST_LINE_CHARS]


def _own(logger, event: str) -> bool:
    """A line of the task's own (its code's logs, its prints), not of Airflow's task runner
    (logger ``task``: its start-up, its ``::group::`` markers) or Airflow's modules."""
    return bool(event.strip()) and not event.startswith("::") and \
        not (logger in ("task", "supervisor") or str(logger or "").startswith("airflow"))


def from_log(records) -> TaskEnd:
    """The end of a try from its log's records: dicts (the structured log, a file's JSON
    lines or the REST API's content) or plain lines; None: no log to read."""
    if records is None:
        return TaskEnd(log_read=False)
    sig = code = raised = last = None
    stopped = False
    for record in records:
        event = _event(record)
        fields = record if isinstance(record, dict) else {}
        if event.startswith(_SIGNALLED) and isinstance(fields.get("signal"), int):
            sig = abs(fields["signal"])
        elif event.startswith(_EXITED) and isinstance(fields.get("exit_code"), int):
            code = fields["exit_code"]
        elif _SEGV in event:
            sig = signal.SIGSEGV.value
        elif event.startswith(_SERVER_STOPPED):
            stopped = True
        else:
            raised = _raised(fields) or raised
            if _own(fields.get("logger"), event):
                last = event.strip().splitlines()[-1][:_LAST_LINE_CHARS]
    timed_out = bool(raised and raised.startswith(f"{_TIMEOUT}:"))
    return TaskEnd(sig, code, stopped, timed_out, last, raised=None if timed_out else raised)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def explain(end: TaskEnd, task_id: str, try_number: int, tries: int | None = None, host: str | None = None) -> str:
    """The cause of a run's failure (``spec.RunFailure.message``) for a task whose process
    ended as ``end`` on its try ``try_number`` (of ``tries``), on ``host``."""
    task = task_id.rsplit(".", 1)[-1]
    on = f" on {host}" if host else ""
    attempt = f"try {try_number}" + (f" of {tries}" if tries else "")
    if end.timed_out:
        limit = f" of {end.timeout_s:g} s" if end.timeout_s else ""
        what = (f"the task ran past its execution_timeout{limit} and was stopped ({attempt}{on}): raise the "
                "task's execution_timeout, or give it a smaller partition (log2)")
    elif end.stopped_by_airflow:  # its SIGTERM, escalated to SIGKILL if ignored
        what = (f"Airflow stopped the task's process ({attempt}{on}): its task instance was no longer to run "
                "(marked failed or cleared from the UI or the REST API, or its heartbeat timed out: "
                "[scheduler] task_instance_heartbeat_timeout)")
    elif end.signal == signal.SIGKILL:
        bounds = _MEMORY_SETTINGS.get(task, (_RUNS,))
        what = (f"the task's process was killed (SIGKILL, exit code -9; {attempt}{on}). The kernel's out-of-memory "
                f"killer (or a container's memory limit) does this when the host runs out of memory: see `dmesg` "
                f"or `journalctl -k`{on} for 'Out of memory: Killed process'. To use less memory at once, lower "
                f"{', '.join(bounds)}, or the partition size (log2); or give the host more memory")
    elif end.signal == signal.SIGBUS:
        what = (f"the task's process was killed by SIGBUS (exit code -{end.signal}; {attempt}{on}): a memory-mapped "
                "file could not be backed, usually because shared memory (/dev/shm: the shared staging, "
                "PROOFFLOW_SHARED_STAGING) or its disk is full: lower PROOFFLOW_STAGING_BUDGET or make /dev/shm "
                "larger")
    elif end.signal == signal.SIGSEGV:
        what = (f"the task's process crashed (SIGSEGV, exit code -{end.signal}; {attempt}{on}): a fault in native "
                "code (the CPU kernels, CuPy or the driver); PYTHONFAULTHANDLER=1 in the worker's environment "
                "prints where")
    elif end.signal is not None:
        name = _signal_name(end.signal)
        what = (f"the task's process was killed by {name} (exit code -{end.signal}; {attempt}{on}), sent from "
                "outside the task (a worker shut down, an operator or the host)")
    elif end.exit_code is not None:
        what = (f"the task's process exited with code {end.exit_code} without reporting an error ({attempt}{on})")
    elif end.raised:
        what = f"{end.raised} ({attempt}{on})"
    elif not end.log_read:
        what = (f"Airflow marked the task failed ({attempt}{on}), and its log could not be read here to tell why "
                "(no log file on this host, no answer through the connection proofflow_airflow_api): see the "
                "try's log in the UI")
    else:
        what = (f"Airflow marked the task failed, but its log records no end of its process ({attempt}{on}): its "
                "worker was lost, or the task's heartbeat timed out ([scheduler] task_instance_heartbeat_timeout)")
    return what + (f"; its last log line: {end.last_line}" if end.last_line and not end.raised else "")


def record(store, dag_id: str, run_id: str, failure: spec.RunFailure) -> bool:
    """``failure`` as the run's cause, with the run marked failed, unless the run succeeded
    or a cause is there already (the first failure is the cause). True: recorded."""
    row = store.run(dag_id, run_id) or {}
    if row.get("state") == "success" or spec.RunFailure.from_row(row) is not None:
        return False
    store.upsert_run(dag_id, run_id, state="failed", **failure.columns())
    return True


def failed_partition(conf: dict | None, map_index: int | None, roots) -> tuple[int | None, str | None]:
    """The partition, and how its input is named (``spec.input_label``), that a run's failure
    at a task of map index ``map_index`` names, from the run's conf as ``validate`` resolves
    it: the map index itself where a chunk is one partition (the default); (None, None) for
    a task of the whole run, or a chunk of several partitions (which one failed is recorded
    by the task itself, where it could write it)."""
    if map_index is None or map_index < 0:
        return None, None
    if not isinstance(conf, dict):
        return map_index, None
    if conf.get("partitions_per_task", 1) != 1:
        return None, None
    if not conf.get("inputs"):
        return map_index, None
    try:
        inputs = spec.validate_params(conf, gpu_available=lambda: True, input_roots=roots).inputs
    except spec.InvalidParams:
        return map_index, None
    return map_index, spec.input_label(inputs[map_index], roots) if inputs and map_index < len(inputs) else None


def attempt_log(dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> list | None:
    """The records of a try's log: the file where this host has it (Airflow's
    base_log_folder), else through the REST API (connection proofflow_airflow_api), which
    reads it wherever the try ran; None: neither has it."""
    from types import SimpleNamespace
    from pathlib import Path
    from airflow.configuration import conf
    import jinja2
    ti = SimpleNamespace(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index, try_number=try_number)
    try:
        name = jinja2.Template(conf.get("logging", "log_filename_template")).render(ti=ti, try_number=try_number)
        text = (Path(conf.get("logging", "base_log_folder")) / name).read_text(errors="replace")
        return [_parse(line) for line in text.splitlines() if line.strip()]
    except (OSError, jinja2.TemplateError, ValueError) as exc:
        log.info("no local log of %s try %s: %s", task_id, try_number, exc)
    from proofflow.airflow.hooks.api import AirflowApiHook
    try:
        return AirflowApiHook().get_conn().task_log(dag_id, run_id, task_id, try_number, map_index)
    except Exception as exc:  # no connection, or no answer: the cause is told without the log
        log.warning("could not read the log of %s try %s through the REST API: %s", task_id, try_number, exc)
        return None


def _parse(line: str):
    try:
        return json.loads(line)
    except ValueError:
        return line
