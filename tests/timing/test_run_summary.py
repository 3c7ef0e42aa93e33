"""A run's summary for the UI (proofflow/airflow/plugins): the figures from a run's timing rows, the
dag run note (markdown within the API's 1000 characters), the report page, and the
publish_summary task never failing a run over its summary."""
import datetime as dt
import logging
import re
import types

import pytest

from proofflow.timing.summary import NOTE_MAX_CHARS, html_page, note_markdown, run_figures
from proofflow.timing import TimingStore
from h2d_fixtures import DEVICE_PHASES_S, NB, T0, add_device_phases, add_run

DAG = "proof_run"
H2D_MS = [10.0, 11.0, 95.0]


@pytest.fixture
def store(sqlite_url, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_DB_URL", sqlite_url)
    s = TimingStore(sqlite_url)
    yield s
    s.dispose()


def _run(store, run_id, h2d_ms=H2D_MS):
    add_run(store, DAG, run_id, h2d_ms)
    add_device_phases(store, DAG, run_id, len(h2d_ms), h2d_ms)


def test_figures_come_from_the_runs_timing_rows(store):
    _run(store, "r1")
    # partition 1 was retried: its second attempt's H2D is the one that counts
    store.record_transfers([dict(dag_id=DAG, run_id="r1", task_id="partition.prove_gpu", map_index=1, partition=1,
                                 try_number=2, direction="h2d", bytes=NB, memory_kind="pinned",
                                 start=T0 + dt.timedelta(seconds=30), duration_s=0.02)])
    store.replace_flags(DAG, "r1", [dict(partition=2, try_number=1, bytes=NB, measured_ms=95.0, expected_ms=10.0,
                                         gbps=NB / 95.0 / 1e6, floor_gbps=2.5, reason="took 95 ms")])
    fig = run_figures(store, DAG, "r1")
    assert (fig["state"], fig["partitions"], fig["proofs_verified"]) == ("success", 3, 3)
    wall = 1 + 4 * 2 + 3 + 1  # validate, then 4 one-second tasks per partition, 1 s apart
    assert fig["wall_s"] == pytest.approx(wall)
    busy = sum(H2D_MS) / 1e3 + 3 * sum(d for ph, d in DEVICE_PHASES_S if ph != "pool_wait")
    assert fig["gpu_busy_fraction"] == pytest.approx(busy / wall)
    gbps = {h["partition"]: h["gbps"] for h in fig["h2d"]}
    assert gbps == pytest.approx({0: NB / 10e-3 / 1e9, 1: NB / 20e-3 / 1e9, 2: NB / 95e-3 / 1e9})
    assert [h["flagged"] for h in fig["h2d"]] == [False, False, True]
    assert fig["flagged_partitions"] == [2] and fig["flags"] == [{"partition": 2, "reason": "took 95 ms"}]
    assert run_figures(store, DAG, "no-such-run") is None


def test_note_carries_the_figures_and_links(store):
    _run(store, "manual__2026-01-01T00:00:00+00:00")
    store.replace_flags(DAG, "manual__2026-01-01T00:00:00+00:00",
                        [dict(partition=2, try_number=1, reason="slow"), dict(partition=None, try_number=1,
                                                                                reason="a row is missing")])
    fig = run_figures(store, DAG, "manual__2026-01-01T00:00:00+00:00")
    note = note_markdown(fig, "/airflow")
    first = note.splitlines()[0]  # the line the run page shows
    assert first.startswith("**Proof run success**: 3/3 proofs verified")
    assert f"GPU busy {100 * fig['gpu_busy_fraction']:.1f}%" in first
    assert "flagged partitions: 2 (and run-level checks)" in first
    assert "H2D GB/s per partition (* flagged): p0 10.00, p1 9.09, p2 1.05*" in note
    page = "/airflow/proofflow/runs/proof_run/manual__2026-01-01T00%3A00%3A00%2B00%3A00"
    assert f"[Full report]({page})" in note and f"[Timeline PNG]({page}/timeline.png)" in note
    assert len(note) <= NOTE_MAX_CHARS


def test_note_of_64_partitions_fits_and_says_what_it_left_out(store):
    run_id = "manual__2026-12-03T06:25:05.123456+00:00"
    ms = [1.0 + p / 64 for p in range(64)]  # 50-100 GB/s: five characters each
    _run(store, run_id, ms)
    store.replace_flags(DAG, run_id, [dict(partition=p, try_number=1, reason="slow") for p in range(0, 64, 2)])
    note = note_markdown(run_figures(store, DAG, run_id))
    assert len(note) <= NOTE_MAX_CHARS and note.endswith("/timeline.png)"), "the links are kept"
    line = next(ln for ln in note.splitlines() if ln.startswith("H2D GB/s"))
    shown = re.findall(r"p(\d+) ", line)
    (more,) = map(int, re.findall(r"… (\d+) more in the full report", line))
    assert shown == [str(p) for p in range(len(shown))] and len(shown) + more == 64 and more > 0
    assert "p0 100.00*, p1 98.46, p2 96.97*" in line


def test_report_page_shows_the_tables_and_escapes(store):
    _run(store, "<b>run</b>")
    page = html_page(run_figures(store, DAG, "<b>run</b>"), "data:image/png;base64,AAAA")
    assert "<b>run</b>" not in page and "&lt;b&gt;run&lt;/b&gt;" in page
    summary = re.search(r'id="proofflow-summary">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    assert re.findall(r"<td>(.*?)</td>", summary)[:3] == ["success", "3", "3"]
    h2d = re.search(r'id="proofflow-h2d">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    assert re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td>", h2d) == [(str(p), str(NB)) for p in range(3)]
    assert 'src="data:image/png;base64,AAAA"' in page and "No partition flagged." in page


def _context(run_id):
    return {"ti": types.SimpleNamespace(dag_id=DAG, run_id=run_id)}


def test_publish_summary_never_fails_the_run(store, monkeypatch, capsys, caplog):
    from proofflow.airflow.operators.summary import PublishSummaryOperator
    _run(store, "r1")
    op = PublishSummaryOperator(task_id="publish_summary")
    caplog.set_level(logging.INFO, logger="proofflow.airflow.operators.summary")

    def logged():  # Airflow's structlog prints to stdout or hands records on, by how it was set up
        out = capsys.readouterr()
        text = out.out + out.err + caplog.text
        caplog.clear()
        return text
    # no API connection: the figures are logged and returned, the note is not written
    monkeypatch.delenv("AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API", raising=False)
    fig = op.execute(_context("r1"))
    assert fig["proofs_verified"] == 3 and "report" not in fig
    log = logged()
    assert "the run's note is not written" in log and "3/3 proofs verified" in log
    # an API that does not answer: a warning, no exception, and no password in the log
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API",
                       '{"conn_type": "http", "host": "127.0.0.1", "port": 9, "login": "u", "password": "s3cret-pw"}')
    assert op.execute(_context("r1"))["partitions"] == 3
    log = logged()
    assert "could not write the note of dag run r1" in log and "s3cret-pw" not in log
    # a run the timing store does not know
    assert op.execute(_context("unknown")) is None and "no run unknown in the timing store" in logged()
