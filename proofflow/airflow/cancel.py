"""``proofflow cancel RUN_ID``: a proof run stopped at once, whatever runs it.

In order: the cause goes into the timing store (the first failure is the cause, so the
partitions it stops do not replace it); the run is marked failed in Airflow's metadata DB
as the UI's "mark failed" does (``set_dag_run_state_to_failed``: running tasks failed, and
Airflow stops their processes; pending ones skipped; the teardowns left to run, so the run's
cleanup and note still come); this host's prover services drop the run's jobs that are not on
the device yet (their tasks fail without a retry, their staging segments are released); and
the run's scratch directory and staging leases go, as its cleanup task would remove them, so
nothing waits for a scheduler. A run marked failed in the UI or the REST API gets the same
from its ``cleanup_scratch`` teardown, which records its cause (``MARKED_FAILED``) first, when
it finds the run stopped from outside (``stopped_from_outside``)."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from proofflow import spec

log = logging.getLogger(__name__)

CAUSE = spec.RunFailure("cancel", "cancelled by `proofflow cancel`: its queued proofs were dropped, its staging "
                                  "and scratch released")
MARKED_FAILED = spec.RunFailure("mark_failed", "marked failed in the UI or the REST API before its proofs were "
                                               "verified: its jobs not on the device yet were dropped, its staging "
                                               "and scratch released")
FINISHED = ("success", "failed")


class RunNotFound(LookupError):
    """No run of that id in the metadata DB."""


@dataclass(frozen=True)
class Cancelled:
    """What a cancel did."""
    dag_id: str
    run_id: str
    state: str  # the run's Airflow state before the cancel
    dropped: int  # jobs the prover services dropped before the device
    on_device: int  # jobs already on a device, left to finish
    leases_released: int  # staging leases of the run released at the end
    scratch_removed: bool

    @property
    def finished_before(self) -> bool:
        return self.state in FINISHED


def mark_failed(dag_id: str, run_id: str, before=lambda: None) -> str:
    """The run marked failed in the metadata DB as the UI marks it, ``before()`` called
    first; returns its state before. A finished run is left as it is."""
    from airflow.api.common.mark_tasks import set_dag_run_state_to_failed
    from airflow.models.dagbag import DBDagBag
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select
    with create_session() as session:
        dr = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        if dr is None:
            raise RunNotFound(f"no run {run_id!r} of {dag_id} in Airflow's metadata DB")
        state = str(getattr(dr.state, "value", dr.state))
        if state not in FINISHED:
            before()
            dag = DBDagBag().get_dag_for_run(dag_run=dr, session=session)
            set_dag_run_state_to_failed(dag=dag, run_id=run_id, commit=True, session=session)
        return state


def stopped_from_outside(ti, verdict_task_id: str) -> bool:
    """Whether ``ti``'s run (one that neither succeeded nor was a duplicate request) was
    stopped from outside before its proofs were verified: marked failed in the UI or the REST
    API, or ``proofflow cancel``. Airflow then skips its pending tasks, ``verdict_task_id``
    (check_h2d) among them; a failure inside the run leaves that task upstream_failed."""
    states = ti.get_task_states(dag_id=ti.dag_id, task_ids=[verdict_task_id], run_ids=[ti.run_id])
    verdict = states.get(ti.run_id, {}).get(verdict_task_id)
    return str(getattr(verdict, "value", verdict)) == "skipped"


def release(dag_id: str, run_id: str) -> tuple[list, int, bool]:
    """What a run holds on this host, released: its jobs in the prover services (their
    replies), its staging leases (their count) and its scratch directory (whether it was there)."""
    from proofflow.prover import files, layout
    from proofflow.prover.service.client import cancel_all
    from proofflow.prover.staging.shared import SharedStaging
    owner = layout.run_owner(dag_id, run_id)
    try:
        replies = cancel_all(owner)
    except Exception as exc:  # an unsafe runtime directory, say: the staging and scratch go anyway
        log.warning("could not ask this host's prover services to drop the run's jobs: %s", exc)
        replies = []
    removed = files.remove_tree(layout.run_dir(dag_id, run_id))
    return replies, SharedStaging.from_settings().release_owned(owner), removed


def cancel(dag_id: str, run_id: str) -> Cancelled:
    """Stop the run (RunNotFound: there is none); a finished one is left as it is."""
    from proofflow.airflow import task_end
    from proofflow.airflow.hooks.timing import TimingStoreHook
    store = TimingStoreHook(in_api_server=True).get_store()  # its connection, read from the metadata DB
    state = mark_failed(dag_id, run_id, before=lambda: task_end.record(store, dag_id, run_id, CAUSE))
    if state in FINISHED:  # nothing of it is left to stop
        return Cancelled(dag_id, run_id, state, 0, 0, 0, False)
    replies, leases, removed = release(dag_id, run_id)
    store.upsert_run(dag_id, run_id, state="failed", finished_at=time.time())
    return Cancelled(dag_id, run_id, state, sum(r.dropped for r in replies), sum(r.on_device for r in replies),
                     leases, removed)
