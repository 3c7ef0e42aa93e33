"""proofflow report: the text tables from the views and a readable PNG timeline, for one run
and for a pageable-vs-pinned comparison."""
import argparse
import json
import uuid

import pytest

from proofflow.timing import report
from proofflow.timing import TimingStore
from h2d_fixtures import NB, add_device_phases, add_run


def _main(*argv):
    p = argparse.ArgumentParser()
    report.add_parser(p.add_subparsers())
    args = p.parse_args(list(argv))
    return args.func(args)


@pytest.fixture
def two_runs(sqlite_url, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_DB_URL", sqlite_url)
    store = TimingStore(sqlite_url)
    dag = f"rep-{uuid.uuid4().hex[:6]}"
    add_run(store, dag, "pinned-run", [10.0, 11.0, 9.5])
    add_device_phases(store, dag, "pinned-run", 3, [10.0, 11.0, 9.5])
    add_run(store, dag, "pageable-run", [95.0, 102.0, 99.0], memory_kind="pageable")
    add_device_phases(store, dag, "pageable-run", 3, [95.0, 102.0, 99.0])
    store.replace_flags(dag, "pageable-run", [dict(partition=p, try_number=1, bytes=NB, measured_ms=ms, expected_ms=10.0,
                                                   gbps=NB / ms / 1e6, floor_gbps=2.5, reason="slow")
                                              for p, ms in enumerate([95.0, 102.0, 99.0])])
    yield store, dag
    store.dispose()


def test_report_table_and_png(two_runs, tmp_path, capsys):
    store, dag = two_runs
    png = tmp_path / "run.png"
    assert _main("report", "pinned-run", "--dag-id", dag, "--png", str(png)) == 0
    out = capsys.readouterr().out
    for section in ("run summary (run_summary)", "steady state", "phases (phase_stats_run", "H2D per partition",
                    "pool and mutex waits per prove_gpu"):
        assert section in out
    assert "partition.prove_gpu" in out and "98304" not in out and str(NB) in out
    assert "per device" not in out  # one device: no per-device table
    from PIL import Image
    assert png.stat().st_size > 20_000
    with Image.open(png) as im:
        assert im.format == "PNG" and im.width >= 1000 and im.height >= 600


def test_report_compare_and_json(two_runs, tmp_path, capsys):
    store, dag = two_runs
    png = tmp_path / "compare.png"
    assert _main("report", "pinned-run", "--dag-id", dag, "--compare", "pageable-run", "--png", str(png)) == 0
    out = capsys.readouterr().out
    assert "=== A ===" in out and "=== B ===" in out and "compare: A = pinned-run" in out
    assert png.stat().st_size > 20_000
    assert _main("report", "pinned-run", "--dag-id", dag, "--compare", "pageable-run", "--json",
                 "--warmup-partitions", "0") == 0
    doc = json.loads(capsys.readouterr().out)
    cmp = {c["figure"]: c for c in doc["compare"]}
    assert cmp["flagged partitions"]["a"] == 0 and cmp["flagged partitions"]["b"] == 3
    assert cmp["steady H2D GB/s"]["b_over_a"] == pytest.approx(30.5 / 296.0, rel=1e-6)
    assert doc["runs"]["A"]["steady_state"]["partitions"] == 3


def test_report_per_device(sqlite_url, monkeypatch, tmp_path, capsys):
    """A run on two devices: the steady state per device in the text, one GPU lane each."""
    monkeypatch.setenv("PROOFFLOW_DB_URL", sqlite_url)
    store = TimingStore(sqlite_url)
    dag = f"rep-{uuid.uuid4().hex[:6]}"
    add_run(store, dag, "two-gpu", [10.0] * 5)
    add_device_phases(store, dag, "two-gpu", 5, [10.0] * 5, devices=("cuda:0", "cuda:1"))
    rep = report.run_report(store, dag, "two-gpu", 1, 0.0)
    assert [(d["device"], d["partitions"]) for d in rep["steady_devices"]] == [("cuda:0", 2), ("cuda:1", 2)]
    assert report.device_lanes(rep["timings"]) == ["cuda:0", "cuda:1"]
    busy = {d["device"]: d["gpu_busy_s"] for d in rep["steady_devices"]}
    assert busy["cuda:0"] == pytest.approx(busy["cuda:1"]) and sum(busy.values()) == pytest.approx(
        rep["steady_state"]["gpu_busy_s"])
    png = tmp_path / "two.png"
    assert _main("report", "two-gpu", "--dag-id", dag, "--png", str(png), "--warmup-partitions", "1") == 0
    out = capsys.readouterr().out
    table = out[out.index("per device (steady_state_devices)"):out.index("phases (phase_stats_run")]
    assert "cuda:0" in table and "cuda:1" in table
    assert png.stat().st_size > 20_000
    store.dispose()


def test_unknown_run(two_runs, capsys):
    _, dag = two_runs
    assert _main("report", "nope", "--dag-id", dag) == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_report_shows_the_checks_expected_times(sqlite_url, monkeypatch, tmp_path, capsys):
    from proofflow.timing.h2d_check import H2DCheckConfig, check_run
    monkeypatch.setenv("PROOFFLOW_DB_URL", sqlite_url)
    store = TimingStore(sqlite_url)
    add_run(store, "proof_run", "checked", [10.0, 12.0])
    assert check_run(store, "proof_run", "checked", H2DCheckConfig(), out_dir=tmp_path, data_docs=False)["success"]
    assert _main("report", "checked", "--json") == 0
    h2d = json.loads(capsys.readouterr().out)["runs"]["A"]["h2d"]
    assert [h["expected_ms"] for h in h2d] == pytest.approx([10.0, 10.0]) and [h["flagged"] for h in h2d] == [0, 0]
    # 12 ms is above the expected 10 ms yet not flagged: the threshold is expected x (1 + tol) + slack
    cfg = H2DCheckConfig()
    assert [h["max_ms"] for h in h2d] == pytest.approx([10.0 * (1 + cfg.tol) + cfg.slack_ms] * 2)
    assert _main("report", "checked") == 0
    assert f"flags a copy slower than expected x (1 + {cfg.tol:g}) + {cfg.slack_ms:g} ms" in capsys.readouterr().out
    rep = report.run_report(store, "proof_run", "checked")
    from matplotlib.lines import Line2D
    from matplotlib.text import Text
    fig = report.timeline_figure([("run", rep)])
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert f"flagged above: expected x {1 + cfg.tol:g} + {cfg.slack_ms:g} ms\n(PROOFFLOW_H2D_TOL {cfg.tol:g}, " \
           f"_SLACK_MS {cfg.slack_ms:g})" in texts
    dashed = [ln for ln in fig.findobj(Line2D) if ln.get_linestyle() == "--" and len(ln.get_ydata()) == 2]
    assert sorted(y for ln in dashed for y in set(ln.get_ydata())) == pytest.approx([32.0, 32.0])
    store.dispose()


def test_a_cpu_run_is_labelled_by_what_ran(sqlite_url, monkeypatch, capsys):
    """A CPU-backend run that asked for 'auto' and pinned staging: every label says CPU
    (device 'cpu'), never GPU, and the run says what ran beside what it asked for."""
    from proofflow.timing.summary import html_page, note_markdown, run_figures
    monkeypatch.setenv("PROOFFLOW_DB_URL", sqlite_url)
    store = TimingStore(sqlite_url)
    dag = f"rep-{uuid.uuid4().hex[:6]}"
    add_run(store, dag, "cpu-run", [10.0, 11.0, 9.5], device="cpu", memory_kind="pageable")
    add_device_phases(store, dag, "cpu-run", 3, [10.0, 11.0, 9.5], devices=("cpu",))
    store.upsert_run(dag, "cpu-run", backend="cpu", staging="pageable", backend_requested="auto",
                     staging_requested="pinned")
    asked = "backend cpu (auto asked for), staging pageable (pinned asked for; the CPU backend pins nothing)"

    assert _main("report", "cpu-run", "--dag-id", dag) == 0
    out = capsys.readouterr().out
    assert "GPU" not in out and "CPU busy s" in out and "CPU busy %" in out and asked in out

    rep = report.run_report(store, dag, "cpu-run")
    assert rep["device_kind"] == "CPU"
    fig = report.timeline_figure([("run", rep)])
    from matplotlib.text import Text
    texts = [t.get_text() for t in fig.findobj(Text)]
    import matplotlib.pyplot as plt
    plt.close(fig)
    assert not [t for t in texts if "GPU" in t], texts
    assert "CPU (cpu)" in texts and "CPU idle" in texts
    assert any(t.startswith("run: CPU busy vs idle") for t in texts)
    assert any("backend cpu (auto asked for), staging pageable (pinned asked for)" in t for t in texts)

    figures = run_figures(store, dag, "cpu-run")
    note = note_markdown(figures)
    assert "· CPU busy " in note.splitlines()[0] and "GPU" not in note and asked in note
    page = html_page(figures, "data:image/png;base64,AAAA")
    assert "GPU" not in page and "<th>CPU busy s</th>" in page and asked in page
    store.dispose()


def test_a_gpu_run_keeps_its_gpu_labels(two_runs):
    store, dag = two_runs
    rep = report.run_report(store, dag, "pinned-run")
    assert rep["device_kind"] == "GPU"
    fig = report.timeline_figure([("run", rep)])
    from matplotlib.text import Text
    texts = [t.get_text() for t in fig.findobj(Text)]
    import matplotlib.pyplot as plt
    plt.close(fig)
    assert "GPU (cuda:0)" in texts and any(t.startswith("run: GPU busy vs idle") for t in texts)
