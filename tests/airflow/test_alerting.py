"""The H2D alert, delivered for real: email through Airflow's SmtpNotifier to a local SMTP
server, and a JSON POST to a local HTTP receiver, both configured by Airflow connections."""
import types
import uuid

import pytest

from proofflow.airflow.notifications.alerts import H2DEmailNotifier, H2DWebhookNotifier, alert_payload
from proofflow.timing.h2d_check import H2DCheckConfig, check_run
from proofflow.timing import TimingStore
from h2d_fixtures import NB, add_run


@pytest.fixture
def flagged_run(sqlite_url, monkeypatch, tmp_path):
    monkeypatch.setenv("PROOFFLOW_DB_URL", sqlite_url)
    store = TimingStore(sqlite_url)
    dag, run = "proof_run", f"manual__{uuid.uuid4().hex[:8]}"
    add_run(store, dag, run, [10.0, 250.0, 10.0, 400.0])
    out = check_run(store, dag, run, H2DCheckConfig(tol=1.0, tol_low=0.5), out_dir=tmp_path, data_docs=False)
    assert [f["partition"] for f in out["flags"]] == [1, 3]
    context = {"dag_run": types.SimpleNamespace(dag_id=dag, run_id=run), "ti": None}
    yield store, dag, run, context
    store.dispose()


def test_alert_names_run_partitions_and_figures(flagged_run):
    store, dag, run, _ = flagged_run
    p = alert_payload(store, dag, run)
    assert p["run_id"] == run and p["flagged_partitions"] == [1, 3]
    f1 = p["flags"][0]
    assert (f1["partition"], f1["bytes"], f1["measured_ms"], f1["expected_ms"]) == (1, NB, 250.0, pytest.approx(10.0))


def test_email_reaches_the_smtp_server(flagged_run, smtp_server):
    store, dag, run, context = flagged_run
    H2DEmailNotifier().notify(context)
    (msg,) = smtp_server.messages
    assert msg["to"] == ["oncall@example.test"] and msg["from"] == "proofflow@localhost"
    assert run in msg["subject"] and "partition(s) 1, 3" in msg["subject"]
    assert "took 250.000 ms, expected 10.000 ms" in msg["body"]
    assert "took 400.000 ms, expected 10.000 ms" in msg["body"]


def test_webhook_receives_json(flagged_run, webhook_receiver):
    store, dag, run, context = flagged_run
    H2DWebhookNotifier().notify(context)
    (req,) = webhook_receiver
    assert req["path"] == "/hooks/proofflow" and req["headers"]["X-Proofflow"] == "alert"
    body = req["json"]
    assert body["event"] == "proofflow.check_h2d.failed" and body["run_id"] == run
    assert body["flagged_partitions"] == [1, 3]
    assert [(f["partition"], f["measured_ms"], round(f["expected_ms"], 6)) for f in body["flags"]] == [
        (1, 250.0, 10.0), (3, 400.0, 10.0)]
    assert "expected 10.000 ms" in body["text"]


def test_unconfigured_notifiers_do_nothing(flagged_run, monkeypatch):
    _, _, _, context = flagged_run
    monkeypatch.delenv("AIRFLOW_CONN_SMTP_DEFAULT", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_PROOFFLOW_WEBHOOK", raising=False)
    H2DEmailNotifier().notify(context)  # no connection: logged, no exception
    H2DWebhookNotifier().notify(context)
