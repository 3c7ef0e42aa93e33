"""``TimingStore``: the timing tables behind one SQLAlchemy URL.

Postgres (psycopg2) for deployments, SQLite (a file) as the embedded default. The schema
is brought to Alembic's ``head`` on first use (under a lock: an advisory lock on Postgres,
a lock file next to the SQLite database), so concurrent first tasks never race. Every write
is a bound-parameter upsert on the table's unique key, and a task's rows (timings and
transfers) go in one transaction: a task killed while writing leaves all of them or none.

Rows of the proof-run tables (task_timings, transfers, runs) are checked before anything is
written (``InvalidRow`` names the row, the field and the value). A lost connection (the
database restarting, a network blip) is retried for up to PROOFFLOW_DB_RETRY_S seconds
(default 60; writes are idempotent upserts, so a retried transaction never duplicates),
then fails with ``StoreUnavailable``.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import logging
import math
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from sqlalchemy import (BigInteger, DateTime, Engine, Float, Integer, String, Table, Text, create_engine, event, func,
                        select, text)
from sqlalchemy.sql import column, table as table_clause
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.schema import CreateIndex, CreateTable

from proofflow import settings, spec
from proofflow.timing.models import (CHECK_RESULT_KEY, RUN_KEY, TIMING_KEY, TRANSFER_KEY, calibrations, check_results, h2d_flags, metadata, report_settings, runs, task_timings, transfers)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "proofflow_alembic_version"
# The newest migration's revision (a test holds it equal to Alembic's head): a store already
# there is recognized by one SELECT, so a task process does not load Alembic and its scripts.
SCHEMA_REVISION = "0009"
_ADVISORY_LOCK_KEY = 0x70726F6F66  # "proof"
_migrated: set[str] = set()
TIMESTAMP_COLUMNS = {"start", "end", "started_at", "finished_at", "created_at", "ready_at", "window_start",
                     "window_end", "gpu_start", "gpu_end"}
_migrated_lock = threading.Lock()
log = logging.getLogger(__name__)

INT64 = (-(1 << 63), (1 << 63) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
MEMORY_KINDS = tuple(k.value for k in spec.MemoryKind)
RUN_STATES = ("running", "success", "failed", "duplicate")  # duplicate: proofflow.timing.requests
SERVED_STATES = ("success", "duplicate")  # a run that ended without failing: proved, or its request was
# Beyond the column types, what a value of the proof-run tables must also satisfy: a
# minimum, or the allowed strings.
_RULES = {
    "task_timings": {"map_index": -1, "try_number": 1, "partition": 0, "duration_s": 0},
    "transfers": {"map_index": -1, "try_number": 1, "partition": 0, "bytes": 0, "duration_s": 0, "gbps": 0,
                  "memory_kind": MEMORY_KINDS},
    "runs": {"log2": 0, "partitions": 0, "seed": 0, "proofs_verified": 0, "wall_s": 0, "state": RUN_STATES},
}


class InvalidRow(ValueError):
    """A row the store refuses (a wrong type, a value out of range, an unknown column)."""


class StoreUnavailable(RuntimeError):
    """The timing store's database stayed unreachable for the whole retry window."""


def retry_window_s() -> float:
    return settings.current().db_retry_s


def _reconnecting(method):
    """Run a store operation again when the database connection is lost, for up to
    ``retry_window_s()``: each operation is one transaction of idempotent statements."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        deadline = time.monotonic() + retry_window_s()
        delay = 0.1
        while True:
            try:
                return method(self, *args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                reason = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [type(exc).__name__])[0]
                if time.monotonic() + delay > deadline:
                    raise StoreUnavailable(f"timing store {self.safe_url} unreachable for {retry_window_s():.0f} s "
                                           f"(PROOFFLOW_DB_RETRY_S): {reason}") from None
                log.warning("timing store %s: %s; retrying in %.1f s", self.safe_url, reason, delay)
                self.engine.dispose()  # pooled connections to a restarted server are dead
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
    return wrapper


def _is_time(v) -> bool:
    return isinstance(v, dt.datetime) or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def _check_value(table: Table, name: str, v) -> str | None:
    """Why ``v`` cannot go into ``table.name`` (None: it can)."""
    col = table.c[name]
    if v is None:
        return None if col.nullable or col.server_default is not None else "must not be null"
    kind = col.type
    if isinstance(kind, DateTime):
        if not _is_time(v):
            return "must be a datetime or epoch seconds"
    elif isinstance(kind, (Integer, BigInteger)):
        lo, hi = INT64 if isinstance(kind, BigInteger) else INT32
        if isinstance(v, bool) or not isinstance(v, int):
            return "must be an integer"
        if not lo <= v <= hi:
            return f"is out of range for a {'64' if isinstance(kind, BigInteger) else '32'}-bit integer column"
    elif isinstance(kind, Float):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return "must be a finite number"
    elif isinstance(kind, (String, Text)):
        if not isinstance(v, str):
            return "must be a string"
        if "\x00" in v:
            return "contains a NUL character"
        if isinstance(kind, String) and kind.length and len(v) > kind.length:
            return f"is longer than {kind.length} characters"
        if not col.nullable and not v:
            return "must not be empty"
    rule = _RULES.get(table.name, {}).get(name)
    if isinstance(rule, tuple) and v not in rule:
        return f"must be one of {', '.join(rule)}"
    if isinstance(rule, int) and v < rule:
        return f"must be >= {rule}"
    return None


def check_rows(table: Table, required: Iterable[str], rows: list[dict]) -> None:
    """Raise InvalidRow naming the first bad field of the first bad row (nothing written)."""
    cols = {c.name for c in table.columns} - {"id"}
    for i, r in enumerate(rows):
        where = f"{table.name} row {i}" + "".join(f" {k}={r[k]!r}" for k in ("task_id", "phase", "direction")
                                                  if isinstance(r.get(k), str))
        unknown = sorted(set(r) - cols)
        if unknown:
            raise InvalidRow(f"{where}: unknown column(s) {', '.join(unknown)}")
        for k in required:
            if k not in r and table.c[k].server_default is None:
                raise InvalidRow(f"{where}: {k} is missing")
        for name, v in r.items():
            why = _check_value(table, name, v)
            if why:
                raise InvalidRow(f"{where}: {name} {why}, got {v!r}")
        if r.get("start") is not None and r.get("end") is not None and utc(r["end"]) < utc(r["start"]):
            raise InvalidRow(f"{where}: end {r['end']} is before start {r['start']}")


def utc(t) -> dt.datetime:
    """A timezone-aware UTC datetime from a datetime (naive means UTC) or epoch seconds."""
    if isinstance(t, (int, float)):
        return dt.datetime.fromtimestamp(t, dt.timezone.utc)
    if t.tzinfo is None:
        return t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc)


def schema_sql() -> str:
    """The tables as Postgres DDL, the content of ``sql/schema.sql``."""
    from sqlalchemy.dialects import postgresql
    dialect = postgresql.dialect()
    out = ["-- proofflow timing store, generated from proofflow/timing/models.py by",
           "-- `python -m proofflow.timing.schema` (tests check this file is current).",
           "-- Managed by the Alembic migrations in proofflow/timing/migrations; this file is for reference.",
           ""]
    for table in metadata.sorted_tables:
        ddl = str(CreateTable(table).compile(dialect=dialect)).strip()
        out.append("\n".join(line.rstrip() for line in ddl.splitlines()) + ";")
        out.append("")
        for index in sorted(table.indexes, key=lambda i: i.name):
            out.append(str(CreateIndex(index).compile(dialect=dialect)).strip() + ";")
            out.append("")
    from proofflow.timing.views import views_for
    for sql in views_for("postgresql").values():
        out += [sql + ";", ""]
    return "\n".join(out)


def alembic_config(url: str | None = None):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("path_separator", "os")
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def resolve_url(from_connection: Callable[[], str | None] | None = None) -> str:
    """The timing store's URL, the one order every caller uses: PROOFFLOW_DB_URL, else what
    ``from_connection`` finds (the Airflow connection, looked up by the hooks of
    ``proofflow.airflow``), else the SQLite file in the proofflow home."""
    current = settings.current()
    return current.db_url or (from_connection() if from_connection else None) or current.default_db_url


_open: dict[str, "TimingStore"] = {}
_open_lock = threading.Lock()


def open_store(url: str | None = None) -> "TimingStore":
    """This process's store for ``url`` (default: ``resolve_url()``), one engine per URL."""
    url = url or resolve_url()
    with _open_lock:
        if url not in _open:
            _open[url] = TimingStore(url)
        return _open[url]


class TimingStore:
    def __init__(self, url: str, migrate: bool = True):
        self.url = url
        u = make_url(url)
        self.dialect = u.get_backend_name()
        kwargs: dict = {"future": True}
        if self.dialect == "sqlite":
            if u.database and u.database != ":memory:":
                Path(u.database).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs["pool_pre_ping"] = True
        self.engine: Engine = create_engine(url, **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        if migrate:
            self.ensure_schema()

    # -- schema ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _migration_lock(self, conn) -> Iterator[None]:
        if self.dialect == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _ADVISORY_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _ADVISORY_LOCK_KEY})
        elif self.dialect == "sqlite" and self.engine.url.database not in (None, "", ":memory:"):
            with open(f"{self.engine.url.database}.migrate.lock", "w") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
        else:
            yield

    @property
    def safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @_reconnecting
    def current_revision(self) -> str | None:
        from alembic.runtime.migration import MigrationContext
        with self.engine.connect() as conn:
            return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()

    @staticmethod
    def head_revision() -> str:
        from alembic.script import ScriptDirectory
        return ScriptDirectory.from_config(alembic_config()).get_current_head()

    @_reconnecting
    def upgrade(self, revision: str = "head") -> None:
        """``alembic upgrade`` programmatically, on this store's engine, under the lock."""
        from alembic import command
        with self.engine.connect() as lock_conn:
            with self._migration_lock(lock_conn):
                lock_conn.commit()
                with self.engine.begin() as conn:
                    cfg = alembic_config()
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, revision)

    def _stored_revisions(self) -> list[str] | None:
        """The version table's rows, or None where it cannot be read (no table yet, the
        database unreachable: the full check that follows retries and says why)."""
        try:
            with self.engine.connect() as conn:
                stmt = select(column("version_num")).select_from(table_clause(VERSION_TABLE))
                return list(conn.execute(stmt).scalars())
        except SQLAlchemyError:
            return None

    def ensure_schema(self) -> None:
        key = self.url
        with _migrated_lock:
            if key in _migrated:
                return
            if self._stored_revisions() != [SCHEMA_REVISION] and self.current_revision() != self.head_revision():
                self.upgrade("head")
            _migrated.add(key)

    def dispose(self) -> None:
        self.engine.dispose()

    # -- writes ---------------------------------------------------------------------------
    def _upsert_rows(self, conn, table: Table, key: Iterable[str], rows: list[dict]) -> int:
        if not rows:
            return 0
        key = list(key)
        cols = {c.name for c in table.columns} - {"id"}
        rows = [{k: v for k, v in r.items() if k in cols} for r in rows]
        updatable = sorted(set().union(*rows) - set(key))
        if self.dialect in ("postgresql", "sqlite"):
            if self.dialect == "postgresql":
                from sqlalchemy.dialects.postgresql import insert
            else:
                from sqlalchemy.dialects.sqlite import insert
            for row in rows:  # one statement per row: rows may carry different column sets
                stmt = insert(table).values(**row)
                upd = [c for c in updatable if c in row]
                stmt = (stmt.on_conflict_do_update(index_elements=key, set_={c: stmt.excluded[c] for c in upd})
                        if upd else stmt.on_conflict_do_nothing(index_elements=key))
                conn.execute(stmt)
            return len(rows)
        for row in rows:  # portable fallback: select, then update or insert
            cond = [table.c[k] == row[k] for k in key]
            if conn.execute(select(func.count()).select_from(table).where(*cond)).scalar():
                upd = {c: row[c] for c in updatable if c in row}
                if upd:
                    conn.execute(table.update().where(*cond).values(**upd))
            else:
                conn.execute(table.insert().values(**row))
        return len(rows)

    @_reconnecting
    def _write(self, batches: list[tuple[Table, Iterable[str], list[dict]]]) -> int:
        """Upsert several tables' rows in one transaction."""
        with self.engine.begin() as conn:
            return sum(self._upsert_rows(conn, table, key, rows) for table, key, rows in batches)

    def _upsert(self, table: Table, key: Iterable[str], rows: list[dict]) -> int:
        return self._write([(table, key, rows)])

    @staticmethod
    def _timing_rows(rows: list[dict]) -> list[dict]:
        check_rows(task_timings, TIMING_KEY + ("start", "end"), rows)  # all of them before anything is written
        out = []
        for r in rows:
            r = dict(r)
            r["start"], r["end"] = utc(r["start"]), utc(r["end"])
            r.setdefault("duration_s", (r["end"] - r["start"]).total_seconds())
            r.setdefault("map_index", -1)
            out.append(r)
        return out

    @staticmethod
    def _transfer_rows(rows: list[dict]) -> list[dict]:
        check_rows(transfers, TRANSFER_KEY + ("bytes", "memory_kind", "duration_s"), rows)
        out = []
        for r in rows:
            r = dict(r)
            if r.get("start") is not None:
                r["start"] = utc(r["start"])
            r.setdefault("map_index", -1)
            if r.get("gbps") is None and r.get("duration_s"):
                r["gbps"] = r["bytes"] / r["duration_s"] / 1e9
            out.append(r)
        return out

    def record_timings(self, rows: list[dict]) -> int:
        """Upsert task_timings rows (start/end as datetimes or epoch seconds)."""
        return self._upsert(task_timings, TIMING_KEY, self._timing_rows(rows))

    def record_transfers(self, rows: list[dict]) -> int:
        return self._upsert(transfers, TRANSFER_KEY, self._transfer_rows(rows))

    def record_attempt(self, timings: list[dict], transfer_rows: list[dict]) -> int:
        """A task attempt's timing rows and transfers, in one transaction."""
        return self._write([(task_timings, TIMING_KEY, self._timing_rows(timings)),
                            (transfers, TRANSFER_KEY, self._transfer_rows(transfer_rows))])

    def upsert_run(self, dag_id: str, run_id: str, **fields) -> None:
        row = {"dag_id": dag_id, "run_id": run_id, **fields}
        check_rows(runs, RUN_KEY, [row])
        for k in ("started_at", "finished_at"):
            if row.get(k) is not None:
                row[k] = utc(row[k])
        self._upsert(runs, RUN_KEY, [row])

    # -- reads ----------------------------------------------------------------------------
    @_reconnecting
    def _rows(self, stmt) -> list[dict]:
        with self.engine.connect() as conn:
            out = [dict(r._mapping) for r in conn.execute(stmt)]
        for r in out:
            for k in ("start", "end", "started_at", "finished_at"):
                if isinstance(r.get(k), dt.datetime):
                    r[k] = utc(r[k])
        return out

    def timings(self, dag_id: str, run_id: str, task_id: str | None = None) -> list[dict]:
        t = task_timings
        stmt = select(t).where(t.c.dag_id == dag_id, t.c.run_id == run_id)
        if task_id is not None:
            stmt = stmt.where(t.c.task_id == task_id)
        return self._rows(stmt.order_by(t.c.start, t.c.id))

    def transfers(self, dag_id: str, run_id: str) -> list[dict]:
        t = transfers
        return self._rows(select(t).where(t.c.dag_id == dag_id, t.c.run_id == run_id).order_by(t.c.id))

    def run(self, dag_id: str, run_id: str) -> dict | None:
        rows = self._rows(select(runs).where(runs.c.dag_id == dag_id, runs.c.run_id == run_id))
        return rows[0] if rows else None

    def claim_request(self, dag_id: str, run_id: str, request_id: str, **fields) -> dict | None:
        """The run's row written with ``fields``, holding ``request_id`` (returns None); or,
        when another run of the dag holds it (the unique index ``uq_runs_request`` refused
        the write, so two runs claiming it at once cannot both win), that run's row, nothing
        written."""
        try:
            self.upsert_run(dag_id, run_id, request_id=request_id, **fields)
            return None
        except IntegrityError:
            holder = self._rows(select(runs).where(runs.c.dag_id == dag_id, runs.c.request_id == request_id))
            if not holder:
                raise
            return holder[0]

    def latest_runs(self, dag_id: str, limit: int, state: str | None = None) -> list[dict]:
        """The dag's runs, the latest started first (of ``state`` only, when given)."""
        stmt = select(runs).where(runs.c.dag_id == dag_id)
        if state is not None:
            stmt = stmt.where(runs.c.state == state)
        return self._rows(stmt.order_by(runs.c.started_at.desc().nulls_last(), runs.c.run_id.desc()).limit(limit))

    @_reconnecting
    def latest_end(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> dt.datetime | None:
        """When the latest attempt of a task instance finished (its latest row's end)."""
        t = task_timings
        stmt = select(func.max(t.c.end)).where(t.c.dag_id == dag_id, t.c.run_id == run_id, t.c.task_id == task_id,
                                                t.c.map_index == map_index)
        with self.engine.connect() as conn:
            v = conn.execute(stmt).scalar()
        return utc(v) if isinstance(v, dt.datetime) else (utc(dt.datetime.fromisoformat(v)) if v else None)

    def phase_summary(self, dag_id: str, run_id: str) -> list[dict]:
        """Per (task, phase) over all the run's rows: count, total, mean and max seconds."""
        t = task_timings
        stmt = (select(t.c.task_id, t.c.phase, func.count().label("count"), func.sum(t.c.duration_s).label("total_s"),
                       func.avg(t.c.duration_s).label("mean_s"), func.max(t.c.duration_s).label("max_s"))
                .where(t.c.dag_id == dag_id, t.c.run_id == run_id)
                .group_by(t.c.task_id, t.c.phase).order_by(func.min(t.c.start)))
        return self._rows(stmt)

    # -- calibration, checks, reporting (issue 6) -------------------------------------------
    def record_calibration(self, rows: list[dict]) -> int:
        """Insert one calibration batch (rows share host, device, memory_kind, batch)."""
        out = []
        for r in rows:
            r = dict(r)
            r["created_at"] = utc(r.get("created_at") or dt.datetime.now(dt.timezone.utc))
            out.append(r)
        return self._upsert(calibrations, ("host", "device", "memory_kind", "batch", "bytes"), out)

    def calibration(self, host: str, device: str, memory_kind: str | None = None) -> list[dict]:
        """The latest calibration batch of (host, device, memory kind): its rows by size. The
        kind defaults to what the device's reference copy uses: pinned on a GPU, pageable on
        the CPU (which has no page-locked memory)."""
        memory_kind = memory_kind or ("pinned" if device.startswith("cuda") else "pageable")
        c = calibrations
        cond = (c.c.host == host, c.c.device == device, c.c.memory_kind == memory_kind)
        latest = (select(c.c.batch).where(*cond).order_by(c.c.created_at.desc(), c.c.id.desc()).limit(1))
        batch = self._scalar(latest)
        if batch is None:
            # a simulated device of the CPU backend ("cpu:N") copies through the host's memory
            return self.calibration(host, "cpu", memory_kind) if device.startswith("cpu:") else []
        return self._rows(select(c).where(*cond, c.c.batch == batch).order_by(c.c.bytes))

    def calibrations(self) -> list[dict]:
        return self._rows(select(calibrations).order_by(calibrations.c.created_at, calibrations.c.bytes))

    @_reconnecting
    def _scalar(self, stmt):
        with self.engine.connect() as conn:
            return conn.execute(stmt).scalar()

    @_reconnecting
    def replace_flags(self, dag_id: str, run_id: str, rows: list[dict]) -> int:
        """The run's H2D flags become ``rows`` (a re-check replaces, never duplicates)."""
        now = dt.datetime.now(dt.timezone.utc)
        with self.engine.begin() as conn:
            conn.execute(h2d_flags.delete().where(h2d_flags.c.dag_id == dag_id, h2d_flags.c.run_id == run_id))
            for r in rows:
                conn.execute(h2d_flags.insert().values(**{"created_at": now, **r, "dag_id": dag_id, "run_id": run_id}))
        return len(rows)

    def flags(self, dag_id: str, run_id: str) -> list[dict]:
        f = h2d_flags
        return self._rows(select(f).where(f.c.dag_id == dag_id, f.c.run_id == run_id).order_by(f.c.partition, f.c.id))

    def record_check_result(self, **row) -> None:
        row.setdefault("created_at", dt.datetime.now(dt.timezone.utc))
        self._upsert(check_results, CHECK_RESULT_KEY, [row])

    def check_results(self, dag_id: str, run_id: str) -> list[dict]:
        c = check_results
        return self._rows(select(c).where(c.c.dag_id == dag_id, c.c.run_id == run_id).order_by(c.c.id))

    def set_report_setting(self, name: str, value: float) -> None:
        self._upsert(report_settings, ("name",), [{"name": name, "value": float(value)}])

    @_reconnecting
    def query(self, sql: str, params: dict | None = None) -> list[dict]:
        """Rows of a read-only SQL text (the reporting views), with bound parameters.
        Timestamp columns come back as aware UTC datetimes on both dialects (SQLite returns
        a view's timestamps as text)."""
        with self.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(text(sql), params or {})]
        for r in rows:
            for k, v in r.items():
                if k in TIMESTAMP_COLUMNS and v is not None:
                    r[k] = utc(dt.datetime.fromisoformat(v) if isinstance(v, str) else v)
        return rows
