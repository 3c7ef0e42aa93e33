"""Notifiers for proof runs (Airflow 3 puts notifiers in ``on_failure_callback``)."""
from __future__ import annotations

import logging

from airflow.sdk import BaseNotifier

log = logging.getLogger(__name__)


class RunStateNotifier(BaseNotifier):
    """Records a proof run's final state in the timing store's ``runs`` table and logs it;
    the DAG's failure callback, so a run that fails before its cleanup task is marked too."""

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
        except Exception:
            log.exception("could not record run state %s for %s/%s", self.state, dag_id, run_id)
        log.warning("proof run %s/%s: %s", dag_id, run_id, self.state)
