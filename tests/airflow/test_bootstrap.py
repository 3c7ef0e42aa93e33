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
