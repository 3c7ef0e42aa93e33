"""The MiMC chain circuit: its R1CS against an independent integer evaluation."""
import numpy as np
import pytest
from mimc_reference import reference_trace

from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves import registry
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.r1cs import UnsatisfiedConstraint

fr = Fr.of(CURVE)

P = fr.MODULUS


@pytest.mark.parametrize("log2", [8, 9, 12])
def test_fits_the_domain(log2):
    c = get_circuit("mimc", log2)
    cs = c.constraint_system
    assert cs.num_constraints + cs.num_instance <= 1 << log2
    assert r1cs_to_qap.domain_for(cs).size == 1 << log2
    assert c.rounds >= (110 if log2 >= 9 else 80)


@pytest.mark.parametrize("log2,curve", [(8, "bls12_381"), (11, "bls12_381"), (8, "bn254"), (11, "bn254")])
def test_the_c_chain_matches_a_plain_mimc_reference(log2, curve):
    c = get_circuit("mimc", log2, curve)
    f = Fr.of(c.curve)
    p = f.MODULUS
    assert c.curve.name == curve and p == registry.get_curve(curve).fr.modulus
    inst = c.instance(4, 2)
    w = f.to_ints(inst.witness)
    key, x0 = w[3], w[1]
    trace = reference_trace(c.rounds, key, x0, p)
    assert w[4:] == trace[:-1] and w[2] == trace[-1] == inst.public_inputs[1]
    y = x0
    for i in range(c.rounds):  # the ciphertext once more, as x <- (x + k + c_i)^5
        y = pow(y + key + f.to_ints(c.round_constants[i:i + 1])[0], 5, p)
    assert (y + key) % p == w[2]


@pytest.mark.parametrize("log2,curve", [(8, "bls12_381"), (9, "bls12_381"), (12, "bls12_381"), (9, "bn254")])
def test_the_c_witness_map_equals_the_sparse_products(log2, curve):
    """The chain's own a/b/c (written from its structure) are the constraint system's."""
    from proofflow.prover.groth16 import r1cs_to_qap
    c = get_circuit("mimc", log2, curve)
    fr = Fr.of(c.curve)
    inst = c.instance(1, 0)
    ours = c.witness_map(inst.witness)
    generic = r1cs_to_qap.witness_map(c.constraint_system, inst.witness)
    assert all(np.array_equal(x, y) for x, y in zip(ours, generic))
    assert (c.num_variables, c.num_constraints, c.domain_size) == (
        c.constraint_system.num_variables, c.constraint_system.num_constraints, r1cs_to_qap.domain_for(c.constraint_system).size)
    w = inst.witness.copy()
    w[7] = fr.from_ints([5])[0]
    with pytest.raises(UnsatisfiedConstraint) as bad:
        c.witness_map(w)
    with pytest.raises(UnsatisfiedConstraint) as reference:
        r1cs_to_qap.witness_map(c.constraint_system, w)
    assert bad.value.index == reference.value.index


def test_round_constants_come_from_the_cache_and_extend_it(tmp_path, monkeypatch):
    from proofflow.prover.circuits import mimc
    from proofflow.prover.circuits.base import derive
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path))
    few = mimc.round_constants(fr, 10)
    assert fr.to_ints(few) == [derive(fr.MODULUS, "proofflow/mimc5/round-constant", i) for i in range(10)]
    more = mimc.round_constants(fr, 25)
    assert fr.to_ints(more[:10]) == fr.to_ints(few) and len(more) == 25
    assert np.load(tmp_path / "mimc" / "round-constants.npy").shape[0] >= 25


def test_rows_hold_for_an_honest_witness(mimc10):
    cs = mimc10.constraint_system
    inst = mimc10.instance(3, 1)
    a, b, c = (fr.to_ints(v) for v in cs.evaluate(inst.witness))
    assert all(x * y % P == z for x, y, z in zip(a, b, c))
    assert fr.to_ints(inst.witness[:3]) == [1] + inst.public_inputs


def test_partitions_have_their_own_public_inputs(mimc10):
    a, b = mimc10.instance(3, 0), mimc10.instance(3, 1)
    assert a.public_inputs != b.public_inputs
    assert mimc10.instance(3, 0).public_inputs == a.public_inputs  # deterministic


def test_unsatisfied_witness_names_the_first_failing_constraint(mimc10):
    w = mimc10.instance(3, 0).witness.copy()
    round_i = 40
    w[5 + 3 * round_i] = fr.from_ints([12345])[0]   # t4 of round 40: first used in row 3*40+1
    with pytest.raises(UnsatisfiedConstraint) as err:
        r1cs_to_qap.witness_map(mimc10.constraint_system, w)
    assert err.value.index == 3 * round_i + 1
    assert "constraint 121" in str(err.value)


def test_writes_into_given_buffers(mimc10):
    n = 1 << 10
    bufs = tuple(fr.ones(n) for _ in range(3))  # stale contents must be overwritten
    a, b, c = r1cs_to_qap.witness_map(mimc10.constraint_system, mimc10.instance(3, 0).witness, out=bufs)
    assert all(x is y for x, y in zip((a, b, c), bufs))
    cs = mimc10.constraint_system
    assert not b[cs.num_constraints:].any() and not c[cs.num_constraints:].any()
    with pytest.raises(ValueError, match="domain's 1024"):
        r1cs_to_qap.witness_map(cs, mimc10.instance(3, 0).witness, out=(fr.zeros(8),) * 3)


@pytest.mark.parametrize("name,log2,msg", [("sha", 10, "unknown circuit"), ("mimc", 7, "8..27"),
                                           ("mimc", 28, "8..27"), ("mimc", "10", "8..27")])
def test_bad_circuit_requests(name, log2, msg):
    with pytest.raises(ValueError, match=msg):
        get_circuit(name, log2)
