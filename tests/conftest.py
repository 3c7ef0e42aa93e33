"""Shared fixtures."""
import pytest


# --- prover fixtures ---------------------------------------------------------------------
@pytest.fixture(scope="session")
def mimc10():
    from prover.circuits import get_circuit
    return get_circuit("mimc", 10)


@pytest.fixture(scope="session")
def pk10(mimc10, tmp_path_factory):
    """A 2^10 proving key, saved and loaded back, so every user goes through the files."""
    from prover.groth16 import generator
    from prover.groth16.data_structures import ProvingKey
    d = tmp_path_factory.mktemp("pk10")
    generator.setup(mimc10, seed=7).save(d)
    return ProvingKey.load(d)


# --- proofflow timing store / Airflow fixtures (operators/) ----------------------------
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
        from operators.timing import store as store_mod
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


# --- Airflow for the proof_run tests (operators/, dags/) ---------------------------------
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


@pytest.fixture(scope="session", autouse=True)
def _remove_test_airflow_home():
    yield
    from prover.service.client import stop_all
    stop_all()
    shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_home():
    """The session's AIRFLOW_HOME with its metadata DB migrated and pool `gpu` created."""
    from operators import airflow_setup
    airflow_setup.migrate_metadata_db(_AIRFLOW_HOME / "migrate.log")
    airflow_setup.ensure_pool(1)
    return _AIRFLOW_HOME


@pytest.fixture(scope="session")
def proof_run_dag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(str(_REPO / "dags"))
    assert bag.import_errors == {}
    return bag.get_dag("proof_run")


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
