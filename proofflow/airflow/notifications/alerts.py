"""Alerts for flagged proof runs: notifiers for ``check_h2d``'s ``on_failure_callback``.

Both read what to say from the timing store (``h2d_flags`` of the run: the partitions and
their measured vs expected figures), and both are configured by Airflow connections, so a
deployment turns them on without touching the DAG:

* ``H2DEmailNotifier``: Airflow's ``SmtpNotifier`` (apache-airflow-providers-smtp) through the
  SMTP connection ``PROOFFLOW_SMTP_CONN_ID`` (default ``smtp_default``: host, port, login,
  password; extra ``from_email``, ``disable_tls``, ``disable_ssl``). Recipients: env
  ``PROOFFLOW_ALERT_EMAIL`` or the Airflow Variable ``proofflow_alert_email`` (comma
  separated), else the connection's extra ``to``. No recipients, or no connection: no mail.
* ``H2DWebhookNotifier``: POSTs the alert as JSON to the connection ``proofflow_webhook``
  (type http: schema http/https, host, port, extra ``endpoint`` (path) and ``headers``; or
  extra ``url``). No connection: no POST.

A notifier never raises: a failed delivery is logged (Airflow logs callbacks' errors too).
"""
from __future__ import annotations

import html
import logging

from airflow.sdk import BaseNotifier

from proofflow import settings
from proofflow.airflow.hooks.connections import optional_connection, variable
from proofflow.airflow.hooks.webhook import WebhookHook

log = logging.getLogger(__name__)



def _run_ids(context) -> tuple[str, str]:
    dag_run = context.get("dag_run")
    ti = context.get("ti")
    dag_id = getattr(dag_run, "dag_id", None) or getattr(ti, "dag_id", None) or context["dag"].dag_id
    run_id = getattr(dag_run, "run_id", None) or getattr(ti, "run_id", None) or context.get("run_id")
    return dag_id, run_id


def _store():
    from proofflow.airflow.hooks.timing import TimingStoreHook
    return TimingStoreHook().get_store()


def alert_payload(store, dag_id: str, run_id: str) -> dict:
    """What an alert says: the run, its flagged partitions, measured vs expected figures."""
    flags = store.flags(dag_id, run_id)
    results = store.check_results(dag_id, run_id)
    last = results[-1] if results else {}
    run = store.run(dag_id, run_id) or {}
    return {
        "event": "proofflow.check_h2d.failed",
        "dag_id": dag_id, "run_id": run_id,
        "host": run.get("host"), "backend": run.get("backend"), "staging": run.get("staging"),
        "partitions": run.get("partitions"), "proofs_verified": run.get("proofs_verified"),
        "flagged_partitions": sorted({f["partition"] for f in flags if f["partition"] is not None}),
        "flags": [{k: f[k] for k in ("partition", "try_number", "bytes", "measured_ms", "expected_ms", "gbps",
                                     "floor_gbps", "reason")} for f in flags],
        "report_dir": last.get("report_dir"),
    }


def _fmt(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


def alert_subject(p: dict) -> str:
    parts = ", ".join(str(x) for x in p["flagged_partitions"]) or "run level"
    return f"[proofflow] H2D check failed: {p['dag_id']} {p['run_id']}: partition(s) {parts}"


def alert_text(p: dict) -> str:
    lines = [f"proofflow check_h2d flagged run {p['run_id']} of {p['dag_id']} "
             f"(host {p['host']}, backend {p['backend']}, staging {p['staging']}; "
             f"{p['proofs_verified']}/{p['partitions']} proofs verified and kept).", "",
             f"{'partition':>9} {'bytes':>12} {'measured ms':>12} {'expected ms':>12} {'GB/s':>8} {'floor':>8}  reason"]
    for f in p["flags"]:
        part = "run" if f["partition"] is None else str(f["partition"])
        lines.append(f"{part:>9} {f['bytes'] if f['bytes'] is not None else '-':>12} {_fmt(f['measured_ms']):>12} "
                     f"{_fmt(f['expected_ms']):>12} {_fmt(f['gbps'], 2):>8} {_fmt(f['floor_gbps'], 2):>8}  {f['reason']}")
    if p.get("report_dir"):
        lines += ["", f"Great Expectations result and data docs: {p['report_dir']}"]
    return "\n".join(lines)


def alert_html(p: dict) -> str:
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
            "run" if f["partition"] is None else f["partition"], f["bytes"], _fmt(f["measured_ms"]),
            _fmt(f["expected_ms"]), _fmt(f["gbps"], 2), _fmt(f["floor_gbps"], 2), f["reason"])) + "</tr>"
        for f in p["flags"])
    head = "".join(f"<th>{h}</th>" for h in ("partition", "bytes", "measured ms", "expected ms", "GB/s", "floor GB/s",
                                              "reason"))
    return (f"<p>proofflow <b>check_h2d</b> flagged run <b>{html.escape(p['run_id'])}</b> of "
            f"{html.escape(p['dag_id'])} (host {html.escape(str(p['host']))}, staging {html.escape(str(p['staging']))}; "
            f"{p['proofs_verified']}/{p['partitions']} proofs verified and kept).</p>"
            f"<table border='1'><tr>{head}</tr>{rows}</table>"
            f"<pre>{html.escape(alert_text(p))}</pre>")


class H2DEmailNotifier(BaseNotifier):
    """Mails the H2D alert through Airflow's SmtpNotifier."""

    template_fields = ()

    def __init__(self, to: str | list[str] | None = None, smtp_conn_id: str | None = None,
                 from_email: str | None = None):
        super().__init__()
        self.to, self.smtp_conn_id, self.from_email = to, smtp_conn_id, from_email

    def notify(self, context):
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier
        conn_id = self.smtp_conn_id or settings.current().smtp_conn_id
        dag_id, run_id = _run_ids(context)
        try:
            conn = optional_connection(conn_id)
            if conn is None:
                return
            to = self.to or settings.current().alert_email or variable("proofflow_alert_email") or \
                (conn.extra_dejson or {}).get("to")
            if not to:
                log.warning("H2D alert for %s not mailed: no recipients (PROOFFLOW_ALERT_EMAIL, Variable "
                            "proofflow_alert_email or extra 'to' of connection %s)", run_id, conn_id)
                return
            if isinstance(to, str):
                to = [a.strip() for a in to.split(",") if a.strip()]
            payload = alert_payload(_store(), dag_id, run_id)
            SmtpNotifier(to=to, from_email=self.from_email, smtp_conn_id=conn_id, subject=alert_subject(payload),
                         html_content=alert_html(payload)).notify(context)
            log.info("H2D alert for %s mailed to %s", run_id, ", ".join(to))
        except Exception:
            log.exception("H2D alert for %s could not be mailed through %s", run_id, conn_id)


class H2DWebhookNotifier(BaseNotifier):
    """POSTs the H2D alert as JSON to the URL of an http connection."""

    template_fields = ()

    def __init__(self, http_conn_id: str = settings.WEBHOOK_CONN_ID, timeout: float = 10.0):
        super().__init__()
        self.http_conn_id, self.timeout = http_conn_id, timeout

    def notify(self, context):
        dag_id, run_id = _run_ids(context)
        hook = WebhookHook(self.http_conn_id, self.timeout)
        try:
            if not hook.configured():
                return
            payload = alert_payload(_store(), dag_id, run_id)
            payload["text"] = alert_text(payload)
            url, status = hook.post(payload)
            log.info("H2D alert for %s posted to %s: HTTP %s", run_id, url, status)
        except Exception:
            log.exception("H2D alert for %s could not be posted through %s", run_id, self.http_conn_id)


def default_notifiers() -> list[BaseNotifier]:
    """The check's alerting: email and webhook, each active when its connection exists."""
    return [H2DEmailNotifier(), H2DWebhookNotifier()]
