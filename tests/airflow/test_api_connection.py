"""The run's note works out of the box (#36): `proofflow setup` creates connection
proofflow_airflow_api where none is defined, with credentials the auth manager takes (the
documented login `proofflow` was no user of the simple auth manager, Airflow's default), and
keeps one that is defined."""
import json

import pytest

SIMPLE = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"


@pytest.fixture
def simple_auth(airflow_home, tmp_path, monkeypatch):
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session
    from proofflow import settings
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", SIMPLE)
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "viewer:viewer,ops:admin")
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(tmp_path / "passwords.json"))
    monkeypatch.setenv("AIRFLOW__API__PORT", "18080")
    monkeypatch.delenv(f"AIRFLOW_CONN_{settings.API_CONN_ID.upper()}", raising=False)

    def drop():
        with create_session() as session:
            session.query(Connection).filter(Connection.conn_id == settings.API_CONN_ID).delete()
    drop()
    yield tmp_path / "passwords.json"
    drop()


def _connection():
    from airflow.models.connection import Connection
    from proofflow import settings
    return Connection.get_connection_from_secrets(settings.API_CONN_ID)


def test_setup_creates_a_connection_the_simple_auth_manager_logs_in(simple_auth):
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
    from proofflow.airflow import bootstrap
    from proofflow.airflow.hooks.api import base_url
    info = bootstrap.setup_all(migrate=False, slots=1, api_connection=True)
    assert info["api_connection"] == "created (login ops)"
    conn = _connection()
    assert (conn.login, base_url(conn)) == ("ops", "http://127.0.0.1:18080")
    # what POST /auth/token checks: an admin of the manager, with the password in its file
    assert SimpleAuthManager.get_passwords()["ops"] == conn.password
    assert {u.username: u.role for u in SimpleAuthManager.get_users()}["ops"] == "admin"


def test_a_password_the_api_server_generated_is_used_and_a_defined_connection_kept(simple_auth):
    from proofflow.airflow import bootstrap
    simple_auth.write_text(json.dumps({"ops": "from-the-server"}))
    assert bootstrap.ensure_api_connection() == "ops"
    assert _connection().password == "from-the-server"
    assert json.loads(simple_auth.read_text()) == {"ops": "from-the-server"}
    assert bootstrap.ensure_api_connection() is None  # defined now: kept as it is


def test_setup_says_how_to_log_in_and_what_to_change(simple_auth, monkeypatch):
    """A new operator is told where and as whom to log in (Airflow only prints a generated
    password in the API server's log), and which Airflow defaults a proofflow host should
    not keep: example DAGs, and a LocalExecutor with more workers than cores."""
    import os
    from proofflow.airflow import bootstrap
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "True")
    monkeypatch.setenv("AIRFLOW__CORE__PARALLELISM", "32")
    info = bootstrap.setup_all(migrate=False, slots=4, api_connection=True)
    login = info["login"]
    assert (login["url"], login["user"], login["password_file"]) == ("http://127.0.0.1:18080", "ops", str(simple_auth))
    assert json.loads(simple_auth.read_text())["ops"]  # the password is there before any API server ran
    assert login["how"] == f"log in at http://127.0.0.1:18080 as ops, with the password under key 'ops' of {simple_auth}"
    cores = len(os.sched_getaffinity(0))
    (examples, parallelism) = info["advice"]
    assert examples.endswith("set AIRFLOW__CORE__LOAD_EXAMPLES=False")
    assert parallelism.startswith(f"[core] parallelism is 32: the LocalExecutor starts that many worker processes, "
                                  f"on {cores} cores; set AIRFLOW__CORE__PARALLELISM={cores + 4} ")
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    monkeypatch.setenv("AIRFLOW__CORE__PARALLELISM", str(cores + 4))
    assert bootstrap.advice(4) == []
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "True")
    assert bootstrap.login().how == "open http://127.0.0.1:18080: no login, every visitor is admin " \
                                    "([core] simple_auth_manager_all_admins)"
