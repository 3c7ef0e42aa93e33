"""The bit-gadget chain (proofflow/prover/circuits/bits.py): its witness against a bit-by-bit
reference, its C a/b/c against the constraint system's sparse products, Groth16 proofs that
pass the pairing check on the CPU backend (on BLS12-381 and BN254), and the family wherever
mimc is offered: the command line and proof_run's params."""
import subprocess
import sys

import numpy as np
import pytest

from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circuits import bits
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator, prover, r1cs_to_qap, verifier
from proofflow.prover.r1cs import UnsatisfiedConstraint
from proofflow.spec import validate_params

fr = Fr.of(CURVE)

W = bits.WORD


def reference_witness(x0: int, messages: list[int]) -> list[int]:
    """The witness from its definition, one bit at a time: s' = s XOR (m AND rotr(s, ROT))."""
    s = [(x0 >> j) & 1 for j in range(W)]
    blocks = []
    for m in messages:
        mb = [(m >> j) & 1 for j in range(W)]
        a = [mb[j] & s[(j + bits.ROT) % W] for j in range(W)]
        s = [s[j] ^ a[j] for j in range(W)]
        blocks += [m] + mb + a + s
    y = sum(b << j for j, b in enumerate(s))
    return [1, x0, y] + [(x0 >> j) & 1 for j in range(W)] + blocks


@pytest.mark.parametrize("log2", [8, 9, 12, 16])
def test_fills_the_domain(log2):
    c = get_circuit("bits", log2)
    rows = c.num_constraints + c.num_public + 1
    assert (1 << log2) - bits.BLOCK < rows <= 1 << log2 and c.domain_size == 1 << log2 and c.blocks >= 2


@pytest.mark.parametrize("log2,curve", [(8, "bls12_381"), (12, "bls12_381"), (8, "bn254")])
def test_witness_matches_the_bit_reference_and_is_mostly_bits(log2, curve):
    c = get_circuit("bits", log2, curve)
    inst = c.instance(5, 3)
    w = Fr.of(c.curve).to_ints(inst.witness)
    x0 = c.start(5, 3)
    assert w == reference_witness(x0, c.messages(5, 3).tolist())
    assert inst.public_inputs == [x0, w[2]] and x0 < 1 << W
    assert sum(v in (0, 1) for v in w) / len(w) > 0.98


@pytest.mark.parametrize("log2", [8, 9, 12])
def test_the_c_witness_map_equals_the_sparse_products(log2):
    c = get_circuit("bits", log2)
    cs = c.constraint_system
    assert (c.num_variables, c.num_constraints, c.num_public) == (cs.num_variables, cs.num_constraints, cs.num_public)
    inst = c.instance(1, 0)
    ours = c.witness_map(inst.witness)
    generic = r1cs_to_qap.witness_map(cs, inst.witness)
    assert all(np.array_equal(x, y) for x, y in zip(ours, generic))
    bufs = tuple(fr.ones(c.domain_size) for _ in range(3))  # stale contents are overwritten
    assert all(np.array_equal(x, y) for x, y in zip(c.witness_map(inst.witness, out=bufs), generic))


@pytest.mark.parametrize("var", [5, 35, 40, 80, 110, 132])  # x0's bit; block 0's m, m bit, a bit, s' bit; block 1's m
def test_a_broken_witness_fails_at_the_row_the_constraint_system_names(var):
    c = get_circuit("bits", 9)
    w = c.instance(2, 0).witness.copy()
    w[var] = fr.add(w[var:var + 1], fr.constant(1))[0]
    with pytest.raises(UnsatisfiedConstraint) as ours:
        c.witness_map(w)
    with pytest.raises(UnsatisfiedConstraint) as reference:
        r1cs_to_qap.witness_map(c.constraint_system, w)
    assert ours.value.index == reference.value.index


def test_partitions_have_their_own_inputs():
    c = get_circuit("bits", 9)
    a, b = c.instance(3, 0), c.instance(3, 1)
    assert a.public_inputs != b.public_inputs and c.instance(3, 0).public_inputs == a.public_inputs
    with pytest.raises(ValueError, match="takes no input"):
        c.instance(3, 0, input={"x": 1})


@pytest.mark.parametrize("log2,curve", [(8, "bls12_381"), (10, "bls12_381"), (8, "bn254")])
def test_proofs_verify_on_the_cpu_backend(log2, curve):
    c = get_circuit("bits", log2, curve)
    pk = generator.setup(c, seed=4)
    assert pk.curve is c.curve and c.curve.name == curve
    cs = c.constraint_system
    for part in range(2):
        inst = c.instance(11, part)
        proof = prover.prove(pk, cs, inst.witness, get_backend("cpu"), np.random.default_rng(part),
                             abc=c.witness_map(inst.witness))
        assert verifier.verify(pk.vk, inst.public_inputs, proof)
        x0, y = inst.public_inputs
        assert not verifier.verify(pk.vk, [x0, y ^ 1], proof)


def test_the_command_line_sets_up_proves_and_verifies_bits(tmp_path):
    def run(*args):
        proc = subprocess.run([sys.executable, "-m", "proofflow.prover", *map(str, args)], capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc
    run("setup", "--circuit", "bits", "--log2", 8, "--out", tmp_path / "params", "--backend", "cpu", "--quiet")
    run("prove", "--params", tmp_path / "params", "--partitions", 2, "--out", tmp_path / "proofs", "--backend", "cpu")
    assert "2/2 proofs verify" in run("verify", tmp_path / "proofs").stdout


def test_proof_run_params_take_bits():
    from proofflow.airflow.params import schema
    assert "bits" in schema()["circuit"]["examples"]
    config = validate_params({"circuit": "bits", "log2": 12, "partitions": 2}, gpu_available=lambda: False)
    assert (config.circuit, config.circom, config.backend) == ("bits", False, "cpu")
