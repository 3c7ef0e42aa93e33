"""``PublishSummaryOperator``: the ``publish_summary`` task of proof_run. It reads the run's
figures from the timing store and writes them as the dag run's note through the REST API
(task code may not open Airflow's metadata DB), with links to the plugin's report page and
timeline PNG (``publish_note``; the DAG's failure callback writes it again when it records
a cause the run's tasks could not). Best effort: a problem is logged as a warning and never
fails the task, so a run whose proofs are fine never fails over its summary.

It fails in one case, on purpose: a run stopped from outside before its proofs were
verified (marked failed in the UI or the REST API, or ``proofflow cancel``). Airflow then
skips the run's pending tasks and runs its teardowns, and with ``verdict_task_id`` (the task
whose state decides the run's: check_h2d) skipped, the run would read success once they are
done; this teardown fails instead, and fails the run (``on_failure_fail_dagrun``)."""
from __future__ import annotations

import logging
from urllib.parse import urlparse

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from proofflow import settings
from proofflow.airflow.hooks.api import AirflowApiHook

log = logging.getLogger(__name__)


def publish_note(dag_id: str, run_id: str, api_conn_id: str = settings.API_CONN_ID) -> dict | None:
    """The run's figures from the timing store, written as its dag run's note through the
    connection ``api_conn_id`` (logged either way); returns the figures. Best effort: a
    problem is logged as a warning."""
    from proofflow.airflow.hooks.timing import TimingStoreHook
    from proofflow.timing.summary import note_markdown, run_figures
    try:
        fig = run_figures(TimingStoreHook().get_store(), dag_id, run_id)
    except Exception as exc:
        log.warning("run summary of %s not available (timing store: %s)", run_id, exc)
        return None
    if fig is None:
        log.warning("no run %s in the timing store: no summary", run_id)
        return None
    fig.pop("report")
    try:
        api = AirflowApiHook(api_conn_id).get_conn()
    except Exception as exc:  # AirflowNotFoundException when the connection is not defined
        api = None
        log.warning("connection %s not usable (%s): the run's note is not written", api_conn_id, exc)
    note = note_markdown(fig, urlparse(api.base).path if api else "")
    log.info("run summary of %s:\n%s", run_id, note)
    if api is not None:
        try:
            api.set_dag_run_note(dag_id, run_id, note)
            log.info("wrote the summary as the note of dag run %s", run_id)
        except Exception as exc:
            log.warning("could not write the note of dag run %s: %s", run_id, exc)
    return fig


class PublishSummaryOperator(BaseOperator):
    ui_color = "#e6f4ea"

    def __init__(self, *, api_conn_id: str = settings.API_CONN_ID, verdict_task_id: str | None = None, **kwargs):
        kwargs.setdefault("retries", 0)
        super().__init__(**kwargs)
        self.api_conn_id, self.verdict_task_id = api_conn_id, verdict_task_id

    def execute(self, context):
        ti = context["ti"]
        fig = publish_note(ti.dag_id, ti.run_id, self.api_conn_id)
        from proofflow.timing.store import SERVED_STATES
        if self.verdict_task_id and (fig or {}).get("state") not in SERVED_STATES:
            from proofflow.airflow.cancel import stopped_from_outside
            if stopped_from_outside(ti, self.verdict_task_id):
                raise AirflowFailException("the run was stopped (marked failed, or cancelled) before its proofs were "
                                           f"verified: {self.verdict_task_id} was skipped; the run fails")
        return fig
