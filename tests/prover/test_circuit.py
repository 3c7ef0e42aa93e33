"""The MiMC chain circuit: its R1CS against an independent integer evaluation."""
import pytest

from proofflow.prover.circuits import get_circuit
from proofflow.prover.field import fr
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.r1cs import UnsatisfiedConstraint

P = fr.MODULUS


@pytest.mark.parametrize("log2", [8, 9, 12])
def test_fits_the_domain(log2):
    c = get_circuit("mimc", log2)
    cs = c.constraint_system
    assert cs.num_constraints + cs.num_instance <= 1 << log2
    assert r1cs_to_qap.domain_for(cs).size == 1 << log2
    assert c.rounds >= (110 if log2 >= 9 else 80)


def test_ciphertext_matches_a_plain_mimc_reference():
    c = get_circuit("mimc", 8)
    key, x = 5, 11
    y = x
    for const in c.round_constants:
        y = pow(y + key + const, 5, P)
    assert c.encrypt(key, x)[-1] == (y + key) % P


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


@pytest.mark.parametrize("name,log2,msg", [("sha", 10, "unknown circuit"), ("mimc", 7, "8..24"),
                                           ("mimc", 25, "8..24"), ("mimc", "10", "8..24")])
def test_bad_circuit_requests(name, log2, msg):
    with pytest.raises(ValueError, match=msg):
        get_circuit(name, log2)
