"""check_h2d's core (Great Expectations 1.x) on synthetic runs: in-range runs pass, a slow H2D
is flagged with measured vs expected, missing rows and missing calibrations are named."""
import json
import uuid
from pathlib import Path

import pytest

from proofflow.timing.h2d_check import H2DCheckConfig, check_run
from proofflow.timing import TimingStore
from h2d_fixtures import NB, add_run

CFG = H2DCheckConfig(tol=1.0, tol_low=0.5, floor_fraction=0.25, slack_ms=0.5)


@pytest.fixture
def store(store_url):
    s = TimingStore(store_url)
    yield s
    s.dispose()


def test_runs_in_range_pass(store, tmp_path):
    dag, run = f"chk-{uuid.uuid4().hex[:8]}", "ok"
    add_run(store, dag, run, [10.0, 12.0, 9.0])  # expected 10 ms each at 10 GB/s
    out = check_run(store, dag, run, CFG, out_dir=tmp_path)
    assert out["success"] and out["flags"] == [] and store.flags(dag, run) == []
    assert [r["expected_ms"] for r in out["evaluated"]] == pytest.approx([10.0] * 3)
    doc = json.loads(Path(out["result_path"]).read_text())
    assert doc["success"] is True and set(doc["great_expectations"]) == {"h2d", "timings", "partitions"}
    assert Path(out["data_docs"]).exists() and Path(out["data_docs"]).name == "index.html"
    (res,) = store.check_results(dag, run)
    assert res["success"] and res["evaluated"] == 3 and res["flagged"] == 0
    assert json.loads(res["result_json"])["run_id"] == run


def test_a_slow_partition_is_flagged_with_measured_vs_expected(store, tmp_path):
    dag, run = f"chk-{uuid.uuid4().hex[:8]}", "slow"
    add_run(store, dag, run, [10.0, 300.0, 4.0, 11.0])
    out = check_run(store, dag, run, CFG, out_dir=tmp_path)
    assert not out["success"]
    flags = {f["partition"]: f for f in store.flags(dag, run)}
    assert set(flags) == {1, 2}
    f1 = flags[1]
    assert (f1["bytes"], f1["measured_ms"], f1["expected_ms"]) == (NB, 300.0, pytest.approx(10.0))
    assert f1["gbps"] == pytest.approx(NB / 0.3 / 1e9) and f1["floor_gbps"] == pytest.approx(2.5)
    assert "took 300.000 ms, expected 10.000 ms" in f1["reason"] and "30.0x" in f1["reason"]
    assert "below the floor of 2.50 GB/s" in f1["reason"]
    assert "faster than the calibration allows" in flags[2]["reason"]  # 4 ms < 10 * 0.5 - 0.5
    # checked again: the flags are replaced, not added
    check_run(store, dag, run, CFG, out_dir=tmp_path, try_number=2)
    assert len(store.flags(dag, run)) == 2
    assert [r["try_number"] for r in store.check_results(dag, run)] == [1, 2]
    h2d = store.query("SELECT partition, flagged FROM h2d_partitions WHERE dag_id = :d ORDER BY partition", {"d": dag})
    assert [(r["partition"], r["flagged"]) for r in h2d] == [(0, 0), (1, 1), (2, 1), (3, 0)]


def test_missing_rows_and_calibration_are_named(store, tmp_path):
    dag, run = f"chk-{uuid.uuid4().hex[:8]}", "gaps"
    add_run(store, dag, run, [10.0, 10.0, 10.0], missing={(1, "h2d"), (2, "stage")}, host=f"host-{uuid.uuid4().hex[:6]}",
            calibrate_gbps=None)
    out = check_run(store, dag, run, CFG, out_dir=tmp_path, data_docs=False)
    reasons = {f["partition"]: f["reason"] for f in out["flags"]}
    assert "no calibration for host" in reasons[0] and "proofflow calibrate" in reasons[0]
    assert "no h2d row for this partition" in reasons[1]
    assert "no stage task row for this partition" in reasons[2]


def test_pageable_memory_flagged_when_pinned_is_required(store, tmp_path):
    dag, run = f"chk-{uuid.uuid4().hex[:8]}", "pageable"
    add_run(store, dag, run, [10.0, 10.0], memory_kind="pageable")
    assert check_run(store, dag, run, CFG, out_dir=tmp_path, data_docs=False)["success"]
    cfg = H2DCheckConfig(**{**CFG.__dict__, "require_pinned": True})
    out = check_run(store, dag, run, cfg, out_dir=tmp_path, data_docs=False)
    assert [f["partition"] for f in out["flags"]] == [0, 1]
    assert "pageable host memory (pinned expected)" in out["flags"][0]["reason"]


def test_config_from_env_then_variables_then_defaults(monkeypatch):
    monkeypatch.setenv("PROOFFLOW_H2D_TOL", "3.5")
    monkeypatch.setenv("PROOFFLOW_H2D_REQUIRE_PINNED", "yes")
    variables = {"proofflow_h2d_tol_low": "0.2", "proofflow_h2d_tol": "9"}  # the env wins over a variable
    cfg = H2DCheckConfig.resolve(variable=variables.get)
    assert (cfg.tol, cfg.tol_low, cfg.require_pinned, cfg.slack_ms) == (3.5, 0.2, True, 2.0)
    assert H2DCheckConfig.resolve(tol=1.5).tol == 1.5
    monkeypatch.setenv("PROOFFLOW_H2D_TOL_LOW", "2")
    with pytest.raises(ValueError, match="tolerances"):
        H2DCheckConfig.resolve()
