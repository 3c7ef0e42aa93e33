"""``proofflow setup``'s bytecode step: the DAG files and proofflow's modules compiled once,
so the task processes that import them do not compile them again."""
import shutil
from pathlib import Path

from proofflow.airflow import bootstrap

ROOT = Path(__file__).resolve().parents[2]


def test_setup_compiles_the_dag_files_and_the_package(tmp_path, monkeypatch):
    dags = tmp_path / "dags"
    dags.mkdir()
    shutil.copy(ROOT / "dags" / "proof_run.py", dags)
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))
    compiled = bootstrap.compile_bytecode()
    assert compiled == [str(ROOT / "proofflow"), str(dags)]
    assert len(list((dags / "__pycache__").glob("proof_run.*.pyc"))) == 1
    assert any((ROOT / "proofflow" / "airflow" / "operators" / "__pycache__").glob("proof.*.pyc"))


def test_a_folder_left_without_bytecode_is_not_reported(tmp_path, monkeypatch):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "broken.py").write_text("def (:\n")  # Airflow reports the file; setup does not claim it
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))
    assert str(dags) not in bootstrap.compile_bytecode()


def test_migration_is_skipped_only_while_the_database_keeps_its_revision(tmp_path, monkeypatch):
    """The marker alone once let ``proofflow setup`` skip the migration of a metadata DB
    that had been dropped and created again under the same URL (then: no table
    ``slot_pool``). A stand-in for ``airflow db migrate`` records each call and leaves a
    revision, as the real one does."""
    import sqlite3
    import subprocess

    import airflow.configuration
    db = tmp_path / "airflow.db"
    monkeypatch.setattr(airflow.configuration, "AIRFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{db}")
    calls = []

    def migrate(argv, **kwargs):
        calls.append(argv[-2:])
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS alembic_version (version_num TEXT)")
            conn.execute("DELETE FROM alembic_version")
            conn.execute("INSERT INTO alembic_version VALUES ('rev1')")
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(bootstrap.subprocess, "run", migrate)
    bootstrap.migrate_metadata_db()
    bootstrap.migrate_metadata_db()
    assert calls == [["db", "migrate"]]  # migrated once, then trusted
    db.unlink()  # the database is created again, empty, at the same URL
    bootstrap.migrate_metadata_db()
    assert len(calls) == 2
    with sqlite3.connect(db) as conn:  # a revision other than the one migrated (a downgrade)
        conn.execute("UPDATE alembic_version SET version_num = 'rev0'")
    bootstrap.migrate_metadata_db()
    assert len(calls) == 3
