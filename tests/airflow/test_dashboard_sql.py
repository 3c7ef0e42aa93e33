"""The Grafana dashboard's SQL (deploy/grafana/dashboards/proofflow.json, data source
``proofflow-timing``) against a real Postgres timing store made as compose makes it: the
database from deploy/postgres-init.sql, Grafana's read-only role from
deploy/postgres-grafana.sh, then proof runs through Airflow (dag.test()): one whose H2D
check flags every partition (pinned memory required, pageable staging) and one refused by
validate. Every query, run as that role with Grafana's macros filled in, returns rows, and
the role can write nothing."""
import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "proofflow.json"
TIMING = "proofflow-timing"


def dashboard_sql() -> list[tuple[str, str]]:
    """(panel title or variable name, SQL) of every timing-store query of the dashboard."""
    board = json.loads(DASHBOARD.read_text())
    out = [(p["title"], t["rawSql"]) for p in board["panels"] for t in p["targets"]
           if t["datasource"]["uid"] == TIMING]
    out += [(v["name"], v["query"]) for v in board["templating"]["list"] if v["datasource"]["uid"] == TIMING]
    return out


def as_grafana_sends(sql: str, run_id: str) -> str:
    """``sql`` with the macros and variables Grafana fills in: the time range (the last day) and
    the run chosen."""
    sql = re.sub(r"\$__timeFilter\(((?:[^()]|\([^()]*\))*)\)", r"\1 BETWEEN now() - interval '1 day' AND now()", sql)
    sql = sql.replace("$run_id", run_id)
    assert "$" not in sql, f"a macro or variable this test does not fill in: {sql}"
    return sql


@pytest.fixture
def timing_store(isolated_pg):
    """The timing store as compose's Postgres init leaves it; yields (owner URL, reader URL)."""
    def psql(*args, **env):
        out = subprocess.run(["psql", "-v", "ON_ERROR_STOP=1", *args], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(isolated_pg.port),
                                  "PGUSER": "postgres", "PGPASSWORD": isolated_pg.password, **env})
        assert out.returncode == 0, out.stderr
    reader_pw = uuid.uuid4().hex
    psql("-d", "postgres", "-f", str(ROOT / "deploy" / "postgres-init.sql"))
    try:
        # as the image runs it: POSTGRES_USER is the superuser that later migrates the store
        subprocess.run(["bash", str(ROOT / "deploy" / "postgres-grafana.sh")], check=True, timeout=60,
                       env={**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(isolated_pg.port),
                            "PGPASSWORD": isolated_pg.password, "POSTGRES_USER": "postgres",
                            "GRAFANA_DB_PASSWORD": reader_pw})
        base = f"127.0.0.1:{isolated_pg.port}/proofflow"
        yield (f"postgresql+psycopg2://postgres:{isolated_pg.password}@{base}",
               f"postgresql+psycopg2://grafana_reader:{reader_pw}@{base}")
    finally:
        isolated_pg.sql("DROP DATABASE IF EXISTS proofflow WITH (FORCE)")
        isolated_pg.sql("DROP ROLE IF EXISTS grafana_reader")


@pytest.mark.slow
def test_every_dashboard_query_returns_rows_as_grafanas_role(proof_run_dag, timing_store, monkeypatch, tmp_path):
    from sqlalchemy import create_engine, exc, text

    from proofflow.airflow.operators import proof as ops
    from proofflow.prover.errors import InputError
    owner_url, reader_url = timing_store
    monkeypatch.setenv("PROOFFLOW_DB_URL", owner_url)
    monkeypatch.setenv("PROOFFLOW_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("PROOFFLOW_H2D_REQUIRE_PINNED", "1")
    flagged = proof_run_dag.test(run_conf={"log2": 8, "partitions": 2, "backend": "cpu", "staging": "pageable"})

    def refuse(self, context, rec):
        raise InputError("input 0: refused (injected)")
    monkeypatch.setattr(ops.ValidateOperator, "run", refuse)
    refused = proof_run_dag.test(run_conf={"log2": 8, "partitions": 2, "backend": "cpu"})

    queries = dict(dashboard_sql())
    assert {"H2D against calibration ($run_id)", "H2D flags", "Failed runs", "Runs", "run_id"} <= set(queries)
    engine = create_engine(reader_url)
    try:
        with engine.connect() as conn:
            rows = {title: conn.execute(text(as_grafana_sends(sql, flagged.run_id))).mappings().all()
                    for title, sql in queries.items()}
            with pytest.raises(exc.ProgrammingError, match="permission denied"):
                conn.execute(text("DELETE FROM runs"))
    finally:
        engine.dispose()
    for title, result in rows.items():
        assert result, f"{title}: no rows"
    assert {r["run_id"] for r in rows["run_id"]} == {flagged.run_id, refused.run_id}
    h2d = rows["H2D against calibration ($run_id)"]
    assert [r["partition"] for r in h2d] == [0, 1]
    assert all(0 < r["expected_ms"] < r["flagged_above_ms"] and r["measured_ms"] > 0 for r in h2d)
    assert sorted(r["partition"] for r in rows["H2D flags"]) == [0, 1]
    assert all("pageable host memory (pinned expected)" in r["reason"] for r in rows["H2D flags"])
    (failed,) = rows["Failed runs"]
    assert (failed["run_id"], failed["failed_task"]) == (refused.run_id, "validate")
    assert "refused (injected)" in failed["error"]
    runs = {r["run_id"]: r for r in rows["Runs"]}
    assert runs[flagged.run_id]["flagged_partitions"] == 2 and runs[flagged.run_id]["proofs_verified"] == 2
    assert runs[refused.run_id]["state"] == "failed"
