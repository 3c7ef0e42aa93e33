"""Idempotent submission in the timing store (``proofflow.timing.requests``, migration 0009):
one run of a dag holds a request id, a later run of the same request is its duplicate, a
request id reused for other parameters is refused; on SQLite and Postgres."""
import threading
import time

import pytest
from sqlalchemy import inspect, text

from proofflow.spec import InvalidParams
from proofflow.timing import TimingStore
from proofflow.timing.requests import Served, claim

ROW = dict(circuit="mimc", log2=8, partitions=2, backend="cpu", staging="pageable", backend_requested="cpu",
           staging_requested="pinned", seed=3, curve="bls12_381", state="running", host="h")


def _rid(label: str) -> str:
    return f"{label}-{time.time_ns()}"


def test_a_second_run_of_a_request_is_its_first_run_s_duplicate(store_url):
    store = TimingStore(store_url)
    request, first, second = _rid("req"), _rid("first"), _rid("second")
    assert claim(store, "proof_run", first, request, {**ROW, "started_at": time.time()}) is None
    assert store.run("proof_run", first)["request_id"] == request
    store.upsert_run("proof_run", first, state="success", bundle_dir="/b/first")
    served = claim(store, "proof_run", second, request, {**ROW, "started_at": time.time()})
    assert served == Served(request, first, "success", "/b/first")
    assert served.line() == f"request {request!r} is run {first} (success, bundle /b/first): not proved again"
    row = store.run("proof_run", second)
    assert (row["state"], row["duplicate_of"], row["request_id"]) == ("duplicate", first, None)
    assert row["circuit"] is None and row["finished_at"] is not None  # it proved nothing
    # the holder run again (cleared in Airflow) keeps its request; another dag's runs are apart
    assert claim(store, "proof_run", first, request, ROW) is None
    assert claim(store, "other_dag", second, request, ROW) is None
    store.dispose()


def test_a_request_id_reused_for_other_parameters_is_refused(store_url):
    store = TimingStore(store_url)
    request, first = _rid("req"), _rid("first")
    claim(store, "proof_run", first, request, ROW)
    with pytest.raises(InvalidParams, match=rf"request_id '{request}' is run {first}'s, which asked for other "
                                            r"parameters \(log2 8 there, 9 here; seed 3 there, 4 here\)"):
        claim(store, "proof_run", _rid("second"), request, {**ROW, "log2": 9, "seed": 4})
    store.dispose()


def test_runs_claiming_one_request_at_once_leave_one_holder(store_url):
    store = TimingStore(store_url)
    request, runs = _rid("req"), [_rid(f"r{i}") for i in range(6)]
    results, barrier = {}, threading.Barrier(len(runs))

    def go(run_id):
        barrier.wait()
        results[run_id] = claim(store, "proof_run", run_id, request, ROW)
    threads = [threading.Thread(target=go, args=(r,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    holders = [r for r, served in results.items() if served is None]
    assert len(results) == len(runs) and len(holders) == 1
    assert {served.run_id for served in results.values() if served} == set(holders)
    assert sorted(store.run("proof_run", r)["state"] for r in runs) == ["duplicate"] * 5 + ["running"]
    store.dispose()


def test_migration_0009_adds_the_request_and_keeps_the_rows(store_url):
    from alembic import command
    from proofflow.timing.store import alembic_config

    def to(revision, step):
        with store.engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            step(cfg, revision)
    store = TimingStore(store_url)
    rid = _rid("old")
    to("0008", command.downgrade)
    assert "request_id" not in {c["name"] for c in inspect(store.engine).get_columns("runs")}
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (dag_id, run_id, circuit, state) VALUES ('proof_run', :r, 'mimc', "
                          "'success')"), {"r": rid})
    to("0009", command.upgrade)
    row = store.run("proof_run", rid)
    assert row["circuit"] == "mimc" and row["request_id"] is None and row["duplicate_of"] is None
    assert "uq_runs_request" in {i["name"] for i in inspect(store.engine).get_indexes("runs")}
    to("0008", command.downgrade)
    assert not {"request_id", "duplicate_of"} & {c["name"] for c in inspect(store.engine).get_columns("runs")}
    to("head", command.upgrade)
    store.dispose()
