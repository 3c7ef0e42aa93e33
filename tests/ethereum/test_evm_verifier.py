"""Ethereum verification (issue #37, item 3) against the real toolchain: a circuit compiled
with ``circom2 -p bn128``, a small snarkjs ceremony, snarkjs's proofs. proofflow's Solidity
calldata is byte for byte what ``snarkjs zkey export soliditycalldata`` prints (module and
CLI); snarkjs's verifier contract, compiled with solcjs and run in @ethereumjs/vm, returns
true for each proof and false for a tampered proof or public signal. Once proofflow proves
on BN254, its own proofs go through the same contract (the last test)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from circom_files import BN128_Q, BN128_R
from proofflow.prover.circom import calldata
from proofflow.prover.curves import registry

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
INPUTS = [{"x": 3, "c": 5}, {"x": 7, "c": 11}, {"x": 2**200 + 12345, "c": 2**100 + 1}]


@pytest.fixture(scope="module")
def proofs(bn128_chain) -> list[tuple[Path, Path]]:
    """(public.json, proof.json) of snarkjs's proofs, one per INPUTS."""
    return [bn128_chain.snarkjs_proof(inputs, f"snarkjs{i}") for i, inputs in enumerate(INPUTS)]


def _soliditycalldata(toolchain, public: Path, proof: Path) -> str:
    return toolchain.snarkjs("zkey", "export", "soliditycalldata", public, proof).stdout


def _proofflow(cwd: Path, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update(PROOFFLOW_HOME=str(cwd / "home"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "proofflow.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=300)


def _load(public: Path, proof: Path) -> tuple[list, dict]:
    return json.loads(public.read_text()), json.loads(proof.read_text())


def test_calldata_is_snarkjs_soliditycalldata(toolchain, proofs):
    for public, proof in proofs:
        theirs = _soliditycalldata(toolchain, public, proof)
        assert calldata.calldata_files(public, proof) + "\n" == theirs


def test_the_cli_prints_snarkjs_soliditycalldata(toolchain, proofs, tmp_path):
    (public, proof), (public2, proof2) = proofs[:2]
    out = _proofflow(tmp_path, "groth16", "calldata", public, proof)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout == _soliditycalldata(toolchain, public, proof)
    # snarkjs's alias, and its default file names public.json and proof.json
    out = _proofflow(proof2.parent, "zkesc")
    assert out.returncode == 0, out.stderr
    assert out.stdout == _soliditycalldata(toolchain, public2, proof2)


def test_the_cli_refuses_a_proof_not_on_bn254(proofs, tmp_path):
    public, proof = proofs[0]
    other = tmp_path / "bls_proof.json"
    other.write_text(json.dumps({**json.loads(proof.read_text()), "curve": "bls12381"}))
    out = _proofflow(tmp_path, "groth16", "calldata", public, other)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {other}: ") and "bls12381" in lines[0], out.stderr
    assert "bn128" in lines[0] and "EIP-196/197" in lines[0]


def _tampered(public: list, proof: dict) -> dict[str, str]:
    """Calldata of the proof altered in one value each: names to calldata."""
    (ax, ay, _), ((x0, x1), (y0, y1), one), (cx, cy, _) = proof["pi_a"], proof["pi_b"], proof["pi_c"]
    y, x = (int(v) for v in public)
    return {
        "A negated": calldata.calldata({**proof, "pi_a": [ax, str(BN128_Q - int(ay)), "1"]}, public),  # on the curve
        "C off the curve": calldata.calldata({**proof, "pi_c": [cx, str((int(cy) + 1) % BN128_Q), "1"]}, public),
        # B with each Fq2 as [c0, c1], as in snarkjs's JSON: what calldata's (c1, c0) swap undoes
        "B unswapped": calldata.calldata({**proof, "pi_b": [[x1, x0], [y1, y0], one]}, public),
        "output signal + 1": calldata.calldata(proof, [str(y + 1), str(x)]),
        "input signal + r": calldata.calldata(proof, [str(y), str(x + BN128_R)]),  # the same x mod r
    }


def test_the_verifier_contract_accepts_the_proofs_and_rejects_tampered_ones(contract, proofs):
    honest = [calldata.calldata_files(public, proof) for public, proof in proofs]
    tampered = _tampered(*_load(*proofs[0]))
    calls = contract.calls(honest + list(tampered.values()))
    assert [c.verified for c in calls[:len(honest)]] == [True] * len(honest), calls
    for name, call in zip(tampered, calls[len(honest):]):
        assert not call.verified and not call.reverted, (name, call)
    assert all(c.gas > 0 for c in calls)


@pytest.mark.skipif(registry.by_snarkjs_name("bn128") is None, reason="proofflow has no BN254 curve yet")
def test_proofflow_bn254_proofs_verify_on_the_evm(toolchain, bn128_chain, contract, tmp_path):
    """proofflow's drop-in proves on the bn128 zkey; the proof, and the calldata file a
    BN254 bundle holds for it, are snarkjs's calldata and verify on the EVM."""
    from proofflow.prover import bundle
    from proofflow.prover.circom import snarkjs_json
    wtns = bn128_chain.witness(INPUTS[1], "proofflow")
    public, proof = tmp_path / "public.json", tmp_path / "proof.json"
    out = _proofflow(tmp_path, "groth16", "prove", bn128_chain.zkey, wtns, proof, public, "--backend", "cpu",
                     "--no-service")
    assert out.returncode == 0, out.stderr
    theirs = _soliditycalldata(toolchain, public, proof)
    assert calldata.calldata_files(public, proof) + "\n" == theirs
    assert contract.verify_files(public, proof).verified
    assert not any(c.verified for c in contract.calls(list(_tampered(*_load(public, proof)).values())))

    d = tmp_path / "bundle"
    d.mkdir()
    bundle.write_proof(d, 0, snarkjs_json.read_proof(proof), snarkjs_json.read_public(public))
    proof_json, public_json = (d / name for name in bundle.snarkjs_names(0))
    held = (d / bundle.calldata_name(0)).read_text()
    assert held == _soliditycalldata(toolchain, public_json, proof_json) == theirs
