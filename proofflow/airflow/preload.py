"""Imports what proof-run tasks import, once, in Airflow's long-lived job processes.

A LocalExecutor runs each task in a process forked from its worker, which the scheduler
forked at its start; the dag-processor forks its parsing processes the same way. Each such
process parses the DAG file and imports what its task runs: profiled on a local stream
(py-spy over the scheduler's process tree), imports were ~60% of a task process's CPU:
Great Expectations (check_h2d, once a run) alone a fifth, numpy and the prover engine
another, the task SDK's decorators a seventh of the parse. Imported here, in the job process
before it forks, every fork inherits them (copy-on-write; the LocalExecutor freezes the
garbage collector before forking its workers, so the pages stay shared).

It is a listener (``ProofflowPlugin.listeners``): Airflow calls ``on_starting`` with the
scheduler's, dag-processor's or triggerer's job before the job runs, and with a marker in
every task process (which preloads nothing). Only imports happen: nothing here opens a
connection, starts a Python thread, enters OpenMP or touches CUDA, so forking afterwards is
as safe as before (numpy's BLAS starts its threads at import and handles fork itself; a
test checks that CuPy stays unimported). PROOFFLOW_PRELOAD=0 turns it off (bench.host_cpu's
baseline).
"""
from __future__ import annotations

import importlib
import logging
import time

from airflow.listeners import hookimpl

from proofflow import settings

log = logging.getLogger(__name__)

MODULES = (
    # the DAG files' imports: every task process parses its DAG file
    "airflow.sdk.definitions.decorators",
    "airflow.providers.standard.operators.trigger_dagrun",
    "proofflow.airflow.operators.proof",
    "proofflow.airflow.operators.check_h2d",
    "proofflow.airflow.operators.summary",
    "proofflow.airflow.params",
    # what the tasks run
    "numpy",
    "proofflow.prover.pipeline",
    "proofflow.prover.circuits",
    "proofflow.prover.staging.shared",
    "proofflow.prover.service.client",
    "proofflow.prover.groth16.verifier",
    "proofflow.prover.resources",
    "proofflow.timing.store",
    "proofflow.timing.summary",
    "proofflow.timing.calibrate",
    "proofflow.timing.h2d_check",
    "great_expectations",
    "great_expectations.expectations",
    "pandas",
)


def preload() -> float:
    """Import ``MODULES``; the seconds it took. A module that fails to import is logged and
    skipped: the task that needs it imports it again and reports the error where it matters."""
    t0 = time.perf_counter()
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            log.exception("proofflow preload: could not import %s", name)
    return time.perf_counter() - t0


@hookimpl
def on_starting(component) -> None:
    """A job process (scheduler, dag-processor, triggerer) preloads; a task process (its
    component is the task runner's marker, not a Job) does not."""
    if type(component).__name__ != "Job" or not settings.current().preload:
        return
    log.info("proofflow preloaded the tasks' modules in %.2f s", preload())
