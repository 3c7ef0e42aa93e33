"""`proofflow calibrate` and `proofflow report RUN_ID --png FILE` on a run made by
`proofflow run` (fresh local home, SQLite timing store, no GPU needed)."""
import json
import os
import shutil
import subprocess
import sys

import pytest


def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update(PYTHONUNBUFFERED="1", PROOFFLOW_HOME=str(home / "proofflow"))
    return env


def _proofflow(home, *args, timeout=300):
    exe = shutil.which("proofflow")
    cmd = [exe] if exe else [sys.executable, "-m", "proofflow.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=_env(home), timeout=timeout)


@pytest.mark.slow
def test_calibrate_run_report(tmp_path):
    home = tmp_path / "airflow"
    out = _proofflow(home, "calibrate", "--device", "cpu", "--max-log2", "10", "--reps", "3")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "device cpu, pageable memory, method cpu-staging-copy-3x" in out.stdout and "98304" in out.stdout
    out = _proofflow(home, "calibrate", "--device", "cpu", "--show", "--json")
    assert out.returncode == 0 and [r["bytes"] for r in json.loads(out.stdout)] == [24576, 49152, 98304]

    out = _proofflow(home, "run", "--log2", "8", "--partitions", "2", "--json")
    assert out.returncode == 0, out.stderr[-4000:]
    run_id = json.loads(out.stdout.strip().splitlines()[-1])["run_id"]

    png = tmp_path / "timeline.png"
    out = _proofflow(home, "report", run_id, "--png", str(png))
    assert out.returncode == 0, out.stderr[-3000:]
    for section in ("run summary (run_summary)", "steady state", "H2D per partition (h2d_partitions)",
                    "pool and mutex waits per prove_gpu"):
        assert section in out.stdout
    assert f"proof run {run_id}" in out.stdout and "partition.prove_gpu" in out.stdout
    from PIL import Image
    assert png.stat().st_size > 20_000
    with Image.open(png) as im:
        assert im.format == "PNG" and im.width >= 1000
    out = _proofflow(home, "report", run_id, "--json")
    doc = json.loads(out.stdout)
    a = doc["runs"]["A"]
    assert a["summary"]["proofs_verified"] == 2 and a["summary"]["flagged_partitions"] == 0
    assert [h["partition"] for h in a["h2d"]] == [0, 1] and all(h["memory_kind"] == "pageable" for h in a["h2d"])
