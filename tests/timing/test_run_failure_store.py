"""A failed run's cause in the timing store's runs row (migration 0008), on SQLite and Postgres."""
import time

from sqlalchemy import inspect, text

from proofflow.timing import TimingStore
from proofflow.timing.store import alembic_config

CAUSE = dict(task_id="partition.synthesize", message="circuit rejects the inputs (an assert failed)", map_index=1,
             input="run-x/0001-bad.json")


def _to(store, revision, step):
    with store.engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        step(cfg, revision)


def test_a_runs_row_keeps_the_cause(store_url):
    from proofflow.spec import RunFailure
    cause = RunFailure(**CAUSE)
    store = TimingStore(store_url)
    rid = f"failed-{time.time_ns()}"
    store.upsert_run("proof_run", rid, state="failed", **cause.columns())
    row = store.run("proof_run", rid)
    assert RunFailure.from_row(row) == cause
    assert row["error"] == cause.message and row["failed_map_index"] == 1
    assert cause.line() == ("partition 1 (run-x/0001-bad.json) failed in partition.synthesize: "
                            "circuit rejects the inputs (an assert failed)")
    store.dispose()


def test_migration_0008_adds_the_cause_and_keeps_the_rows(store_url):
    from alembic import command
    store = TimingStore(store_url)
    rid = f"old-{time.time_ns()}"
    _to(store, "0007", command.downgrade)
    assert "error" not in {c["name"] for c in inspect(store.engine).get_columns("runs")}
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (dag_id, run_id, circuit, state) VALUES ('proof_run', :r, 'mimc', "
                          "'failed')"), {"r": rid})
    _to(store, "0008", command.upgrade)
    with store.engine.connect() as conn:  # as revision 0008 has it (the models may have columns of later ones)
        row = conn.execute(text("SELECT circuit, failed_task, error FROM runs WHERE run_id = :r"), {"r": rid}
                           ).mappings().one()
    assert row["circuit"] == "mimc" and row["failed_task"] is None and row["error"] is None
    _to(store, "0007", command.downgrade)
    assert not {"failed_task", "error"} & {c["name"] for c in inspect(store.engine).get_columns("runs")}
    _to(store, "head", command.upgrade)
    store.dispose()
