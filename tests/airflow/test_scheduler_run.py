"""A real Airflow (api-server, scheduler with LocalExecutor, dag-processor) on the local
Postgres: proof_run triggered through the REST API as the UI does; the pool ``gpu`` is a
mutex; a task SIGKILLed mid-write leaves no partial artifact (nor a leased segment) and its
retry succeeds without duplicate timing rows; a run marked failed through the REST API while
its job waits in the prover service's queue has the job dropped before the device, its
staging released and its scratch removed, within seconds."""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

import local_stack as stack
from proofflow.airflow.hooks.api import AirflowApi
from service_inputs import Blockers

PARTITIONS = 8


def test_sigkill_mid_write_leaves_no_partial_artifact(tmp_path):
    from proofflow.prover import files
    target = tmp_path / "table.npy"
    code = ("import sys, numpy as np; from proofflow.prover import files; "
            "files.save_npy(sys.argv[1], np.arange(1 << 21, dtype=np.uint64))")
    env = {**os.environ, "PROOFFLOW_FAULT": f"kill_mid_write:table.npy:{tmp_path / 'fired'}"}
    first = subprocess.run([sys.executable, "-c", code, str(target)], env=env, capture_output=True, timeout=60)
    assert first.returncode == -signal.SIGKILL
    assert not target.exists(), "a killed writer must not leave the artifact under its real name"
    (tmp,) = files.stale_temporaries(tmp_path)  # the half-written file, under a name no reader uses
    assert 0 < tmp.stat().st_size < 8 << 21
    retry = subprocess.run([sys.executable, "-c", code, str(target)], env=env, capture_output=True, timeout=60)
    assert retry.returncode == 0, retry.stderr
    assert np.array_equal(np.load(target), np.arange(1 << 21, dtype=np.uint64))


def _device_spans(store, run_ids):
    """Per prove_gpu attempt of these runs, its kernel rows (ntt, msm; its upload may overlap
    the kernels of the proof before, on a copy stream)."""
    groups = {}
    for rid in run_ids:
        for r in store.timings("proof_run", rid, "partition.prove_gpu"):
            if r["phase"] in ("ntt", "msm"):
                groups.setdefault((rid, r["map_index"], r["try_number"]), []).append(r)
    return list(groups.values())


def _callback_logged(root, run_id) -> bool:
    """RunStateNotifier's line for ``run_id`` in a log under ``root``; a failure of the
    callback itself fails the test at once."""
    found = False
    for log in root.rglob("*.log"):
        text = log.read_text(errors="replace")
        assert "get_template_env" not in text, f"the failure callback raised: {log}"
        found = found or f"proof run proof_run/{run_id}: failed" in text
    return found


REQUEST = "rest-request-1"


def _same_request_again(base, procs, conf, run_id) -> str:
    """The request of ``run_id`` triggered again through REST, as a client that lost the
    answer would: its run proves nothing and names ``run_id`` (XCom ``request``, the note).
    Under a run id named after the request (the REST recipe of docs/prover-service.md), a
    third POST is refused at once (409)."""
    body = {"logical_date": None, "conf": conf, "dag_run_id": REQUEST}
    assert stack.api(base, "/api/v2/dags/proof_run/dagRuns", body)["dag_run_id"] == REQUEST
    state, tis = stack.wait_for_run(base, "proof_run", REQUEST, 300, procs)
    states = {(t["task_id"], t["map_index"]): t["state"] for t in tis}
    assert state == "success" and states[("validate", -1)] == "skipped", states
    assert not [k for k, v in states.items() if k[0].startswith("partition.") and v != "skipped"], states
    served = stack.api(base, f"/api/v2/dags/proof_run/dagRuns/{REQUEST}/taskInstances/validate/xcomEntries/request")
    value = json.loads(served["value"]) if isinstance(served["value"], str) else served["value"]
    assert (value["request_id"], value["run_id"], value["state"]) == (REQUEST, run_id, "success")
    note = stack.wait("the duplicate's note", lambda: stack.api(base, f"/api/v2/dags/proof_run/dagRuns/{REQUEST}")
                      ["note"], 60, 2, procs=procs)
    assert note.startswith(f"**Request `{REQUEST}` already served** by run {run_id} (success): not proved again.")
    status, _body = stack.request(base, "/api/v2/dags/proof_run/dagRuns", body)
    assert status == 409
    return REQUEST


# proof_batch's work (log2 8, seed 9): its key is cached by then
LOW = {"log2": 8, "partitions": 1, "backend": "cpu", "seed": 9, "priority": "low"}


def _until(what, condition, timeout, procs):
    """``stack.wait`` at a tenth of a second, for the prover service's status too."""
    return stack.wait(what, lambda: _or_none(condition), timeout, 0.1, procs=procs)


def _or_none(condition):
    from proofflow.prover.service.client import ServiceError
    try:
        return condition()
    except ServiceError:  # not started yet
        return None


def _marked_failed_through_rest(base, procs, key_dir, meanwhile) -> tuple[str, dict, object]:
    """A low-priority run whose partition's job waits in the prover service's queue behind a
    high run's jobs (``Blockers``, sent to the service from here), marked failed through the
    REST API as the UI's "mark as failed" does. Its cleanup_scratch teardown still runs and has
    the service drop the job before the device, releases the run's staging and removes its
    scratch; then publish_summary fails the run. ``meanwhile()`` (other runs, which prove
    nothing) runs while the low run makes its way to the device. Returns the run's id, the
    seconds from the PATCH to each of those, and what ``meanwhile`` returned."""
    from proofflow.prover import layout
    from proofflow.prover.service.client import ServiceClient
    from proofflow.prover.staging.shared import SharedStaging
    service, staging = ServiceClient("cpu", 0), SharedStaging.from_settings()
    with Blockers(key_dir) as blockers:
        _until("the blockers on the device", lambda: service.status()["busy"], 60, procs)
        run_id = stack.trigger(base, "proof_run", LOW)
        done_meanwhile = meanwhile()
        waiting = lambda: service.status()["queued_by_priority"].get("low", 0)  # noqa: E731
        _until("the low run's job in the service's queue", lambda: waiting() == 1, 180, procs)
        proved = blockers.proofs  # high jobs that came after it go first: the low job waits
        _until("high jobs overtaking the low one", lambda: blockers.proofs >= proved + 3, 30, procs)
        scratch, owner = layout.run_dir("proof_run", run_id), layout.run_owner("proof_run", run_id)
        leased = lambda: [lease for lease in staging.leases() if lease.owner.startswith(owner)]  # noqa: E731
        assert waiting() == 1 and scratch.is_dir() and len(leased()) == 1
        cancelled = service.status()["jobs_cancelled"]

        t0, took = time.time(), {}
        stack.api(base, f"/api/v2/dags/proof_run/dagRuns/{run_id}", {"state": "failed"}, method="PATCH")
        for what, gone in (("job dropped", lambda: waiting() == 0 and service.status()["jobs_cancelled"] > cancelled),
                           ("scratch removed", lambda: not scratch.exists()),
                           ("staging released", lambda: not leased()),
                           ("run failed", lambda: stack.api(base, f"/api/v2/dags/proof_run/dagRuns/{run_id}")
                            ["state"] == "failed")):
            _until(f"the marked run's {what}", gone, 60, procs)
            took[what] = round(time.time() - t0, 2)
        assert service.status()["jobs_cancelled"] == cancelled + 1
        # the high jobs kept the device busy throughout: the low job never came to the front,
        # where the service drops the job of a caller gone (its prove_gpu's process stopped)
        proved = blockers.proofs
        _until("the device proving on", lambda: blockers.proofs > proved, 30, procs)
    assert blockers.errors == []
    # the teardown's cancel dropped it
    log = json.dumps(AirflowApi(base).task_log("proof_run", run_id, "cleanup_scratch", 1))
    assert "dropped 1 job(s) of this run before the device" in log, log[-3000:]
    states = {t["task_id"]: t["state"] for t in stack.wait_for_run(base, "proof_run", run_id, 10)[1]}
    assert (states["partition.prove_gpu"], states["check_h2d"]) == ("failed", "skipped"), states
    # the teardowns ran; the last one fails the run, which the skipped check_h2d would pass
    assert (states["cleanup_scratch"], states["publish_summary"]) == ("success", "failed"), states
    return run_id, took, done_meanwhile


def _check_marked_failed(store, run_id) -> None:
    """The timing store's record of the run marked failed: its cause, recorded by its
    cleanup_scratch before the job was dropped (not the failure of the prove_gpu that waited
    for it, nor publish_summary's); its job never reached the device."""
    from proofflow.airflow.cancel import MARKED_FAILED
    row = store.run("proof_run", run_id)
    assert (row["state"], row["failed_task"], row["error"]) == ("failed", "mark_failed", MARKED_FAILED.message), row
    phases = {r["phase"] for r in store.timings("proof_run", run_id, "partition.prove_gpu")}
    assert not phases & {"h2d", "ntt", "msm"}, "the dropped job never reached the device"


def _overlap(a, b) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


@pytest.mark.slow
@pytest.mark.reliability
def test_scheduler_rest_trigger_pool_mutex_sigkill_retry_and_mark_failed(tmp_path, pg_new_database, mimc8_key_dir,
                                                                       monkeypatch):
    meta_url, timing_url = pg_new_database("airflow"), pg_new_database("timing")
    port = stack.free_port()
    marker = tmp_path / "fault-fired"
    # this process sees the deployment's home, staging and prover services (the test's own
    # shared staging, tests/conftest.py): it checks the run's scratch and leases, and sends
    # the blockers' jobs to the service its tasks started
    for name, value in (("PROOFFLOW_HOME", str(tmp_path / "proofflow")), ("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))):
        monkeypatch.setenv(name, value)
    env = stack.airflow_env(
        tmp_path / "airflow", meta_url, port,
        PROOFFLOW_HOME=str(tmp_path / "proofflow"), PROOFFLOW_DB_URL=timing_url,
        PROOFFLOW_SHARED_STAGING=os.environ["PROOFFLOW_SHARED_STAGING"],
        PROOFFLOW_RUNTIME=str(tmp_path / "rt"), PROOFFLOW_SERVICE_IDLE_S="60",
        PROOFFLOW_RETRIES="1",
        # one synthesis at a time, as on a machine where synthesis fills the CPUs: partitions
        # then reach prove_gpu while later ones are still being synthesized
        PROOFFLOW_SYNTH_CONCURRENCY="1",
        # each device phase lasts 1 s (the stand-in), so prove_gpu outlasts the later
        # partitions' synthesis steps instead of racing them
        PROOFFLOW_STANDIN_GPU_S="1.0",
        **stack.api_connection_env(f"http://127.0.0.1:{port}"),  # prove_gpu reads its queued time there
        # the first partition to write its a/b/c into its segment dies before it is ready (SIGKILL)
        PROOFFLOW_FAULT=f"kill:synthesize.segment:{marker}",
        # proof_batch runs only when the test triggers it: a cron run at its first parse could
        # claim the pending work early and its proof_run's synthesis take the fault
        PROOFFLOW_BATCH_CRON="none",
    )
    assert stack.proofflow_setup(env, gpu_slots=1)["slots"] == 1

    from proofflow.prover.service.client import stop_all
    try:
        with stack.running(env, tmp_path) as (base, procs):
            api = stack.api
            stack.wait("proof_run to be parsed", lambda: api(base, "/api/v2/dags/proof_run")["is_paused"] is False,
                       180, 2, procs=procs)
            conf = {"log2": 10, "partitions": PARTITIONS, "backend": "cpu", "staging": "pinned", "seed": 3,
                    "request_id": REQUEST}
            run_id = stack.trigger(base, "proof_run", conf)
            # pending work for proof_batch, whose run (triggered here as its cron would) launches a proof_run
            pending = tmp_path / "proofflow" / "pending"
            pending.mkdir(parents=True)
            (pending / "work-1.json").write_text(json.dumps({"log2": 8, "partitions": 1, "backend": "cpu", "seed": 9}))
            # the fault fires in the first synthesis to reach it: this run's, not the batch run's
            stack.wait("the injected fault", marker.exists, 300, 1, procs=procs)
            batch = stack.trigger(base, "proof_batch")

            state, tis = stack.wait_for_run(base, "proof_run", run_id, 480, procs)
            assert state == "success", json.dumps([(t["task_id"], t["map_index"], t["state"], t["try_number"])
                                                    for t in tis])

            def batch_launched():
                runs = api(base, "/api/v2/dags/proof_run/dagRuns?limit=10")["dag_runs"]
                others = [r for r in runs if r["dag_run_id"] != run_id]
                return others[0] if others and others[0]["state"] in ("success", "failed") else None
            launched = stack.wait("proof_batch's proof_run", batch_launched, 300, 2, procs=procs)
            assert launched["state"] == "success" and launched["conf"]["log2"] == 8
            assert api(base, f"/api/v2/dags/proof_batch/dagRuns/{batch}")["state"] == "success"
            assert [p.name for p in (pending / "claimed").iterdir()] == ["work-1.json"]

            def other_runs():
                """A run that fails (validate refuses its circuit): the DAG's failure callback
                runs in the dag processor and marks it failed in the store; and the same request
                again. The failing run goes first: its callback comes long before the marked run's
                (the dag processor leaves a file's callback that comes while it processes the
                file for its next pass, [dag_processor] min_file_process_interval later)."""
                failing = stack.trigger(base, "proof_run", {**conf, "partitions": 1, "circuit": "no-such-circuit",
                                                            "request_id": None})
                return _same_request_again(base, procs, conf, run_id), failing
            stopped, took, (duplicate, failing) = _marked_failed_through_rest(base, procs, mimc8_key_dir, other_runs)
            print(f"marked failed through REST: seconds after the PATCH {took}")
            assert max(took.values()) < 30, took
            assert stack.wait_for_run(base, "proof_run", failing, 300, procs)[0] == "failed"
            stack.wait("the failure callback", lambda: _callback_logged(tmp_path, failing), 120, 2, procs=procs)
    finally:
        stop_all(tmp_path / "rt")

    from proofflow.timing import TimingStore
    from proofflow.prover.bundle import verify_bundle
    store = TimingStore(timing_url)
    record = store.run("proof_run", run_id)
    assert record["state"] == "success" and record["proofs_verified"] == PARTITIONS
    assert store.run("proof_run", failing)["state"] == "failed"
    _check_marked_failed(store, stopped)
    assert record["request_id"] == REQUEST
    assert store.run("proof_run", duplicate)["duplicate_of"] == run_id
    assert {r["task_id"] for r in store.timings("proof_run", duplicate)} == {"validate", "cleanup_scratch"}
    assert all(r.ok for r in verify_bundle(record["bundle_dir"]))
    rows = store.timings("proof_run", run_id)
    assert max(Counter((r["task_id"], r["map_index"], r["try_number"], r["phase"]) for r in rows).values()) == 1

    t0 = min(r["start"] for r in rows)
    for r in sorted(rows, key=lambda r: r["start"]):  # the timeline, shown when the test fails (or with -s)
        if r["phase"] in ("task", "pool_wait", "queue_wait") and r["task_id"].startswith("partition."):
            print(f"{r['task_id']:<30}{r['map_index']:>3} try {r['try_number']} {r['phase']:<10}"
                  f"{(r['start'] - t0).total_seconds():8.2f} -> {(r['end'] - t0).total_seconds():8.2f}")
    # The pool is a mutex: no two prove_gpu attempts overlap...
    proves = sorted((r for r in rows if r["task_id"] == "partition.prove_gpu" and r["phase"] == "task"),
                    key=lambda r: r["start"])
    assert len(proves) == PARTITIONS
    for a, b in zip(proves, proves[1:]):
        assert b["start"] >= a["end"], f"prove_gpu {a['map_index']} and {b['map_index']} overlap"
    # The device phases (first kernel to the last MSM, inside the prover service) never
    # overlap either, across both runs: the service's device thread is the fine-grained mutex.
    device = sorted((min(r["start"] for r in g), max(r["end"] for r in g))
                    for g in _device_spans(store, [run_id, launched["dag_run_id"]]))
    assert len(device) == PARTITIONS + 1
    for (s0, e0), (s1, e1) in zip(device, device[1:]):
        assert s1 >= e0, "two device phases overlapped"
    # ...while synthesis of other partitions ran at the same time as some of them.
    synths = [r for r in rows if r["task_id"] == "partition.synthesize" and r["phase"] == "task"]
    assert any(_overlap(s, p) and s["map_index"] != p["map_index"] for s in synths for p in proves), \
        "synthesis never overlapped a prove_gpu: the DAG is not pipelining partitions"

    # The SIGKILLed synthesize: its first attempt wrote no rows (killed before the flush)
    # and left no segment leased (its retry's lease replaced it, the proof released that),
    # its retry (try 2) has each phase exactly once.
    assert marker.exists(), "the fault was injected"
    synth_tis = {t["map_index"]: t for t in tis if t["task_id"] == "partition.synthesize"}
    killed = [mi for mi, t in synth_tis.items() if t["try_number"] == 2]
    assert len(killed) == 1, {mi: t["try_number"] for mi, t in synth_tis.items()}
    k = killed[0]
    krows = [r for r in rows if r["task_id"] == "partition.synthesize" and r["map_index"] == k]
    assert sorted((r["try_number"], r["phase"]) for r in krows) == \
        [(2, "staging_wait"), (2, "synthesis"), (2, "task"), (2, "witness_map")]
    from proofflow.prover.staging.shared import SharedStaging
    assert SharedStaging.from_settings().leases() == []
    # pool_wait is recorded for every prove_gpu, measured from its stage finishing
    waits = [r for r in rows if r["task_id"] == "partition.prove_gpu" and r["phase"] == "pool_wait"]
    assert len(waits) == PARTITIONS and all(r["end"] >= r["start"] for r in waits)
    # and queue_wait (queued -> start) from the task instance, through the REST API
    queued = {r["map_index"]: r for r in rows if r["task_id"] == "partition.prove_gpu" and r["phase"] == "queue_wait"}
    assert sorted(queued) == list(range(PARTITIONS))
    for w in waits:
        assert queued[w["map_index"]]["end"] == w["end"] and queued[w["map_index"]]["start"] >= w["start"]
