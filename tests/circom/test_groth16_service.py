"""`proofflow groth16 prove|fullprove` through the warm prover service (issue #36, item 2),
forced onto the CPU backend's service (`--service`) so the whole path runs without a GPU:
the CLI writes a/b/c and the witness into a shared segment, the service proves with the
zkey's cache entry. Each proof is accepted by `snarkjs groth16 verify` with snarkjs's
public.json; a second call finds the same service with the key resident; refusals are the
in-process path's and write nothing; no staging lease outlives a call."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proofflow.prover.service.client import ServiceClient
from proofflow.prover.staging.shared import SharedStaging

REPO = Path(__file__).resolve().parents[2]
INPUTS = {"x": 3, "c": 5}
VERIFIES_NOT = "the proof does not verify against the zkey's verifying key"


def _proofflow(*args) -> subprocess.CompletedProcess:
    """The CLI as a user runs it, in this test's home and shared staging (so this process
    reaches the service it starts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "proofflow.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture
def chain(ceremony, tmp_path, monkeypatch):
    """The chain circuit, a witness and input.json for it, snarkjs's public.json; a fresh home
    whose CPU prover service is stopped at the end."""
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PROOFFLOW_GROTH16_SERVICE", raising=False)
    c = ceremony["chain"]
    wtns = c.witness(INPUTS, "service")
    (tmp_path / "input.json").write_text(json.dumps({k: str(v) for k, v in INPUTS.items()}))
    c.toolchain.snarkjs("groth16", "prove", c.zkey, wtns, tmp_path / "snarkjs_proof.json",
                        tmp_path / "snarkjs_public.json")
    client = ServiceClient("cpu", 0)
    yield {"circuit": c, "wtns": wtns, "dir": tmp_path, "client": client}
    client.stop()


def _accepted_by_snarkjs(c, public: Path, proof: Path) -> bool:
    proc = c.toolchain.snarkjs("groth16", "verify", c.vk, public, proof, check=False)
    return proc.returncode == 0 and "OK!" in proc.stdout


def _refusal(out: subprocess.CompletedProcess) -> str:
    """The one line of a refusal (exit 2), without its "error: "."""
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    return lines[0].removeprefix("error: ")


@pytest.mark.slow
def test_the_warm_service_proves_what_snarkjs_accepts_and_keeps_the_key(chain):
    c, d, client = chain["circuit"], chain["dir"], chain["client"]
    first = _proofflow("groth16", "prove", c.zkey, chain["wtns"], d / "proof.json", d / "public.json",
                       "--backend", "cpu", "--service", "--json")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    report = json.loads(first.stdout)
    used = report["service"]
    assert report["backend"] == "cpu" and used["device"] == "cpu" and used["started"] and used["key_loaded"]
    assert _accepted_by_snarkjs(c, d / "public.json", d / "proof.json")
    assert (d / "public.json").read_bytes() == (d / "snarkjs_public.json").read_bytes()

    status = client.status()
    key_dir = str(Path(report["cache_dir"]) / "key")  # the zkey's cache entry's key, loaded by the service
    assert status["pid"] == used["pid"] != os.getpid() and status["jobs_done"] == 1
    assert [k["directory"] for k in status["resident_keys"]] == [key_dir]
    assert SharedStaging.from_settings().leases() == []  # the call released its segment

    # fullprove (snarkjs's alias g16f) reaches the same service, which proves with the key it holds
    again = _proofflow("g16f", d / "input.json", c.wasm, c.zkey, d / "proof2.json", d / "public2.json",
                       "--backend", "cpu", "--service", "--json", "-v")
    assert again.returncode == 0, again.stderr
    used2 = json.loads(again.stdout)["service"]
    assert used2["pid"] == used["pid"] and not used2["started"] and not used2["key_loaded"]
    assert f"by the prover service pid {used['pid']} (warm, key resident)" in again.stderr
    assert _accepted_by_snarkjs(c, d / "public2.json", d / "proof2.json")
    assert (d / "public2.json").read_bytes() == (d / "snarkjs_public.json").read_bytes()
    status = client.status()
    assert status["jobs_done"] == 2 and status["key_evictions"] == 0
    assert [k["directory"] for k in status["resident_keys"]] == [key_dir]
    assert SharedStaging.from_settings().leases() == []


@pytest.mark.slow
def test_the_services_refusals_are_the_in_process_ones_and_write_nothing(chain, ceremony):
    c, d, client = chain["circuit"], chain["dir"], chain["client"]
    out = d / "out"
    out.mkdir()
    proof, public = out / "proof.json", out / "public.json"
    # chain_k2's witness has chain's signals but not its constraints: a proof that does not verify
    other = ceremony["chain_k2"].witness(INPUTS, "service_k2")
    in_process = _refusal(_proofflow("groth16", "prove", c.zkey, other, proof, public, "--backend", "cpu",
                                     "--no-service"))
    assert VERIFIES_NOT in in_process
    assert not client.path.exists()  # --no-service started no service
    via_service = _refusal(_proofflow("groth16", "prove", c.zkey, other, proof, public, "--backend", "cpu",
                                      "--service"))
    assert via_service.endswith(in_process), (via_service, in_process)
    status = client.status()
    assert status["jobs_failed"] == 1 and status["jobs_done"] == 0

    # another circuit's witness does not fit the zkey: refused before any job, as in-process
    gadgets = ceremony["gadgets"].witness({"secret": 123456789, "salt": 42, "bound": 10**9}, "service_other")
    line = _refusal(_proofflow("groth16", "prove", c.zkey, gadgets, proof, public, "--backend", "cpu", "--service"))
    assert "number of signals" in line and str(gadgets) in line
    assert list(out.iterdir()) == []  # no output, no temporary
    assert client.status()["jobs_failed"] == 1
    assert SharedStaging.from_settings().leases() == []


@pytest.mark.slow
def test_the_setting_sends_cpu_proofs_to_the_service_and_the_flag_overrides_it(chain, monkeypatch):
    c, d = chain["circuit"], chain["dir"]
    monkeypatch.setenv("PROOFFLOW_GROTH16_SERVICE", "on")
    on = _proofflow("g16p", c.zkey, chain["wtns"], d / "p.json", d / "q.json", "--backend", "cpu", "--json")
    assert on.returncode == 0 and json.loads(on.stdout)["service"]["device"] == "cpu", on.stderr
    off = _proofflow("g16p", c.zkey, chain["wtns"], d / "p.json", d / "q.json", "--backend", "cpu", "--json",
                     "--no-service")
    assert off.returncode == 0 and json.loads(off.stdout)["service"] is None, off.stderr
    assert _accepted_by_snarkjs(c, d / "q.json", d / "p.json")


def test_where_a_drop_in_proof_goes(monkeypatch):
    from proofflow.prover.circom.dropin import uses_service
    monkeypatch.delenv("PROOFFLOW_GROTH16_SERVICE", raising=False)
    assert uses_service("gpu") and not uses_service("cpu")  # auto: the warm service on the GPU only
    assert uses_service("cpu", True) and not uses_service("gpu", False)
    monkeypatch.setenv("PROOFFLOW_GROTH16_SERVICE", "off")
    assert not uses_service("gpu") and uses_service("gpu", True)
    help_text = _proofflow("groth16", "prove", "--help").stdout
    assert "--no-service" in help_text and "warm prover service" in help_text
