"""BN254 (circom's default prime, snarkjs's "bn128") against the real toolchain: the session's
chain circuit compiled with ``-p bn128`` and its small bn128 ceremony, witnesses by snarkjs.
proofflow reads the files, its proofs pass ``snarkjs groth16 verify``, snarkjs's pass
proofflow's verifier, the verification key it writes is snarkjs's export field for field
(vk_alphabeta_12: the pairing's Fq12 in snarkjs's tower order), the Solidity calldata is what
snarkjs prints, and a test zkey proofflow writes is one snarkjs proves and verifies with."""
from __future__ import annotations

import json

import numpy as np
import pytest

from proofflow.prover import circom
from proofflow.prover.curves import ethereum
from proofflow.prover.curves.bn254 import BN254

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bn(bn128_chain):
    """The session's BN254 chain circuit (its ceremony: tests/helpers/circom_fixtures.py);
    snarkjs's witness and proof."""
    c = bn128_chain
    wtns = c.witness({"x": 3, "c": 5}, "bn254")
    theirs = c.dir / "snarkjs_proof.json", c.dir / "snarkjs_public.json"
    c.toolchain.snarkjs("groth16", "prove", c.zkey, wtns, *theirs)
    return {"circuit": c, "wtns": wtns, "theirs": theirs}


def _accepts(c, vk, public, proof) -> bool:
    proc = c.toolchain.snarkjs("groth16", "verify", vk, public, proof, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode == 0


def test_the_files_are_read_as_bn254(bn):
    c = bn["circuit"]
    r1cs, zkey = circom.read_r1cs(c.r1cs), circom.read_zkey(c.zkey)
    assert r1cs.cs.curve is BN254 and zkey.pk.curve is BN254 and zkey.vk.curve is BN254
    assert circom.read_verification_key(c.vk) == zkey.vk
    witness = circom.read_wtns(bn["wtns"], BN254)
    assert len(witness) == zkey.n_vars


def test_proofs_cross_verify(bn, tmp_path):
    c = bn["circuit"]
    zkey, witness = circom.read_zkey(c.zkey), circom.read_wtns(bn["wtns"], BN254)
    proof = circom.prove(zkey, witness, r1cs=circom.read_r1cs(c.r1cs), rng=np.random.default_rng(1))
    ours = tmp_path / "proof.json", tmp_path / "public.json"
    circom.write_proof(ours[0], proof)
    circom.write_public(ours[1], circom.public_signals(zkey, witness))
    assert json.loads(ours[0].read_text())["curve"] == "bn128"
    assert json.loads(ours[1].read_text()) == json.loads(bn["theirs"][1].read_text())
    assert _accepts(c, c.vk, ours[1], ours[0])
    assert circom.verify_files(c.vk, *reversed(bn["theirs"]))
    assert circom.verify_files(c.vk, ours[1], ours[0])
    # a tampered public signal fails on both sides
    public = json.loads(ours[1].read_text())
    public[-1] = str(int(public[-1]) + 1)
    bad = tmp_path / "bad_public.json"
    bad.write_text(json.dumps(public))
    assert not _accepts(c, c.vk, bad, ours[0])
    assert not circom.verify_files(c.vk, bad, ours[0])


def test_the_solidity_calldata_is_snarkjs(bn):
    c = bn["circuit"]
    proof_path, public_path = bn["theirs"]
    printed = c.toolchain.snarkjs("zkey", "export", "soliditycalldata", public_path, proof_path).stdout.strip()
    proof, public = circom.read_proof(proof_path), circom.read_public(public_path)
    assert ethereum.solidity_calldata(proof, public) == printed


def test_the_verification_key_is_snarkjs_export(bn, tmp_path):
    c = bn["circuit"]
    circom.write_verification_key(tmp_path / "vk.json", circom.read_zkey(c.zkey).vk)
    ours, theirs = json.loads((tmp_path / "vk.json").read_text()), json.loads(c.vk.read_text())
    assert ours["curve"] == theirs["curve"] == "bn128"
    assert ours["vk_alphabeta_12"] == theirs["vk_alphabeta_12"]  # e(α, β): the pairing and its tower order
    assert ours == theirs


def test_a_test_zkey_proofflow_writes_works_in_snarkjs(bn, tmp_path):
    c = bn["circuit"]
    zkey = tmp_path / "test.zkey"
    circom.write_test_zkey(circom.read_r1cs(c.r1cs), 3, zkey)
    vk = tmp_path / "vk.json"
    c.toolchain.snarkjs("zkey", "export", "verificationkey", zkey, vk)
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    c.toolchain.snarkjs("groth16", "prove", zkey, bn["wtns"], proof, public)
    assert _accepts(c, vk, public, proof)
    assert circom.verify_files(vk, public, proof)
