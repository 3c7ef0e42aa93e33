"""proofflow against the real toolchain: circom-compiled circuits, a snarkjs ceremony on
BLS12-381, witnesses by snarkjs. Each result is checked by the other side: proofflow's
proofs by ``snarkjs groth16 verify``, snarkjs's proofs by proofflow's verifier."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from proofflow.prover import circom
from proofflow.prover.circom import zkey as zkey_format
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16.prover import ProofCheckFailed

fr = Fr.of(CURVE)

pytestmark = pytest.mark.slow

INPUTS = {"gadgets": {"secret": 123456789, "salt": 42, "bound": 10**9}, "chain": {"x": 3, "c": 5}}


@pytest.fixture(scope="module")
def proved(ceremony, tmp_path_factory):
    """Per circuit: its witness, proofflow's proof.json/public.json, snarkjs's own."""
    out = {}
    for name, inputs in INPUTS.items():
        c = ceremony[name]
        d = tmp_path_factory.mktemp(name)
        wtns = c.witness(inputs)
        witness = circom.read_wtns(wtns, CURVE)
        zkey = circom.read_zkey(c.zkey)
        proof = circom.prove(zkey, witness, r1cs=circom.read_r1cs(c.r1cs), rng=np.random.default_rng(1))
        ours = {"proof": d / "proof.json", "public": d / "public.json"}
        circom.write_proof(ours["proof"], proof)
        circom.write_public(ours["public"], circom.public_signals(zkey, witness))
        theirs = {"proof": d / "snarkjs_proof.json", "public": d / "snarkjs_public.json"}
        c.toolchain.snarkjs("groth16", "prove", c.zkey, wtns, theirs["proof"], theirs["public"])
        out[name] = {"circuit": c, "wtns": wtns, "witness": witness, "zkey": zkey, "ours": ours, "theirs": theirs,
                     "dir": d}
    return out


def snarkjs_accepts(c, vk, public, proof) -> bool:
    proc = c.toolchain.snarkjs("groth16", "verify", vk, public, proof, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert ("OK!" in proc.stdout) == (proc.returncode == 0)
    return proc.returncode == 0


@pytest.mark.parametrize("name", INPUTS)
def test_proofflow_proof_verifies_in_snarkjs(proved, name):
    p = proved[name]
    assert snarkjs_accepts(p["circuit"], p["circuit"].vk, p["ours"]["public"], p["ours"]["proof"])
    # the public signals are the ones snarkjs lists for the same witness, outputs first
    assert json.loads(p["ours"]["public"].read_text()) == json.loads(p["theirs"]["public"].read_text())
    assert circom.verify_files(p["circuit"].vk, p["ours"]["public"], p["ours"]["proof"])


@pytest.mark.parametrize("name", INPUTS)
def test_snarkjs_proof_verifies_in_proofflow(proved, name):
    p = proved[name]
    assert circom.verify_files(p["circuit"].vk, p["theirs"]["public"], p["theirs"]["proof"])
    # the zkey's verifying key is the one snarkjs exports
    assert circom.read_verification_key(p["circuit"].vk) == p["zkey"].vk


def test_gadget_outputs_are_what_the_circuit_computes(proved):
    digest, below, bound = circom.read_public(proved["gadgets"]["ours"]["public"])
    assert (below, bound) == (1, 10**9)  # 123456789 < 10^9
    assert 0 < digest < fr.MODULUS


def _tamper(p, tmp_path, proof_edit=None, public_edit=None):
    proof = json.loads(p["ours"]["proof"].read_text())
    public = json.loads(p["ours"]["public"].read_text())
    if proof_edit:
        proof_edit(proof)
    if public_edit:
        public_edit(public)
    paths = tmp_path / "proof.json", tmp_path / "public.json"
    paths[0].write_text(json.dumps(proof))
    paths[1].write_text(json.dumps(public))
    return paths


def _negate_a(proof):
    x, y, z = proof["pi_a"]
    proof["pi_a"] = [x, str(CURVE.fq.modulus - int(y)), z]


def _swap_a_c(proof):
    proof["pi_a"], proof["pi_c"] = proof["pi_c"], proof["pi_a"]


def _bump_last(public):
    public[-1] = str(int(public[-1]) + 1)


def _add_r(public):  # the same value mod r: snarkjs rejects it rather than reducing it
    public[-1] = str(int(public[-1]) + fr.MODULUS)


@pytest.mark.parametrize("proof_edit, public_edit", [(_negate_a, None), (_swap_a_c, None), (None, _bump_last),
                                                     (None, _add_r)],
                         ids=["pi_a negated", "pi_a and pi_c swapped", "public input changed", "public input + r"])
def test_tampering_is_rejected_by_both(proved, tmp_path, proof_edit, public_edit):
    p = proved["chain"]
    proof, public = _tamper(p, tmp_path, proof_edit, public_edit)
    assert not snarkjs_accepts(p["circuit"], p["circuit"].vk, public, proof)
    assert not circom.verify_files(p["circuit"].vk, public, proof)


def test_proof_point_off_the_curve_is_named(proved, tmp_path):
    p = proved["chain"]

    def off_curve(proof):
        proof["pi_c"][0] = str(int(proof["pi_c"][0]) ^ 1)

    proof, public = _tamper(p, tmp_path, off_curve)
    assert not snarkjs_accepts(p["circuit"], p["circuit"].vk, public, proof)
    with pytest.raises(circom.CorruptFile, match=r"proof\.json: pi_c: is not a point of G1") as exc:
        circom.verify_files(p["circuit"].vk, public, proof)
    assert exc.value.section == "pi_c"


def test_edited_witness_names_the_constraint_snarkjs_names(proved, tmp_path):
    """A private wire changed in the .wtns: proofflow names the first failing constraint,
    the same one ``snarkjs wtns check`` stops at."""
    p = proved["gadgets"]
    raw = bytearray(p["wtns"].read_bytes())
    values = p["zkey"].n_vars * fr.BYTES
    start = len(raw) - values  # section 2 is last: the values fill the end of the file
    wire = p["zkey"].n_vars - 1
    pos = start + wire * fr.BYTES
    raw[pos:pos + fr.BYTES] = ((int.from_bytes(raw[pos:pos + fr.BYTES], "little") + 1) % fr.MODULUS).to_bytes(
        fr.BYTES, "little")
    bad = tmp_path / "bad.wtns"
    bad.write_bytes(bytes(raw))
    check = p["circuit"].toolchain.snarkjs("wtns", "check", p["circuit"].r1cs, bad, check=False)
    expected = int(re.search(r"aborting checking process at constraint (\d+)", check.stdout + check.stderr).group(1))
    with pytest.raises(circom.UnsatisfiedConstraint, match=f"constraint {expected}$") as exc:
        circom.prove(p["zkey"], circom.read_wtns(bad, CURVE), r1cs=circom.read_r1cs(p["circuit"].r1cs))
    assert exc.value.index == expected
    # without the r1cs the constraint cannot be named, but no invalid proof comes out
    with pytest.raises(ProofCheckFailed, match="pass the r1cs"):
        circom.prove(p["zkey"], circom.read_wtns(bad, CURVE))


def test_zkey_of_another_circuit(ceremony, proved):
    chain = circom.read_r1cs(ceremony["chain"].r1cs)
    gadgets_key = proved["gadgets"]["zkey"]
    with pytest.raises(circom.KeyMismatch, match=r"nVars differs \(zkey 652, r1cs 103\)"):
        circom.prove(gadgets_key, proved["chain"]["witness"], r1cs=chain)
    with pytest.raises(circom.KeyMismatch, match="does not match the witness"):
        circom.prove(gadgets_key, proved["chain"]["witness"])
    # the same shape with other coefficients: only the coefficients tell them apart
    k2 = circom.read_zkey(ceremony["chain_k2"].zkey)
    assert (k2.n_vars, k2.n_public, k2.domain_size) == (proved["chain"]["zkey"].n_vars, 2, 128)
    with pytest.raises(circom.KeyMismatch,
                       match=r"^the zkey does not match the r1cs: matrix A differs \(its coefficients, first at constraint 0\)$"):
        k2.check_matches(chain)


def test_circuit_compiled_for_another_prime(toolchain, bn128_compiled, tmp_path):
    r1cs, wasm = bn128_compiled["chain"]
    with pytest.raises(circom.WrongField, match="BN254 scalar field, not the BLS12-381 scalar field"):
        circom.read_r1cs(r1cs, CURVE)
    inputs = tmp_path / "in.json"
    inputs.write_text('{"x": "3", "c": "5"}')
    toolchain.snarkjs("wtns", "calculate", wasm, inputs, tmp_path / "w.wtns")
    with pytest.raises(circom.WrongField, match="BN254 scalar field, not the BLS12-381 scalar field"):
        circom.read_wtns(tmp_path / "w.wtns", CURVE)


@pytest.mark.parametrize("kind", ["r1cs", "wtns", "zkey"])
def test_truncated_files_name_the_file_and_section(proved, tmp_path, kind):
    p = proved["gadgets"]
    src = {"r1cs": p["circuit"].r1cs, "wtns": p["wtns"], "zkey": p["circuit"].zkey}[kind]
    read = {"r1cs": circom.read_r1cs, "wtns": lambda path: circom.read_wtns(path, CURVE),
            "zkey": circom.read_zkey}[kind]
    data = src.read_bytes()
    cut = tmp_path / f"cut.{kind}"
    for keep in (10, 40, len(data) // 2, len(data) - 1):
        cut.write_bytes(data[:keep])
        with pytest.raises(circom.CorruptFile, match=re.escape(str(cut))) as exc:
            read(cut)
        assert "truncated" in str(exc.value) or "too short" in str(exc.value)
        if keep > 40:
            assert exc.value.section is not None


def test_zkey_with_a_changed_coefficient_is_caught(proved, tmp_path):
    """A flipped bit in section 4: the key no longer matches the r1cs, at that entry's row."""
    p = proved["chain"]
    data = bytearray(p["circuit"].zkey.read_bytes())
    f = zkey_format.binfile.read(p["circuit"].zkey, "zkey", 1)
    (offset, _), = f.sections[zkey_format.COEFFICIENTS]
    entry = 5
    pos = offset + 4 + entry * 44
    constraint = int.from_bytes(data[pos + 4:pos + 8], "little")
    data[pos + 12] ^= 1  # the value's lowest byte
    bad = tmp_path / "bad.zkey"
    bad.write_bytes(bytes(data))
    with pytest.raises(circom.KeyMismatch, match=f"at constraint {constraint}"):
        circom.read_zkey(bad).check_matches(circom.read_r1cs(p["circuit"].r1cs))
