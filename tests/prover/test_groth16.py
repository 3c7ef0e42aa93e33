"""Groth16 end to end on the CPU: proofs verify; tampering does not."""
import random

import numpy as np
import pytest

from proofflow.prover import bundle, points
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import prover, verifier
from proofflow.prover.groth16.data_structures import KeyFormatError, Proof, ProvingKey, VerifyingKey

fr = Fr.of(CURVE)


@pytest.fixture(scope="module")
def proofs(pk10, mimc10):
    out = []
    for part in range(2):
        inst = mimc10.instance(7, part)
        out.append((inst, prover.prove(pk10, mimc10.constraint_system, inst.witness, get_backend("cpu"),
                                       np.random.default_rng(part))))
    return out


def test_msm_matches_naive_scalar_multiplication():
    rnd = random.Random(2)
    ks = [rnd.randrange(fr.MODULUS) for _ in range(9)] + [0, 1, fr.MODULUS - 1]
    for group in ("g1", "g2"):
        g = CURVE.point_class(group)()
        pts = [g * CURVE.scalar(rnd.randrange(fr.MODULUS)) for _ in ks]
        table = points.PointTable.from_points(CURVE, group, pts)
        expected = CURVE.point_class(group).identity()
        for k, p in zip(ks, pts):
            expected = expected + p * CURVE.scalar(k)
        assert points.msm(table, fr.from_ints(ks)) == expected


def test_two_partitions_verify(pk10, proofs):
    for inst, proof in proofs:
        assert verifier.verify(pk10.vk, inst.public_inputs, proof)


def test_proof_is_192_compressed_bytes_and_round_trips(pk10, proofs):
    inst, proof = proofs[0]
    raw = proof.to_bytes()
    assert len(raw) == 192
    assert verifier.verify(pk10.vk, inst.public_inputs, Proof.from_bytes(CURVE, raw))


def test_changed_public_input_fails(pk10, proofs):
    inst, proof = proofs[0]
    x0, y = inst.public_inputs
    assert not verifier.verify(pk10.vk, [x0, (y + 1) % fr.MODULUS], proof)
    # another partition's inputs with this partition's proof
    assert not verifier.verify(pk10.vk, proofs[1][0].public_inputs, proof)


@pytest.mark.parametrize("offset", [5, 47, 60, 143, 150, 191])
def test_flipped_byte_fails(pk10, proofs, offset):
    inst, proof = proofs[0]
    raw = bytearray(proof.to_bytes())
    raw[offset] ^= 0x01
    try:
        bad = Proof.from_bytes(CURVE, bytes(raw))
    except ValueError:
        return  # not even a valid point: rejected
    assert not verifier.verify(pk10.vk, inst.public_inputs, bad)


def test_wrong_input_count_and_range(pk10, proofs):
    inst, proof = proofs[0]
    with pytest.raises(ValueError, match="takes 2 public inputs"):
        verifier.verify(pk10.vk, inst.public_inputs[:1], proof)
    with pytest.raises(ValueError, match="not a field element"):
        verifier.verify(pk10.vk, [fr.MODULUS, 0], proof)


def test_proving_key_must_match_circuit(pk10):
    from proofflow.prover.circuits.by_name import get_circuit
    other = get_circuit("mimc", 9)
    with pytest.raises(ValueError, match="does not match"):
        prover.prove(pk10, other.constraint_system, other.instance(0, 0).witness, get_backend("cpu"))


def test_key_files_detect_corruption(pk10, tmp_path):
    pk10.save(tmp_path)
    assert ProvingKey.load(tmp_path).vk.to_json() == pk10.vk.to_json()
    table = tmp_path / "h_query.npy"
    data = bytearray(table.read_bytes())
    data[-5] ^= 0xFF
    table.write_bytes(bytes(data))
    with pytest.raises(KeyFormatError, match="digest"):
        ProvingKey.load(tmp_path)
    (tmp_path / "vk.json").write_text("{not json")
    with pytest.raises(KeyFormatError):
        VerifyingKey.load(tmp_path / "vk.json")


def test_bundle_verification(pk10, proofs, tmp_path):
    entries = []
    for inst, proof in proofs:
        bundle.write_proof(tmp_path, inst.partition, proof)
        entries.append((inst.partition, inst.public_inputs))
    bundle.write_manifest(tmp_path, "mimc", 10, pk10.vk, entries)
    assert [r.ok for r in bundle.verify_bundle(tmp_path)] == [True, True]
    (tmp_path / bundle.proof_name(1)).write_bytes(proofs[0][1].to_bytes())  # swap in the wrong proof
    assert [r.ok for r in bundle.verify_bundle(tmp_path)] == [True, False]
    (tmp_path / bundle.proof_name(1)).write_bytes(b"\x00" * 100)
    with pytest.raises(bundle.BundleError, match="192 bytes"):
        bundle.verify_bundle(tmp_path)
