"""A circomlib circuit on BN254 end to end, as a user types it (issue #37): circuits/gadgets.circom
(circomlib's Num2Bits, LessThan and Poseidon) compiled with ``circom2 -p bn128``, a small real
snarkjs ceremony, ``proofflow circuit add`` (the curve comes from the files) and ``proofflow
run`` with no ``--curve``. snarkjs verifies the bundle's proofs and proofflow snarkjs's, the
public signals are snarkjs's, and snarkjs's verifier contract accepts the bundle's calldata on
the EVM and refuses it with a public signal changed. A ``--curve`` that contradicts the
circuit's is refused before any run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import evm
from proofflow.prover import bundle
from proofflow.prover.circom import calldata

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BOUND = 2**40
INPUTS = [{"secret": 5, "salt": 77, "bound": BOUND}, {"secret": BOUND + 3, "salt": 2**200 + 1, "bound": BOUND}]


def _proofflow(home: Path, *args) -> subprocess.CompletedProcess:
    """The proofflow command in a fresh home, with no proofflow or Airflow settings inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update(PROOFFLOW_HOME=str(home), PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "proofflow.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)


def test_a_registered_bn128_circuit_runs_without_curve_and_verifies_in_snarkjs_and_on_the_evm(
        toolchain, bn128_gadgets, tmp_path):
    c, home = bn128_gadgets, tmp_path / "home"
    added = _proofflow(home, "circuit", "add", "gadgets", "--r1cs", c.r1cs, "--zkey", c.zkey, "--wasm", c.wasm)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["curve"] == "bn254" and "registered gadgets over bn254" in added.stderr
    listed = _proofflow(home, "circuit", "list")
    assert listed.stdout.split()[:2] == ["gadgets", "bn254"], listed.stdout

    inputs = []
    for i, values in enumerate(INPUTS):
        inputs.append(tmp_path / f"input{i}.json")
        inputs[-1].write_text(json.dumps({k: str(v) for k, v in values.items()}))
    refused = _proofflow(home, "run", "--circuit", "gadgets", "--curve", "bls12_381", "--inputs", *inputs)
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        "error: invalid proof_run parameters: curve bls12_381 contradicts circuit 'gadgets', which is over bn254 "
        "(its files' curve): leave the curve out to take the circuit's"], refused.stderr

    run = _proofflow(home, "run", "--circuit", "gadgets", "--inputs", *inputs, "--backend", "cpu", "--json")
    assert run.returncode == 0, run.stderr[-4000:]
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert (summary["curve"], summary["partitions"], summary["proofs_verified"]) == ("bn254", 2, 2)
    out = Path(summary["bundle_dir"])
    vk = out / "verification_key.json"
    assert json.loads(vk.read_text()) == json.loads(c.vk.read_text())  # snarkjs's export of the zkey

    honest, tampered = [], []
    for p, values in enumerate(INPUTS):
        proof, public = (out / name for name in bundle.snarkjs_names(p))
        assert "OK" in toolchain.snarkjs("groth16", "verify", vk, public, proof).stdout
        their_public, their_proof = c.snarkjs_proof(values, f"snarkjs{p}")
        signals = json.loads(public.read_text())
        assert signals == json.loads(their_public.read_text())  # [digest, below, bound]: outputs first
        assert signals[1:] == [str(int(values["secret"] < values["bound"])), str(values["bound"])]
        ours = _proofflow(home, "groth16", "verify", vk, their_public, their_proof)
        assert ours.returncode == 0, ours.stderr
        held = (out / bundle.calldata_name(p)).read_text()
        assert held == toolchain.snarkjs("zkey", "export", "soliditycalldata", public, proof).stdout
        honest.append(held)
        changed = [signals[0], str(1 - int(signals[1])), signals[2]]
        tampered.append(calldata.calldata(json.loads(proof.read_text()), changed))

    contract = evm.verifier_contract(toolchain, c.zkey, tmp_path / "contract")
    calls = contract.calls(honest + tampered)
    assert [call.verified for call in calls] == [True, True, False, False], calls
    assert not any(call.reverted for call in calls)
