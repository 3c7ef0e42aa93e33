"""Notifiers for proof runs (Airflow 3 puts notifiers in ``on_failure_callback``)."""
from __future__ import annotations

import logging

from airflow.sdk import BaseNotifier

from proofflow import settings, spec
from proofflow.airflow import task_end
from proofflow.airflow.operators.summary import publish_note

log = logging.getLogger(__name__)


def _unrecorded_cause(context, dag_id: str, run_id: str) -> spec.RunFailure | None:
    """The cause of a run's failure from the task instance Airflow names as the one that
    failed it (the callback's ``ti``): how its last try's process ended, from that try's log."""
    ti = context.get("ti")
    if getattr(ti, "task_id", None) is None:
        return None
    mi = -1 if getattr(ti, "map_index", None) is None else int(ti.map_index)
    try_number = int(getattr(ti, "try_number", None) or 1)
    end = task_end.from_log(task_end.attempt_log(dag_id, run_id, ti.task_id, mi, try_number))
    task = getattr(ti, "task", None)
    tries = (task.retries or 0) + 1 if task is not None else None
    message = task_end.explain(end, ti.task_id, try_number, tries, getattr(ti, "hostname", None))
    conf = getattr(context.get("dag_run"), "conf", None)
    return spec.RunFailure(ti.task_id, message, *task_end.failed_partition(conf, mi, settings.current().run_input_roots))


class RunStateNotifier(BaseNotifier):
    """Records a proof run's final state in the timing store's ``runs`` table and logs it;
    the DAG's failure callback, so a run that fails before its cleanup task is marked too.
    A failed run whose failing task recorded no cause (its process was killed: the kernel's
    out-of-memory killer, a lost worker) gets one here, from how Airflow saw the task that
    failed the run (``proofflow.airflow.task_end``), and the run's note is written again."""

    template_fields = ()

    def __init__(self, state: str = "failed"):
        super().__init__()
        self.state = state

    def get_template_env(self, dag=None):
        # dag.test() (`proofflow run`) hands a DAG's callbacks the serialized DAG, which has
        # no template environment; this notifier renders nothing with the DAG's anyway.
        return super().get_template_env(dag=dag if hasattr(dag, "get_template_env") else None)

    def notify(self, context):
        import time
        from proofflow.airflow.hooks.timing import TimingStoreHook
        dag_run = context.get("dag_run")
        dag_id = getattr(dag_run, "dag_id", None) or context["dag"].dag_id
        run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
        try:
            store = TimingStoreHook().get_store()
            row = store.run(dag_id, run_id) or {}
            if row.get("state") == "success" and self.state == "failed":
                # finalize_run verified and published every proof; what failed after it is a
                # check (check_h2d), whose flags are in h2d_flags: the proofs' state stands.
                log.warning("proof run %s/%s: a task after finalize_run failed; its proofs stay 'success'",
                            dag_id, run_id)
                return
            store.upsert_run(dag_id, run_id, state=self.state, finished_at=time.time())
            cause = _unrecorded_cause(context, dag_id, run_id) if self.state == "failed" and \
                spec.RunFailure.from_row(row) is None else None
            if cause is not None and task_end.record(store, dag_id, run_id, cause):
                log.warning("proof run %s/%s: %s", dag_id, run_id, cause.line())
                publish_note(dag_id, run_id)  # publish_summary's note, written before the cause was known
        except Exception:
            log.exception("could not record run state %s for %s/%s", self.state, dag_id, run_id)
        log.warning("proof run %s/%s: %s", dag_id, run_id, self.state)
