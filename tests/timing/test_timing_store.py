"""The timing store on SQLite and on the local Postgres: schema, migrations, upserts."""
import datetime as dt
import time
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from proofflow.timing import TimingStore, metadata, schema_sql
from proofflow.timing.store import SCHEMA_REVISION, VERSION_TABLE, alembic_config

ROOT = Path(__file__).resolve().parents[2]


def _row(**kw):
    t = time.time()
    row = dict(run_id="run-1", dag_id="proof_run", task_id="partition.prove_gpu", map_index=0, try_number=1,
               partition=0, phase="msm", host="h", device="cpu", start=t, end=t + 0.25)
    row.update(kw)
    return row


def test_schema_sql_matches_metadata():
    assert (ROOT / "sql" / "schema.sql").read_text() == schema_sql(), \
        "sql/schema.sql is stale: run `python -m proofflow.timing.schema`"


def test_migrations_build_the_metadata(store_url):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    store = TimingStore(store_url)
    assert store.current_revision() == TimingStore.head_revision()
    with store.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE, "compare_type": True})
        diffs = [d for d in compare_metadata(ctx, metadata)
                 if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == VERSION_TABLE)]
    assert diffs == []
    assert {"runs", "task_timings", "transfers", VERSION_TABLE} <= set(inspect(store.engine).get_table_names())
    assert "phase_spans" in inspect(store.engine).get_view_names()
    store.dispose()


def test_phase_spans_view(store_url):
    store = TimingStore(store_url)
    rid = f"run-{time.time_ns()}"
    store.record_timings([_row(run_id=rid, phase=p) for p in ("pool_wait", "h2d", "ntt", "msm", "d2h", "finalize", "task")]
                         + [_row(run_id=rid, task_id="partition.synthesize", phase="synthesis")])
    with store.engine.connect() as conn:
        phases = conn.execute(text("SELECT phase FROM phase_spans WHERE run_id = :r"), {"r": rid}).scalars().all()
    assert sorted(phases) == sorted(["pool_wait", "h2d", "ntt", "msm", "d2h", "finalize"])
    store.dispose()


def test_upgrade_is_idempotent_and_downgrade_works(sqlite_url):
    from alembic import command
    store = TimingStore(sqlite_url)
    store.upgrade("head")  # again: nothing to do
    with store.engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
    assert "task_timings" not in inspect(store.engine).get_table_names()
    assert "phase_spans" not in inspect(store.engine).get_view_names()
    store.upgrade()
    assert "task_timings" in inspect(store.engine).get_table_names()


def test_the_migrations_views_are_views_py(sqlite_url):
    """The views the migrations leave at head (their frozen copies) are views.py's, as
    sql/schema.sql lists them. SQLite keeps each view's text as created."""
    from proofflow.timing.views import views_for
    store = TimingStore(sqlite_url)
    with store.engine.connect() as conn:
        created = dict(conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'view'")).all())
    assert created == views_for("sqlite")
    store.dispose()


def test_downgrade_to_0005_and_back(store_url):
    """0006 adds the requested backend and staging to runs and the union views; going back
    restores 0005's views and columns, and up again."""
    from alembic import command
    store = TimingStore(store_url)
    store.upsert_run("proof_run", "down-0006", backend="cpu", staging="pageable", staging_requested="pinned")

    def to(revision, step):
        with store.engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            step(cfg, revision)
    to("0005", command.downgrade)
    columns = {c["name"] for c in inspect(store.engine).get_columns("runs")}
    assert "staging_requested" not in columns and "staging" in columns
    assert "device_spans" not in inspect(store.engine).get_view_names()
    assert store.query("SELECT staging FROM run_summary WHERE run_id = 'down-0006'") == [{"staging": "pageable"}]
    to("head", command.upgrade)
    assert "device_spans" in inspect(store.engine).get_view_names()
    assert store.run("proof_run", "down-0006")["staging_requested"] is None  # the dropped column's values are gone
    store.dispose()


def test_the_run_curve_migration_keeps_the_rows(sqlite_url):
    """0007 adds runs.curve to a store at 0006 (rows kept, their curve empty) and takes it away again."""
    from alembic import command
    store = TimingStore(sqlite_url)
    cfg = alembic_config()
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0006")
    assert "curve" not in {c["name"] for c in inspect(store.engine).get_columns("runs")}
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (dag_id, run_id, circuit, state) VALUES ('d', 'r', 'mimc', 'success')"))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")  # store.run reads the columns of head
    assert store.run("d", "r")["curve"] is None and store.run("d", "r")["circuit"] == "mimc"
    store.dispose()


def test_schema_revision_is_alembic_head():
    assert SCHEMA_REVISION == TimingStore.head_revision(), "a new migration: set store.SCHEMA_REVISION to it"


def test_a_store_at_head_opens_without_alembic(store_url, monkeypatch):
    """A process opening a store already at head (every task after the first) reads the
    version table only; one below head still gets the full check and the upgrade."""
    from proofflow.timing import store as store_mod
    TimingStore(store_url).dispose()  # at head now
    store_mod._migrated.discard(store_url)

    def no_alembic(*_a, **_k):
        raise AssertionError("Alembic consulted for a store at head")
    monkeypatch.setattr(TimingStore, "head_revision", staticmethod(no_alembic))
    monkeypatch.setattr(TimingStore, "current_revision", no_alembic)
    TimingStore(store_url).dispose()
    monkeypatch.undo()

    store = TimingStore(store_url)
    with store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '0004'"))
    store_mod._migrated.discard(store_url)
    upgraded = []
    monkeypatch.setattr(TimingStore, "upgrade", lambda self, rev="head": upgraded.append(rev))
    TimingStore(store_url).dispose()
    assert upgraded == ["head"]
    with store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = :v"), {"v": SCHEMA_REVISION})
    store.dispose()


def test_rerun_never_duplicates_retry_adds_rows(store_url):
    store = TimingStore(store_url)
    rid = f"run-{time.time_ns()}"
    store.record_timings([_row(run_id=rid), _row(run_id=rid, phase="ntt")])
    store.record_timings([_row(run_id=rid, end=time.time() + 1)])  # the same try again: replaced, not added
    rows = store.timings("proof_run", rid)
    assert sorted((r["phase"], r["try_number"]) for r in rows) == [("msm", 1), ("ntt", 1)]
    store.record_timings([_row(run_id=rid, try_number=2)])  # a retry: its own rows
    rows = store.timings("proof_run", rid)
    assert sorted((r["phase"], r["try_number"]) for r in rows) == [("msm", 1), ("msm", 2), ("ntt", 1)]
    for r in rows:
        assert r["end"] >= r["start"] and r["start"].tzinfo is not None
        assert r["duration_s"] == pytest.approx((r["end"] - r["start"]).total_seconds(), abs=1e-5)
    store.record_transfers([dict(run_id=rid, dag_id="proof_run", task_id="t", map_index=0, partition=0, try_number=1,
                                 direction="h2d", bytes=2 * 10**9, memory_kind="pinned", duration_s=0.5)] * 2)
    (tr,) = store.transfers("proof_run", rid)
    assert tr["gbps"] == pytest.approx(4.0)
    store.dispose()


def test_writes_use_bound_parameters(store_url):
    store = TimingStore(store_url)
    evil = "x'); DROP TABLE task_timings; --"
    store.record_timings([_row(run_id=evil, phase=evil, host=evil)])
    (r,) = store.timings("proof_run", evil)
    assert r["phase"] == evil and r["host"] == evil
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM task_timings WHERE run_id = :r"), {"r": evil}).scalar() == 1
    store.dispose()


def test_runs_upsert_merges_fields(store_url):
    store = TimingStore(store_url)
    rid = f"run-{time.time_ns()}"
    t0 = dt.datetime.now(dt.timezone.utc)
    store.upsert_run("proof_run", rid, circuit="mimc", log2=10, curve="bls12_381", partitions=4, started_at=t0)
    store.upsert_run("proof_run", rid, state="success", proofs_verified=4, wall_s=1.5)
    r = store.run("proof_run", rid)
    assert (r["circuit"], r["curve"], r["partitions"], r["state"], r["proofs_verified"]) == \
        ("mimc", "bls12_381", 4, "success", 4)
    assert abs((r["started_at"] - t0).total_seconds()) < 1e-3
    store.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_concurrent_first_use_migrates_once(kind, tmp_path, request):
    """Several task processes opening a fresh store at once: the migration lock serializes
    them, every one succeeds and the schema is at head."""
    import subprocess
    import sys
    url = f"sqlite:///{tmp_path / 'fresh.db'}" if kind == "sqlite" else request.getfixturevalue("pg_new_database")("mig")
    code = ("import sys; from proofflow.timing import TimingStore; s = TimingStore(sys.argv[1]); "
            "s.record_timings([dict(run_id='r', dag_id='d', task_id=sys.argv[2], try_number=1, phase='p', start=0, end=1)]);"
            "print(s.current_revision())")
    procs = [subprocess.Popen([sys.executable, "-c", code, url, f"t{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs]
    head = TimingStore.head_revision()
    assert [o[0].strip() for o in outs] == [head] * 4
    assert len(TimingStore(url).timings("d", "r")) == 4
