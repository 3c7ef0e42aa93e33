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
