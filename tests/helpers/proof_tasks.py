"""proof_run's operators driven one task attempt at a time, outside Airflow, for the
fault-injection and bad-input tests: they need hundreds of attempts, and an Airflow task
process costs seconds to start. The operators, the prover service, the scratch files and the
timing store are the real ones; what stands in for Airflow is the task context (the ids a
task instance carries) and XCom (each successful attempt's return value, in a JSON file).

An attempt runs in a child forked from a fork server that imported everything beforehand,
so a kill costs milliseconds; like Airflow, an attempt counts only when its process exits
0 (a child killed after its work still failed), and a retry runs under the next try number.
"""
from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from proofflow import settings

DAG_ID = "proof_run"
PARTITION_TASKS = ("partition.synthesize", "partition.stage", "partition.prove_gpu", "partition.finalize_partition")
# The phases each task records on success (prove_gpu through the service: the once-only ones,
# service_start, key_load and key_upload, come on top when that attempt paid them).
PHASES = {
    "validate": {"task", "validate"},
    "setup": {"task", "lock_wait"},  # plus load_cached, or setup and save
    "prepare_scratch": {"task", "prepare"},
    "partition.synthesize": {"task", "synthesis", "staging_wait", "witness_map"},
    "partition.stage": {"task", "register"},
    "partition.prove_gpu": {"task", "pool_wait", "prefetch", "mutex_wait", "h2d", "ntt", "msm", "assemble",
                            "finalize"},
    "partition.finalize_partition": {"task", "verify", "publish"},
    "finalize_run": {"task", "manifest", "verify", "summary", "cleanup"},
    "cleanup_scratch": {"task", "cleanup"},
}
# A retry that found its work already done: prove_gpu's proof written, finalize_run's bundle published.
REUSED_PHASES = {"partition.prove_gpu": {"task", "pool_wait", "reused"},
                 "finalize_run": {"task", "reused", "verify", "summary", "cleanup"}}
OPTIONAL_PHASES = {"setup": {"load_cached", "setup_lock_wait", "setup", "save"},  # setup_lock_wait: a GPU setup
                   "partition.stage": {"service_start"},
                   "partition.prove_gpu": {"service_start", "key_load", "key_upload"}}


class _TI:
    """The task-instance attributes the operators read."""

    def __init__(self, run_id, task_id, map_index, try_number):
        self.dag_id, self.run_id, self.task_id = DAG_ID, run_id, task_id
        self.map_index, self.try_number = map_index, try_number
        self.start_date = dt.datetime.now(dt.timezone.utc)
        self.hostname = socket.gethostname()


class _DagRun:
    def __init__(self, start_date):
        self.start_date = start_date


def task_order(partitions: int) -> list[tuple[str, int]]:
    """(task_id, map_index) in an order that respects the DAG's dependencies."""
    out = [("validate", -1), ("setup", -1), ("prepare_scratch", -1)]
    out += [(t, p) for p in range(partitions) for t in PARTITION_TASKS]
    return out + [("finalize_run", -1), ("cleanup_scratch", -1)]


def _xcom_path(state: Path, run_id: str, task_id: str, map_index: int, try_number: int | None = None) -> Path:
    name = f"{task_id}.{map_index}" + (f".try{try_number}" if try_number is not None else "")
    return state / run_id / f"{name}.json"


def _xcom(state: Path, run_id: str, task_id: str, map_index: int = -1):
    return json.loads(_xcom_path(state, run_id, task_id, map_index).read_text())


def build_operator(state: Path, run_id: str, task_id: str, map_index: int):
    from proofflow.airflow.operators import proof as ops
    if task_id == "validate":
        return ops.ValidateOperator(task_id="validate")
    cfg = _xcom(state, run_id, "validate")
    p = map_index
    if task_id == "setup":
        return ops.SetupOperator(task_id=task_id, config=cfg)
    if task_id == "prepare_scratch":
        return ops.PrepareScratchOperator(task_id=task_id, config=cfg)
    if task_id == "partition.synthesize":
        return ops.SynthesizeOperator(task_id=task_id, config=cfg, chunk=p)
    if task_id == "partition.stage":
        return ops.StageOperator(task_id=task_id, config=cfg, chunk=p,
                                 synthesized=_xcom(state, run_id, "partition.synthesize", p))
    if task_id == "partition.prove_gpu":
        return ops.ProveGpuOperator(task_id=task_id, config=cfg, chunk=p,
                                    staged=_xcom(state, run_id, "partition.stage", p),
                                    setup_result=_xcom(state, run_id, "setup"), ready_after_task_id="partition.stage")
    if task_id == "partition.finalize_partition":
        return ops.FinalizePartitionOperator(task_id=task_id, config=cfg, chunk=p,
                                             proved=_xcom(state, run_id, "partition.prove_gpu", p),
                                             setup_result=_xcom(state, run_id, "setup"))
    if task_id == "finalize_run":
        done = [_xcom(state, run_id, "partition.finalize_partition", i) for i in range(cfg["partitions"])]
        return ops.FinalizeRunOperator(task_id=task_id, config=cfg, partitions_done=done[0] if len(done) == 1 else done,
                                       setup_result=_xcom(state, run_id, "setup"))
    if task_id == "cleanup_scratch":
        return ops.CleanupScratchOperator(task_id=task_id, config=cfg)
    raise ValueError(f"unknown task {task_id!r}")


def run_attempt(state: Path, run_id: str, task_id: str, map_index: int, try_number: int, conf: dict | None = None):
    """One attempt of one task, in this process; its return value goes to its try's XCom file."""
    from proofflow.prover import files
    op = build_operator(state, run_id, task_id, map_index)
    ti = _TI(run_id, task_id, map_index, try_number)
    context = {"ti": ti, "params": dict(conf or {}), "dag_run": _DagRun(ti.start_date)}
    out = op.execute(context)
    files.write_json(_xcom_path(state, run_id, task_id, map_index, try_number), out)
    return out


def commit(state: Path, run_id: str, task_id: str, map_index: int, try_number: int):
    """The successful try's return value becomes the task's XCom, as Airflow keeps it."""
    src = _xcom_path(state, run_id, task_id, map_index, try_number)
    os.replace(src, _xcom_path(state, run_id, task_id, map_index))
    return json.loads(_xcom_path(state, run_id, task_id, map_index).read_text())


def _child(state, run_id, task_id, map_index, try_number, conf, env):
    os.environ.update(env)
    settings.reload()
    try:
        run_attempt(Path(state), run_id, task_id, map_index, try_number, conf)
    except BaseException as exc:  # reported to the parent, like a failed task's log
        err = Path(state) / run_id / f"{task_id}.{map_index}.try{try_number}.error"
        err.write_text(f"{type(exc).__name__}: {exc}")
        os._exit(1)
    os._exit(0)


@dataclass
class Attempt:
    task_id: str
    map_index: int
    try_number: int
    exitcode: int | None
    seconds: float
    killed: bool = False  # SIGKILLed by the test while it ran
    error: str | None = None


PRELOAD = ["proof_tasks", "proofflow.airflow.operators.proof", "proofflow.timing.store",
           "proofflow.prover.groth16.prover", "proofflow.prover.groth16.verifier", "proofflow.prover.circuits",
           "proofflow.prover.service.client", "proofflow.prover.bundle", "sqlalchemy.dialects.sqlite"]


def _preloaded_forkserver(ctx, modules: list[str]) -> None:
    """The process's one fork server, with ``modules`` imported. A fork server started
    earlier in this process (proofflow's setup pools start one, importing nothing) would
    ignore a new preload list and every attempt would import the operators itself, seconds
    each: that one is stopped (its running children are not touched) and the next attempt
    starts ours."""
    from multiprocessing import forkserver
    server = forkserver._forkserver
    if server._forkserver_pid is not None and server._preload_modules != modules:
        server._stop()
    ctx.set_forkserver_preload(modules)


@dataclass
class Runner:
    """Forks task attempts from a fork server that has proof_run's modules imported."""

    state: Path
    env: dict = field(default_factory=dict)

    def __post_init__(self):
        self.state = Path(self.state)
        self.ctx = multiprocessing.get_context("forkserver")
        _preloaded_forkserver(self.ctx, PRELOAD)

    def attempt(self, run_id: str, task_id: str, map_index: int, try_number: int, conf: dict | None = None,
                kill_after: float | None = None, env: dict | None = None, on_start=None) -> Attempt:
        (self.state / run_id).mkdir(parents=True, exist_ok=True)
        proc = self.ctx.Process(target=_child, args=(str(self.state), run_id, task_id, map_index, try_number, conf,
                                                     {**self.env, **(env or {})}))
        t0 = time.monotonic()
        proc.start()
        if on_start is not None:
            on_start(proc)
        proc.join(kill_after)
        killed = False
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
            killed = proc.exitcode == -signal.SIGKILL
        err = self.state / run_id / f"{task_id}.{map_index}.try{try_number}.error"
        return Attempt(task_id, map_index, try_number, proc.exitcode, time.monotonic() - t0, killed,
                       err.read_text() if err.exists() else None)
