"""check_h2d inside proof_run (dag.test()): a normal pinned run passes with no alert; a run
with an H2D row far out of range, and a pageable run when pinned memory is required, are
flagged, fail check_h2d after finalize_run (the proofs are kept), and their alert reaches a
real local SMTP server and a local HTTP receiver with the right partitions and figures."""
import pytest


DAG_ID = "proof_run"
PARTITIONS = 3


def _states(dr):
    return {(ti.task_id, ti.map_index): str(getattr(ti.state, "value", ti.state)) for ti in dr.get_task_instances()}


def _run(proof_run_dag, monkeypatch, tmp_path, **conf):
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    monkeypatch.setenv("PROOFFLOW_REPORTS", str(tmp_path / "reports"))
    dr = proof_run_dag.test(run_conf={"log2": 8, "partitions": PARTITIONS, "backend": "cpu", **conf})
    from proofflow.timing import TimingStore
    return dr, TimingStore(url)


def _proofs_kept(store, dr):
    from proofflow.prover.bundle import verify_bundle
    run = store.run(DAG_ID, dr.run_id)
    assert run["state"] == "success" and run["proofs_verified"] == PARTITIONS
    assert all(r.ok for r in verify_bundle(run["bundle_dir"]))


@pytest.mark.slow
def test_normal_pinned_run_passes_without_alert(proof_run_dag, monkeypatch, tmp_path, smtp_server, webhook_receiver):
    dr, store = _run(proof_run_dag, monkeypatch, tmp_path, staging="pinned")
    assert str(getattr(dr.state, "value", dr.state)) == "success"
    assert _states(dr)[("check_h2d", -1)] == "success" and _states(dr)[("publish_summary", -1)] == "success"
    _proofs_kept(store, dr)
    assert store.flags(DAG_ID, dr.run_id) == []
    (res,) = store.check_results(DAG_ID, dr.run_id)
    assert res["success"] and res["evaluated"] == PARTITIONS and res["flagged"] == 0
    assert store.calibrations(), "the missing calibration of this host was measured by the check"
    assert (tmp_path / "reports").rglob("check_h2d.json")
    assert smtp_server.messages == [] and webhook_receiver == []


@pytest.mark.slow
def test_out_of_range_h2d_is_flagged_and_alerted(proof_run_dag, monkeypatch, tmp_path, smtp_server,
                                                  webhook_receiver):
    from proofflow.airflow.operators import recorder
    original = recorder.Recorder.transfer

    def injected(self, direction, nbytes, memory_kind, duration_s, start=None):
        if direction == "h2d" and self.partition == 1:
            duration_s = 2.5  # seconds for a few hundred KiB: far out of any calibrated range
        return original(self, direction, nbytes, memory_kind, duration_s, start)
    monkeypatch.setattr(recorder.Recorder, "transfer", injected)
    dr, store = _run(proof_run_dag, monkeypatch, tmp_path, staging="pinned")
    states = _states(dr)
    assert str(getattr(dr.state, "value", dr.state)) == "failed"
    assert states[("finalize_run", -1)] == "success" and states[("check_h2d", -1)] == "failed"
    assert states[("cleanup_scratch", -1)] == "success"
    _proofs_kept(store, dr)  # the check came after the proofs were published
    # the summary task ran after the failed check, did not fail, and names the flagged partition
    from proofflow.timing.summary import run_figures
    assert states[("publish_summary", -1)] == "success"
    assert run_figures(store, DAG_ID, dr.run_id)["flagged_partitions"] == [1]

    (flag,) = store.flags(DAG_ID, dr.run_id)
    nbytes = 3 * (1 << 8) * 32
    assert (flag["partition"], flag["bytes"], flag["measured_ms"]) == (1, nbytes, 2500.0)
    assert 0 < flag["expected_ms"] < 5 and "took 2500.000 ms" in flag["reason"]

    (msg,) = smtp_server.messages
    assert dr.run_id in msg["subject"] and "partition(s) 1" in msg["subject"]
    assert "took 2500.000 ms, expected" in msg["body"] and f"{flag['expected_ms']:.3f}" in msg["body"]
    (post,) = webhook_receiver
    body = post["json"]
    assert body["run_id"] == dr.run_id and body["flagged_partitions"] == [1]
    assert body["flags"][0]["measured_ms"] == 2500.0
    assert body["flags"][0]["expected_ms"] == pytest.approx(flag["expected_ms"])


@pytest.mark.slow
def test_pageable_run_is_flagged_when_pinned_is_required(proof_run_dag, monkeypatch, tmp_path, smtp_server,
                                                          webhook_receiver):
    monkeypatch.setenv("PROOFFLOW_H2D_REQUIRE_PINNED", "1")
    dr, store = _run(proof_run_dag, monkeypatch, tmp_path, staging="pageable")
    assert _states(dr)[("check_h2d", -1)] == "failed"
    _proofs_kept(store, dr)
    flags = store.flags(DAG_ID, dr.run_id)
    assert [f["partition"] for f in flags] == list(range(PARTITIONS))
    assert all("pageable host memory (pinned expected)" in f["reason"] for f in flags)
    (msg,) = smtp_server.messages
    assert "partition(s) 0, 1, 2" in msg["subject"]
    assert webhook_receiver[0]["json"]["flagged_partitions"] == [0, 1, 2]
