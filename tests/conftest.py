"""Shared fixtures."""
import pytest


@pytest.fixture(scope="session", autouse=True)
def _settings_follow_the_environment():
    """proofflow reads its settings once per process (``settings.current()``); a test that
    changes the environment through a MonkeyPatch (the ``monkeypatch`` fixture or one of its
    own: setenv, delenv, and undo at teardown) gets them read again at its next use, as a
    process started with that environment would."""
    from proofflow import settings

    def reloading(method):
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            finally:
                settings.reload()
        return call

    originals = {name: getattr(pytest.MonkeyPatch, name) for name in ("setenv", "delenv", "undo")}
    for name, method in originals.items():
        setattr(pytest.MonkeyPatch, name, reloading(method))
    yield
    for name, method in originals.items():
        setattr(pytest.MonkeyPatch, name, method)


@pytest.fixture(scope="session", autouse=True)
def _no_staging_left_in_shared_memory(tmp_path_factory):
    """Tests whose processes run with a fresh home and no PROOFFLOW_SHARED_STAGING (the fresh
    machine's defaults) stage in /dev/shm/proofflow-<uid>-<digest of the home>: those of this
    session's homes (directories under its temporary base) are removed at its end, so repeated
    runs do not fill the host's shared memory. Only those: another test session on the host
    (a second checkout's CI) may be staging in its own at that moment."""
    import hashlib
    import os
    import shutil
    from pathlib import Path
    shm = Path("/dev/shm")
    pattern = f"proofflow-{os.getuid()}-*"
    before = set(shm.glob(pattern)) if shm.is_dir() else set()
    yield
    new = (set(shm.glob(pattern)) - before) if shm.is_dir() else set()
    if not new:
        return
    base = tmp_path_factory.getbasetemp()
    ours = set()
    for root, dirs, _ in os.walk(base):
        if len(Path(root).relative_to(base).parts) >= 4:  # homes sit at most a few levels down
            dirs[:] = []
        for d in dirs:
            digest = hashlib.sha256(str(Path(root, d).absolute()).encode()).hexdigest()[:10]
            ours.add(shm / f"proofflow-{os.getuid()}-{digest}")
    for d in new & ours:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def _shared_staging(monkeypatch):
    """Each test's shared staging (segments of a/b/c) in its own directory of shared memory
    (the device can page-lock a tmpfs mapping, not a disk file's), inherited by the services
    and Airflow processes it starts."""
    import shutil
    import tempfile
    from pathlib import Path
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    root = Path(tempfile.mkdtemp(prefix="pf-test-", dir=base))
    _STAGING_ROOTS.append(root)
    monkeypatch.setenv("PROOFFLOW_SHARED_STAGING", str(root / "shm"))
    yield
    shutil.rmtree(root, ignore_errors=True)


# removed again once this process's services are stopped (pytest_unconfigure): a service still
# writing when its test ends can leave a file that makes the first removal fail
_STAGING_ROOTS: list = []


# --- prover fixtures ---------------------------------------------------------------------
@pytest.fixture(scope="session")
def mimc10():
    from proofflow.prover.circuits.by_name import get_circuit
    return get_circuit("mimc", 10)


@pytest.fixture(scope="session")
def mimc8_key_dir(tmp_path_factory):
    """A 2^8 key directory for the prover service's jobs (tests/service_inputs.py)."""
    from service_inputs import make_key
    return make_key(tmp_path_factory.mktemp("key") / "mimc-8")


@pytest.fixture(scope="session")
def pk10(mimc10, tmp_path_factory):
    """A 2^10 proving key, saved and loaded back, so every user goes through the files."""
    from proofflow.prover.groth16 import generator
    from proofflow.prover.groth16.data_structures import ProvingKey
    d = tmp_path_factory.mktemp("pk10")
    generator.setup(mimc10, seed=7).save(d)
    return ProvingKey.load(d)


# --- circom circuits and ceremonies (tests/circom, tests/ethereum, tests/bench) -------------
from circom_fixtures import (  # noqa: E402,F401 (fixtures, found by pytest here)
    bn128_chain, bn128_compiled, bn128_gadgets, ceremony, compiled, toolchain, _bn128_keyed)


# --- proofflow timing store / Airflow fixtures (proofflow/airflow/) ----------------------------
import os
import uuid

import pytest

PG_ADMIN_URL = os.environ.get("PROOFFLOW_TEST_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")


def _pg_admin():
    import psycopg2
    from sqlalchemy.engine import make_url
    u = make_url(PG_ADMIN_URL)
    conn = psycopg2.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password,
                            dbname=u.database, connect_timeout=3)
    conn.autocommit = True
    return conn, u


@pytest.fixture(scope="session")
def pg_url():
    """A fresh Postgres database for this test session (dropped afterwards)."""
    try:
        admin, u = _pg_admin()
    except Exception as exc:  # no local Postgres: these tests are skipped, the SQLite ones still run
        pytest.skip(f"local Postgres not reachable at {PG_ADMIN_URL}: {exc}")
    name = f"proofflow_test_{uuid.uuid4().hex[:12]}"
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    url = u.set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        from proofflow.timing import store as store_mod
        store_mod._migrated.discard(url)
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'timing.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'timing.db'}"
    return request.getfixturevalue("pg_url")


# --- Airflow for the proof_run tests (proofflow/airflow/, dags/) ---------------------------------
# Airflow reads its configuration when first imported, so the test session's own
# AIRFLOW_HOME (SQLite metadata DB) is set here, before any test module imports Airflow;
# a developer's real AIRFLOW_HOME is never touched.
import shutil
import tempfile
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="proofflow-test-airflow-"))
os.environ.update({
    "AIRFLOW_HOME": str(_AIRFLOW_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(_REPO / "dags"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_AIRFLOW_HOME / 'airflow.db'}",
    "PROOFFLOW_HOME": str(_AIRFLOW_HOME / "proofflow"),
    "PROOFFLOW_SERVICE_IDLE_S": "60",  # prover services started by tests stop soon after them
})
for _var in ("PROOFFLOW_DB_URL", "AIRFLOW_CONN_PROOFFLOW_TIMING", "PROOFFLOW_SCRATCH", "PROOFFLOW_PARAMS_CACHE",
             "PROOFFLOW_BUNDLES"):
    os.environ.pop(_var, None)
from proofflow import settings as _settings  # noqa: E402  (read after the session's environment is set)
_settings.reload()


def pytest_unconfigure(config):
    """Every process that imported this file removes its AIRFLOW_HOME and its tests' shared
    staging roots, the services its tests started stopped first: a session fixture would miss
    pytest-xdist's controller, which runs no test, and a collection-only run."""
    from proofflow.prover.service.client import stop_all
    stop_all()
    shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)
    for root in _STAGING_ROOTS:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_home():
    """The session's AIRFLOW_HOME with its metadata DB migrated and pool `gpu` created."""
    from proofflow.airflow import bootstrap
    bootstrap.migrate_metadata_db(_AIRFLOW_HOME / "migrate.log")
    bootstrap.ensure_pool(1)
    return _AIRFLOW_HOME


@pytest.fixture(scope="session")
def _proof_run_dag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(str(_REPO / "dags"))
    assert bag.import_errors == {}
    return bag.get_dag("proof_run")


@pytest.fixture
def proof_run_dag(_proof_run_dag):
    """The session's proof_run, with the DAG file's param defaults at every test: dag.test()
    in this process resolves a run's conf into the DAG's own Param objects (Airflow's
    process_params: Param.resolve keeps the value), which would otherwise become the defaults
    of every later test's runs (a curve or circuit one test asked for, in the next's)."""
    dag = _proof_run_dag
    params = {id(p): p for d in (dag.params, *(t.params for t in dag.tasks)) for p in d.values()}.values()
    defaults = [(p, p.value) for p in params]
    yield dag
    for p, value in defaults:
        p.value = value


def _database_factory():
    """Yields a factory of fresh Postgres databases, dropping them all when resumed."""
    try:
        admin, u = _pg_admin()
    except Exception as exc:
        pytest.skip(f"local Postgres not reachable at {PG_ADMIN_URL}: {exc}")
    made = []

    def make(label: str = "db") -> str:
        name = f"proofflow_test_{label}_{uuid.uuid4().hex[:10]}"
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return u.set(database=name).render_as_string(hide_password=False)

    yield make
    with admin.cursor() as cur:
        for name in made:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


@pytest.fixture
def pg_new_database():
    """A factory of fresh Postgres databases (each dropped after the test)."""
    yield from _database_factory()


@pytest.fixture(scope="module")
def pg_new_database_module():
    """The same for a module's tests that share one set of services (dropped after the module)."""
    yield from _database_factory()


# --- reliability figures and the long versions (pytest -m reliability --soak) ------------
def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help="reliability tests at full length (200-run soak, 300 random kills); their figures go "
                          "to bench/results/reliability.json")


@pytest.fixture(scope="session")
def soak(request) -> bool:
    return bool(request.config.getoption("--soak"))


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its figures to the controller, which reports them."""
    if hasattr(session.config, "workeroutput"):
        import reliability_figures
        session.config.workeroutput["reliability_figures"] = reliability_figures.export()


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: pytest alone does not know it
def pytest_testnodedown(node):
    import reliability_figures
    reliability_figures.merge(getattr(node, "workeroutput", {}).get("reliability_figures"))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from reliability_figures import FIGURES
    if not FIGURES or hasattr(config, "workerinput"):  # a worker's figures are in the controller's
        return
    terminalreporter.section("reliability figures")
    for total in ("faults injected", "runs completed"):
        parts = [v for k, v in FIGURES.items() if k.startswith(f"{total}:")]
        if parts:
            FIGURES[f"{total} (total)"] = sum(parts)
    for name in sorted(FIGURES):
        terminalreporter.write_line(f"{name}: {FIGURES[name]}")
    if config.getoption("--soak"):
        import json
        import platform
        import time
        out = _REPO / "bench" / "results" / "reliability.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
               "cores": os.cpu_count(), "command": "pytest -m reliability --soak",
               "all_passed": int(exitstatus) == 0, "figures": FIGURES}
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
        tmp.replace(out)
        terminalreporter.write_line(f"written to {out}")


# --- a Postgres of the tests' own, to stop and start at will (the shared one is never stopped)
class IsolatedPostgres:
    """A throwaway cluster (initdb) on a free port in a temporary directory. Postgres will
    not run as root, so as root the cluster belongs to the ``postgres`` user."""

    BIN = Path("/usr/lib/postgresql/15/bin")

    def __init__(self, root: Path, password: str):
        import pwd
        import socket as _socket
        self.root, self.data, self.password = root, root / "data", password
        with _socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._as = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        if os.getuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(root, pw.pw_uid, pw.pw_gid)
        (root / "pw").write_text(password + "\n")
        os.chmod(root / "pw", 0o644)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
                  f"--pwfile={root / 'pw'}", "-E", "UTF8")
        (root / "pw").unlink()
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(f"port = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{root}'\n"
                    "fsync = off\nmax_connections = 60\n")
        self.start()
        self.sql(f"CREATE ROLE proofflow LOGIN PASSWORD '{password}'")

    def _run(self, tool: str, *args: str, check: bool = True):
        import subprocess
        out = subprocess.run(self._as + [str(self.BIN / tool), *args], capture_output=True, text=True, timeout=120)
        if check and out.returncode != 0:
            raise RuntimeError(f"{tool} failed: {out.stderr[-2000:]}")
        return out

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def sql(self, statement: str) -> None:
        self._run("psql", "-h", str(self.root), "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                  "-v", "ON_ERROR_STOP=1", "-qc", statement)

    def new_database(self, name: str) -> str:
        """A database owned by role proofflow; its URL carries the password."""
        self.sql(f'CREATE DATABASE "{name}" OWNER proofflow')
        return f"postgresql+psycopg2://proofflow:{self.password}@127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def isolated_pg():
    if not (IsolatedPostgres.BIN / "initdb").exists():
        pytest.skip("no Postgres 15 server binaries to start a private cluster")
    root = Path(tempfile.mkdtemp(prefix="proofflow-pg-"))  # not under pytest's 0700 base: the server user reads it
    try:
        pg = IsolatedPostgres(root, password=f"pf-{uuid.uuid4().hex}")
        yield pg
        pg._run("pg_ctl", "-D", str(pg.data), "-m", "immediate", "-w", "stop", check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)
