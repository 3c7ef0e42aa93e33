"""`proofflow run`: a whole proof_run through Airflow on a fresh local home, no Postgres,
no GPU needed, and a summary from the timing tables."""
import json

import pytest

from proofflow_cli import proofflow

PARTITIONS = 4


@pytest.mark.slow
def test_a_fresh_user_runs_then_reports_with_no_environment(tmp_path):
    """What a new user types, in a fresh HOME with nothing set: every command finds the runs
    that `proofflow run` made."""
    user = tmp_path / "user"
    user.mkdir()
    out = proofflow("run", "--log2", "8", "--partitions", "2", "--json", user_home=user)
    assert out.returncode == 0, out.stderr[-4000:]
    run_id = json.loads(out.stdout.strip().splitlines()[-1])["run_id"]
    assert (user / ".proofflow" / "timing.db").exists() and (user / ".proofflow" / "airflow" / "airflow.db").exists()
    report = proofflow("report", run_id, user_home=user)
    assert report.returncode == 0, report.stderr[-3000:]
    assert run_id in report.stdout and "success" in report.stdout
    summary = proofflow("summary", run_id, "--json", user_home=user)
    assert summary.returncode == 0, summary.stderr[-3000:]
    s = json.loads(summary.stdout)
    assert s["proofs_verified"] == 2 and s["staging"] == "pageable"  # the CPU backend pins nothing
    assert s["curve"] == "bls12_381"  # the default, recorded with the run
    assert (s["backend_requested"], s["staging_requested"]) == ("auto", "pinned")  # the defaults, as asked
    assert {t["memory_kind"] for t in s["transfers"].values()} == {"pageable"}


@pytest.mark.slow
def test_run_json_then_table(tmp_path):
    home = tmp_path / "pf"
    out = proofflow("run", "--log2", "10", "--partitions", str(PARTITIONS), "--json", "--home", str(home))
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
    assert (home / "airflow" / "airflow.db").exists() and (home / "timing.db").exists()

    # again in the same home: the proving key comes from the params cache, a table is printed
    out = proofflow("--home", str(home), "run", "--partitions", "2", "--staging", "pageable")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "2/2 proofs verify" in out.stdout
    assert "load_cached" in out.stdout and "pool_wait" in out.stdout
    assert proofflow("summary", s["run_id"], "--home", str(home)).returncode == 0


@pytest.mark.parametrize("args,msg", [
    (["--partitions", "0"], "partitions must be in 1..64, got 0"),
    (["--log2", "30"], "log2 must be in 8..27, got 30"),
    (["--circuit", "sha"], "unknown circuit 'sha'"),
    (["--curve", "secp256k1"], "invalid choice: 'secp256k1'"),
    (["--priority", "urgent"], "invalid choice: 'urgent'"),
])
def test_bad_arguments_fail_fast(args, msg, tmp_path):
    out = proofflow("run", "--home", str(tmp_path / "h"), *args, timeout=60)
    assert out.returncode == 2 and msg in out.stderr
    assert not (tmp_path / "h").exists(), "no Airflow home set up for bad arguments"


def test_a_run_that_does_not_fit_is_refused_before_any_work(tmp_path):
    """log2 27 is in the domain, but its partitions' a/b/c cannot fit a 1 GiB staging budget
    (nor, on most machines, its 77 GB key on disk or its setup in memory): one message with
    the numbers, no traceback, nothing set up."""
    out = proofflow("run", "--log2", "27", "--home", str(tmp_path / "h"), timeout=60,
                     env={"PROOFFLOW_STAGING_BUDGET": str(1 << 30)})
    assert out.returncode == 2, out.stderr[-3000:]
    assert out.stderr.startswith("error: log2 27 does not fit this machine: ") and out.stderr.count("\n") == 1
    assert ("a partition's a/b/c and witness need 16.0 GiB of staging (budget 1.0 GiB, PROOFFLOW_STAGING_BUDGET)"
            in out.stderr)
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert not (tmp_path / "h").exists(), "no Airflow home set up for a run that cannot fit"


def test_gpu_asked_for_but_absent(tmp_path):
    from proofflow.prover.device import available as gpu_available
    if gpu_available():
        pytest.skip("a GPU is visible here")
    out = proofflow("run", "--backend", "gpu", "--home", str(tmp_path / "h"), timeout=60)
    assert out.returncode == 2 and "no GPU is visible" in out.stderr
