"""The project's Airflow setup: metadata DB, the ``gpu`` pool, the timing-store connection,
and under the FAB auth manager the user of the REST API connection.

``proofflow setup`` runs it against whatever Airflow the environment configures (a real
deployment); ``proofflow run`` runs it on a local, self-contained AIRFLOW_HOME (SQLite).
``configure_env`` must run before Airflow is imported: Airflow reads its configuration at
import time.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from proofflow import settings

POOL_DESCRIPTION = ("prove_gpu slots: per GPU, one (in-process: the GPU mutex) or the prefetch depth (prover "
                    "service: the service holds the device); created by proofflow setup")


def configure_env() -> dict:
    """Point Airflow at the embedded home (PROOFFLOW_AIRFLOW_HOME, SQLite metadata DB inside
    it) and the DAG files. The proofflow home is fixed first: setting AIRFLOW_HOME must not
    move it from where a plain shell finds it (``proofflow report`` after ``run``)."""
    current = settings.current()
    settings.set_home(current.home)
    home = current.local_airflow_home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(current.dags_folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
    }
    settings.configure_airflow(env)
    return env


def _schema_revision(url: str) -> str | None:
    """The Alembic revision Airflow's migrations left in the metadata DB at ``url``; None
    when it has none (a new or recreated database) or cannot be read."""
    from sqlalchemy import create_engine, exc, text
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except exc.SQLAlchemyError:
        return None
    finally:
        engine.dispose()


def migrate_metadata_db(log_path: Path | None = None) -> None:
    """``airflow db migrate`` (a subprocess: it configures logging its own way). Skipped
    when this home's marker says this Airflow version migrated this database and the
    database still holds the revision it left: a database dropped and created again under
    the same URL is migrated again."""
    import importlib.metadata
    version = importlib.metadata.version("apache-airflow-core")
    from airflow.configuration import AIRFLOW_HOME, conf
    marker = Path(AIRFLOW_HOME) / ".proofflow-db-migrated"
    url = conf.get("database", "sql_alchemy_conn")
    stamp = f"{version} {url}"
    if marker.exists():
        revision = _schema_revision(url)
        if revision and marker.read_text() == f"{stamp} {revision}":
            return
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], stdout=log, stderr=log)
    finally:
        if log_path:
            log.close()
    if proc.returncode != 0:
        raise RuntimeError(f"`airflow db migrate` failed (exit {proc.returncode})"
                           + (f": see {log_path}" if log_path else ""))
    marker.write_text(f"{stamp} {_schema_revision(url)}")


def default_slots() -> int:
    """Slots of pool ``gpu``: PROOFFLOW_GPU_SLOTS, else per device one (in-process: the pool
    is the mutex) or PROOFFLOW_GPU_DEPTH (the prover service holds the device; the pool
    bounds the partitions in flight per device)."""
    current = settings.current()
    if current.gpu_slots:
        return current.gpu_slots
    from proofflow.prover import device
    per_device = current.gpu_depth if current.gpu_service else 1
    return max(1, device.count()) * per_device  # no GPU: the CPU backend proves, one device's worth


def ensure_pool(slots: int | None = None) -> int:
    from airflow.models.pool import Pool
    slots = slots or default_slots()
    Pool.create_or_update_pool(settings.GPU_POOL, slots, POOL_DESCRIPTION, include_deferred=False)
    return slots


def ensure_connection(url: str) -> None:
    """The ``proofflow_timing`` connection naming the timing store. A Postgres URL goes into
    the connection's fields, its password into the password field (encrypted with Airflow's
    Fernet key where one is set, hidden in the UI, masked in task logs), not into the extra
    JSON that the UI shows as text; any other URL goes into ``extra.url``."""
    import json
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session
    from sqlalchemy.engine import make_url
    u = make_url(url)
    fields = u.get_backend_name() == "postgresql" and not u.query
    with create_session() as session:
        conn = session.query(Connection).filter(Connection.conn_id == settings.TIMING_CONN_ID).one_or_none()
        if conn is None:
            conn = Connection(conn_id=settings.TIMING_CONN_ID, conn_type="generic")
            session.add(conn)
        if fields:
            conn.conn_type, conn.description = "postgres", "proofflow timing store"
            conn.host, conn.port, conn.login, conn.schema = u.host, u.port, u.username, u.database
            conn.password = u.password
            conn.set_extra(None)
        else:
            conn.conn_type, conn.description = "generic", "proofflow timing store (SQLAlchemy URL in extra.url)"
            conn.host = conn.port = conn.login = conn.password = conn.schema = None
            conn.set_extra(json.dumps({"url": url}))


def ensure_api_connection() -> str | None:
    """Connection ``proofflow_airflow_api`` (the run's note goes through it), created when
    no secret or row defines it, with credentials the configured auth manager takes: under
    the simple auth manager (Airflow's default) its first admin user and that user's password
    in the manager's passwords file (generated there now when the API server has not yet,
    as the server would: it keeps passwords it finds), no login in its all-admins mode; under
    FAB the login ``proofflow`` with a new random password, made a user by
    ``ensure_api_user``. The host is ``[api] base_url``, else this host's API port. Returns
    the login it created the connection with ("" for none), None when it created nothing."""
    from airflow.exceptions import AirflowNotFoundException
    from airflow.models.connection import Connection
    try:
        Connection.get_connection_from_secrets(settings.API_CONN_ID)
        return None  # defined already (compose: from .env), and kept
    except AirflowNotFoundException:
        pass
    credentials = _api_credentials()
    if credentials is None:
        return None
    from airflow.utils.session import create_session
    host = api_base_url()
    login, password = credentials
    with create_session() as session:
        session.add(Connection(conn_id=settings.API_CONN_ID, conn_type="http", host=host, login=login or None,
                               password=password or None,
                               description="proofflow: the REST API the run's note is written through"))
    return login


def api_base_url() -> str:
    """Where this deployment's API server (and UI) answers: ``[api] base_url``, else this
    host's API port."""
    from airflow.configuration import conf
    return conf.get("api", "base_url", fallback="") or f"http://127.0.0.1:{conf.getint('api', 'port', fallback=8080)}"


@dataclass(frozen=True)
class Login:
    """How an operator logs in to the UI, for ``proofflow setup`` to say (Airflow itself
    only prints a generated password in the API server's log)."""
    url: str
    user: str | None  # None: no login needed, or the auth manager's own users
    password_file: str | None  # the simple auth manager's passwords file, holding ``user``'s
    how: str  # one line for the operator


def login() -> Login:
    """The UI's login under the configured auth manager. Under the simple auth manager
    (Airflow's default) the first admin's password is generated now in the manager's
    passwords file, when the API server has not yet (it keeps the passwords it finds)."""
    from airflow.api_fastapi.app import get_auth_manager_cls
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
    from airflow.configuration import conf
    url, manager = api_base_url(), get_auth_manager_cls()
    if issubclass(manager, SimpleAuthManager):
        if conf.getboolean("core", "simple_auth_manager_all_admins"):
            return Login(url, None, None, f"open {url}: no login, every visitor is admin "
                                          "([core] simple_auth_manager_all_admins)")
        admin = next((u.username for u in SimpleAuthManager.get_users() if u.role.lower() == "admin"), None)
        if admin is None:
            return Login(url, None, None, f"log in at {url}: [core] simple_auth_manager_users names no admin")
        _simple_auth_password(admin)
        path = SimpleAuthManager.get_generated_password_file()
        return Login(url, admin, path, f"log in at {url} as {admin}, with the password under key {admin!r} of {path}")
    try:
        from airflow.providers.fab.auth_manager.fab_auth_manager import FabAuthManager
    except ImportError:
        FabAuthManager = None
    if FabAuthManager is not None and issubclass(manager, FabAuthManager):
        from airflow.exceptions import AirflowNotFoundException
        from airflow.models.connection import Connection
        try:
            user = Connection.get_connection_from_secrets(settings.API_CONN_ID).login
        except AirflowNotFoundException:
            user = None
        if user:
            return Login(url, user, None, f"log in at {url} as {user}, with the password of connection "
                                          f"{settings.API_CONN_ID} (compose: AIRFLOW_ADMIN_PASSWORD in .env)")
        return Login(url, None, None, f"log in at {url} as a FAB user: airflow users create --role Admin ...")
    return Login(url, None, None, f"log in at {url} as a user of {manager.__name__}")


def advice(slots: int) -> list[str]:
    """Settings of this Airflow that a proofflow host should not keep, each with the variable
    that changes it: Airflow's example DAGs, and a LocalExecutor with more worker processes
    than the host can use (it starts ``[core] parallelism`` of them at once: 32 by default)."""
    import os
    from airflow.configuration import conf
    out = []
    if conf.getboolean("core", "load_examples"):
        out.append("Airflow's ~90 example DAGs are loaded ([core] load_examples): set AIRFLOW__CORE__LOAD_EXAMPLES=False")
    cores = len(os.sched_getaffinity(0))
    parallelism = conf.getint("core", "parallelism")
    if conf.get("core", "executor").rsplit(".", 1)[-1] == "LocalExecutor" and parallelism > cores + slots:
        out.append(f"[core] parallelism is {parallelism}: the LocalExecutor starts that many worker processes, on "
                   f"{cores} cores; set AIRFLOW__CORE__PARALLELISM={cores + slots} (a task a core, plus the {slots} "
                   f"slots of pool {settings.GPU_POOL}, whose tasks mostly wait for the device)")
    return out


def _api_credentials() -> tuple[str, str] | None:
    """(login, password) for the connection under the configured auth manager; None under one
    whose users proofflow cannot know."""
    from airflow.api_fastapi.app import get_auth_manager_cls
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
    from airflow.configuration import conf
    manager = get_auth_manager_cls()
    if issubclass(manager, SimpleAuthManager):
        if conf.getboolean("core", "simple_auth_manager_all_admins"):
            return "", ""
        admin = next((u.username for u in SimpleAuthManager.get_users() if u.role.lower() == "admin"), None)
        return None if admin is None else (admin, _simple_auth_password(admin))
    try:
        from airflow.providers.fab.auth_manager.fab_auth_manager import FabAuthManager
    except ImportError:
        return None
    if issubclass(manager, FabAuthManager):
        import secrets
        return "proofflow", secrets.token_urlsafe(24)
    return None


def _simple_auth_password(user: str) -> str:
    """``user``'s password in the simple auth manager's passwords file, generated there (under
    the lock the API server takes to do the same) when missing."""
    import fcntl
    import json
    import secrets
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
    path = Path(SimpleAuthManager.get_generated_password_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            f.seek(0)
            passwords = json.loads(f.read().strip() or "{}")
            if user not in passwords:
                passwords[user] = secrets.token_urlsafe(16)
                f.seek(0)
                f.truncate()
                f.write(json.dumps(passwords) + "\n")
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
    return passwords[user]


def ensure_api_user() -> str | None:
    """Under the FAB auth manager: the login of connection ``proofflow_airflow_api`` made a
    user with that connection's password (created with role Admin when missing, its password
    reset otherwise), so the tasks' REST calls authenticate. The connection is the
    credentials' one source (compose defines it from .env's AIRFLOW_ADMIN_USER and
    AIRFLOW_ADMIN_PASSWORD): recreated containers, or a changed secret, still agree with the
    user. Other auth managers keep their own users. Returns the login, or None when there
    was nothing to do."""
    try:
        from airflow.providers.fab.auth_manager.fab_auth_manager import FabAuthManager
    except ImportError:  # the provider is not installed: not the configured auth manager either
        return None
    from airflow.api_fastapi.app import get_auth_manager_cls
    if not issubclass(get_auth_manager_cls(), FabAuthManager):
        return None
    from airflow.exceptions import AirflowNotFoundException
    from airflow.models.connection import Connection
    try:
        conn = Connection.get_connection_from_secrets(settings.API_CONN_ID)
    except AirflowNotFoundException:
        return None
    if not (conn.login and conn.password):
        return None
    from airflow.providers.fab.auth_manager.cli_commands.utils import get_application_builder
    with get_application_builder() as appbuilder:
        sm = appbuilder.sm
        user = sm.find_user(username=conn.login)
        if user is None:
            done = sm.add_user(conn.login, conn.login, "proofflow", f"{conn.login}@proofflow.invalid",
                               sm.find_role("Admin"), conn.password)
        else:
            done = sm.reset_password(user.id, conn.password)
    if not done:
        raise RuntimeError(f"the FAB auth manager did not {'create' if user is None else 'update'} the user of "
                           f"connection {settings.API_CONN_ID!r}: see its log above")
    return conn.login


def compile_bytecode() -> list[str]:
    """proofflow's modules and the DAG files compiled to bytecode where it is missing or
    stale. Every Airflow task is a new process that parses the DAG file and imports the
    operators and the engine; from an editable install, or under PYTHONDONTWRITEBYTECODE,
    each would compile those sources again (measured on 2 cores: ~0.04 CPU-s a task, a tenth
    of its CPU).
    Best effort: a directory that cannot be written is left as it is. Returns the
    directories whose every file now has its bytecode."""
    import compileall
    import proofflow
    from airflow.configuration import conf
    dirs = [Path(proofflow.__file__).resolve().parent, Path(conf.get("core", "dags_folder")).resolve()]
    return [str(d) for d in dirs if d.is_dir() and compileall.compile_dir(d, quiet=2, workers=0)]


def setup_all(slots: int | None = None, migrate: bool = True, log_path: Path | None = None,
              api_connection: bool = False) -> dict:
    """The project's Airflow setup; ``api_connection``: for a deployment whose API server the
    tasks reach and operators log in to (``proofflow run`` has none), also the REST API's
    connection, the UI's login and advice on Airflow settings a proofflow host should not keep."""
    if migrate:
        migrate_metadata_db(log_path)
    compiled = compile_bytecode()
    slots = ensure_pool(slots)
    from proofflow.timing.store import TimingStore, resolve_url
    url = resolve_url()  # what the connection will name: PROOFFLOW_DB_URL or the default
    ensure_connection(url)
    TimingStore(url).dispose()  # timing tables at Alembic head
    created = ensure_api_connection() if api_connection else None
    info = {"pool": settings.GPU_POOL, "slots": slots, "timing_url": url, "bytecode": compiled,
            "api_connection": "kept" if created is None else f"created (login {created or 'none'})",
            "api_user": ensure_api_user()}
    if api_connection:
        info.update(login=asdict(login()), advice=advice(slots))
    return info
