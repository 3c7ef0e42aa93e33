"""Idempotent submission (#39): a proof_run whose conf's request_id an earlier run holds
proves nothing, ends success pointing at that run (its runs row, the XCom ``request``, the
note), and a request id reused for other parameters fails the run in validate. Through
dag.test() here (what a REST or UI trigger's run executes), through `proofflow run` twice,
and through the REST API in tests/airflow/test_scheduler_run.py."""
import json
import time

import pytest

from proofflow_cli import proofflow

CONF = {"log2": 8, "partitions": 2, "backend": "cpu", "staging": "pinned", "seed": 5}


def _state(x) -> str:
    return str(getattr(x, "value", x))


def _holder_row(**extra):
    """An earlier run's runs row, as its validate wrote it for CONF (then finished)."""
    return dict(circuit="mimc", log2=8, partitions=2, backend="cpu", staging="pageable", backend_requested="cpu",
                staging_requested="pinned", seed=5, curve="bls12_381", state="running", started_at=time.time(),
                host="h", **extra)


def test_a_run_of_a_held_request_skips_everything_and_points_at_the_holder(proof_run_dag, monkeypatch, tmp_path):
    from proofflow.timing import TimingStore
    from proofflow.timing.requests import claim
    from proofflow.timing.summary import note_markdown
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    store = TimingStore(url)
    request, holder = f"req-{time.time_ns()}", f"earlier-{time.time_ns()}"
    assert claim(store, "proof_run", holder, request, _holder_row()) is None
    store.upsert_run("proof_run", holder, state="success", proofs_verified=2, bundle_dir="/bundles/earlier")

    dr = proof_run_dag.test(run_conf={**CONF, "request_id": request})
    assert _state(dr.state) == "success"
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    states = {t: _state(ti.state) for t, ti in tis.items()}
    assert states["validate"] == "skipped" and states["cleanup_scratch"] == states["publish_summary"] == "success"
    skipped = {"setup", "prepare_scratch", "finalize_run", "check_h2d"}
    assert {t: states[t] for t in skipped} == dict.fromkeys(skipped, "skipped")
    assert all(s == "skipped" for t, s in states.items() if t.startswith("partition."))
    row = store.run("proof_run", dr.run_id)
    assert (row["state"], row["duplicate_of"], row["request_id"]) == ("duplicate", holder, None)
    # no proving task ran: only validate's and the teardown's rows
    assert {r["task_id"] for r in store.timings("proof_run", dr.run_id)} == {"validate", "cleanup_scratch"}
    # what a REST client reads: the XCom `request` of validate, and the run's note
    assert tis["validate"].xcom_pull(task_ids="validate", key="request") == {
        "request_id": request, "run_id": holder, "state": "success", "bundle_dir": "/bundles/earlier"}
    fig = tis["publish_summary"].xcom_pull(task_ids="publish_summary")
    assert fig["served_by"]["run_id"] == holder and fig["state"] == "duplicate"
    note = note_markdown(fig)
    assert note.startswith(f"**Request `{request}` already served** by run {holder} (success): not proved again.")
    assert "`/bundles/earlier`" in note and f"/proofflow/runs/proof_run/{holder}" in note

    # the same request id for other parameters: refused in validate, naming them
    other = proof_run_dag.test(run_conf={**CONF, "seed": 6, "request_id": request})
    assert _state(other.state) == "failed"
    failed = store.run("proof_run", other.run_id)
    assert failed["state"] == "failed" and failed["failed_task"] == "validate"
    assert failed["error"] == (f"request_id {request!r} is run {holder}'s, which asked for other parameters (seed 5 "
                               "there, 6 here): give this request an id of its own")


@pytest.mark.slow
def test_proofflow_run_twice_with_a_request_id_proves_once(tmp_path):
    home = tmp_path / "pf"
    args = ("--home", str(home), "run", "--log2", "8", "--partitions", "1", "--backend", "cpu",
            "--request-id", "batch-7:42", "--json")
    first = proofflow(*args)
    assert first.returncode == 0, first.stderr[-4000:]
    proved = json.loads(first.stdout)
    assert proved["proofs_verified"] == 1 and proved["request_id"] == "batch-7:42"
    second = proofflow(*args)
    assert second.returncode == 0, second.stderr[-4000:]
    again = json.loads(second.stdout)
    assert again["run_id"] == proved["run_id"] and again["bundle_dir"] == proved["bundle_dir"]
    assert again["duplicate_run_id"] != proved["run_id"]
    assert f"request 'batch-7:42' is run {proved['run_id']} (success): not proved again" in second.stderr
    from proofflow.timing import TimingStore
    store = TimingStore(f"sqlite:///{home / 'timing.db'}")
    assert store.run("proof_run", again["duplicate_run_id"])["duplicate_of"] == proved["run_id"]
    proofs = [r for r in store.query("SELECT run_id FROM task_timings WHERE task_id = 'partition.prove_gpu' "
                                     "AND phase = 'task'")]
    assert [r["run_id"] for r in proofs] == [proved["run_id"]], "the second call proved again"
    # `proofflow summary` names the request, and the duplicate's earlier run; a bad id is refused (exit 2)
    holder = proofflow("--home", str(home), "summary", proved["run_id"])
    assert holder.returncode == 0 and "request batch-7:42" in holder.stdout
    dup = proofflow("--home", str(home), "summary", again["duplicate_run_id"])
    assert dup.returncode == 0 and f"duplicate\n  its request is run {proved['run_id']}'s" in dup.stdout
    bad = proofflow("--home", str(home), "run", "--request-id", "two words")
    assert bad.returncode == 2 and "request_id must be 1 to 128" in bad.stderr
