"""The hooks: the one order that names the timing store, the REST client's connection."""
import json


def test_timing_store_url_order(monkeypatch, tmp_path):
    from proofflow.airflow.hooks.timing import TimingStoreHook
    monkeypatch.delenv("PROOFFLOW_DB_URL", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_PROOFFLOW_TIMING", raising=False)
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path))
    assert TimingStoreHook().get_url() == f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_TIMING",
                       '{"conn_type": "postgres", "host": "db.example", "port": 5433, "login": "u", "schema": "timing"}')
    assert TimingStoreHook().get_url() == "postgresql+psycopg2://u@db.example:5433/timing"
    monkeypatch.setenv("PROOFFLOW_DB_URL", "sqlite:///elsewhere.db")
    assert TimingStoreHook().get_url() == "sqlite:///elsewhere.db"


def test_the_api_client_comes_from_its_connection(monkeypatch):
    from proofflow.airflow.hooks.api import AirflowApiHook
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API", json.dumps(
        {"conn_type": "http", "host": "api.example", "port": 8081, "schema": "https", "login": "u", "password": "p"}))
    api = AirflowApiHook().get_conn()
    assert api.base == "https://api.example:8081"


def test_check_h2d_reads_airflow_variables(monkeypatch):
    from proofflow.airflow.hooks.connections import variable
    from proofflow.timing.h2d_check import H2DCheckConfig
    monkeypatch.setenv("AIRFLOW_VAR_PROOFFLOW_H2D_TOL_LOW", "0.2")
    assert variable("proofflow_h2d_tol_low") == "0.2" and variable("proofflow_nothing") is None
    assert H2DCheckConfig.resolve(variable=variable).tol_low == 0.2
