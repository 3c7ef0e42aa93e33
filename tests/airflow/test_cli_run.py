"""`proofflow run`: a whole proof_run through Airflow on a fresh local home, no Postgres,
no GPU needed, and a summary from the timing tables."""
import json
import os
import shutil
import subprocess
import sys

import pytest

PARTITIONS = 4


def _env():
    """A clean environment, as on a fresh clone: no Airflow or proofflow settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _proofflow(*args, timeout=300):
    exe = shutil.which("proofflow")
    cmd = [exe] if exe else [sys.executable, "-m", "proofflow.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=_env(), timeout=timeout)


@pytest.mark.slow
def test_run_json_then_table(tmp_path):
    home = tmp_path / "airflow"
    out = _proofflow("run", "--log2", "10", "--partitions", str(PARTITIONS), "--json", "--home", str(home))
    assert out.returncode == 0, out.stderr[-4000:]
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json prints one JSON object and nothing else on stdout: {out.stdout[:2000]}"
    s = json.loads(lines[0])
    assert s["partitions"] == PARTITIONS and s["proofs_verified"] == PARTITIONS
    assert s["state"] == "success" and s["airflow_state"] == "success"
    assert isinstance(s["run_id"], str) and s["run_id"]
    assert s["wall_s"] > 0 and s["log2"] == 10
    assert s["timing_db"].startswith("sqlite:///")  # the embedded default
    tasks = {p["task"] for p in s["phases"]}
    assert {"validate", "setup", "partition.synthesize", "partition.prove_gpu", "finalize_run"} <= tasks
    assert (home / "airflow.db").exists() and (home / "proofflow" / "timing.db").exists()

    # again in the same home: the proving key comes from the params cache, a table is printed
    out = _proofflow("run", "--partitions", "2", "--home", str(home), "--staging", "pageable")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "2/2 proofs verify" in out.stdout
    assert "load_cached" in out.stdout and "pool_wait" in out.stdout


@pytest.mark.parametrize("args,msg", [
    (["--partitions", "0"], "partitions must be in 1..64, got 0"),
    (["--log2", "30"], "log2 must be in 8..24, got 30"),
    (["--circuit", "sha"], "invalid choice: 'sha'"),
])
def test_bad_arguments_fail_fast(args, msg, tmp_path):
    out = _proofflow("run", "--home", str(tmp_path / "h"), *args, timeout=60)
    assert out.returncode == 2 and msg in out.stderr
    assert not (tmp_path / "h").exists(), "no Airflow home set up for bad arguments"


def test_gpu_asked_for_but_absent(tmp_path):
    from proofflow.prover.backend import gpu_available
    if gpu_available():
        pytest.skip("a GPU is visible here")
    out = _proofflow("run", "--backend", "gpu", "--home", str(tmp_path / "h"), timeout=60)
    assert out.returncode == 2 and "no GPU is visible" in out.stderr
