"""Operating a proving farm from the command line (#39 items 5 and 7), on a fresh home with
the CPU backend: `proofflow status` with no service and with one, `proofflow keys preload`,
`keys list`, and a run after the preload whose proof records no key load or upload."""
import json

import pytest

from proofflow_cli import proofflow


@pytest.mark.slow
def test_preload_status_and_a_run_that_pays_no_key_upload(tmp_path):
    home = tmp_path / "pf"
    env = {"PROOFFLOW_SERVICE_IDLE_S": "60"}  # a service left by a failing test stops soon

    def pf(*args):
        out = proofflow("--home", str(home), *args, env=env)
        assert out.returncode == 0, out.stderr[-4000:]
        return out.stdout

    idle = pf("status")
    assert "no prover service running" in idle and "runs in flight (proof_run): none" in idle
    assert json.loads(pf("status", "--json"))["services"] == []
    assert "no key is resident" in pf("keys", "list")

    (loaded,) = json.loads(pf("keys", "preload", "mimc", "--log2", "8", "--seed", "5", "--json"))
    assert loaded["device"] == "cpu" and loaded["upload_s"] is not None and loaded["bytes"] > 0
    assert loaded["directory"] == str(home / "params" / "mimc-log2_8-seed5")  # made by the preload
    (listed,) = json.loads(pf("keys", "list", "--json"))
    assert [(k["circuit"], k["log2"], k["bytes"]) for k in listed["resident_keys"]] == [("mimc", 8, loaded["bytes"])]
    (svc,) = json.loads(pf("status", "--json"))["services"]
    assert svc["device"] == "cpu" and svc["running"] is None and svc["queue"] == []
    assert [k["directory"] for k in svc["resident_keys"]] == [loaded["directory"]]
    assert svc["staging"]["budget"] > 0 and svc["staging"]["leased"] == 0

    run = json.loads(pf("run", "--log2", "8", "--partitions", "2", "--seed", "5", "--backend", "cpu", "--json"))
    assert run["state"] == "success" and run["proofs_verified"] == 2
    proving = {p["phase"] for p in run["phases"] if p["task"] == "partition.prove_gpu"}
    assert {"ntt", "msm", "mutex_wait"} <= proving
    assert not {"service_start", "key_load", "key_upload"} & proving, "the preloaded key was loaded again"

    after = pf("status")  # the run stopped its service, as `proofflow run` leaves nothing running
    assert "no prover service running" in after
    assert f"  {run['run_id']}  success  mimc 2^8 x2, 2/2 proofs" in after
