"""The constraint matrices' products against Python integers: M·w, Mᵀ·x without the
transpose, and the QAP's u, v, w at tau (setup's evaluate_at) from the Lagrange basis
computed term by term."""
import numpy as np
import pytest

from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves.bls12_381 import BLS12_381
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.r1cs import SparseMatrix

fr = Fr.of(BLS12_381)
P = fr.MODULUS


def _random(rng, rows, cols, nnz):
    r, c = rng.integers(0, rows, nnz), rng.integers(0, cols, nnz)  # repeats kept: they add up
    # 1 and -1 are added and subtracted without a product; their neighbours are multiplied
    special = [1, P - 1, P - 2, 2, 0]
    coeffs = [special[k] if k < len(special) else int(x)
              for k, x in zip(rng.integers(0, 2 * len(special), nnz), rng.integers(0, 2**62, nnz))]
    return SparseMatrix.from_triplets(BLS12_381, rows, cols, r, c, fr.from_ints(coeffs)), list(zip(r, c, coeffs))


@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 3), (64, 200), (300, 40)])
def test_products_equal_the_sums_of_their_terms(rows, cols):
    rng = np.random.default_rng(rows * 1000 + cols)
    m, terms = _random(rng, rows, cols, 4 * max(rows, cols))
    w = [int(x) for x in rng.integers(0, 2**62, cols)]
    x = [int(v) for v in rng.integers(0, 2**62, rows)]
    mw, mtx = [0] * rows, [0] * cols
    for r, c, v in terms:
        mw[r] = (mw[r] + v * w[c]) % P
        mtx[c] = (mtx[c] + v * x[r]) % P
    assert fr.to_ints(m.matvec(fr.from_ints(w))) == mw
    assert fr.to_ints(m.rmatvec(fr.from_ints(x))) == mtx
    with pytest.raises(ValueError, match="entries, the matrix"):
        m.rmatvec(fr.zeros(rows + 1))


def test_qap_at_tau_is_the_extended_system_against_the_lagrange_basis():
    cs = get_circuit("mimc", 8).constraint_system
    tau = 0x1234567890ABCDEF
    domain, u, v, w = r1cs_to_qap.evaluate_at(cs, tau)
    n, omega = domain.size, domain.omega
    z = (pow(tau, n, P) - 1) % P
    lag = [z * pow(n, -1, P) * pow(omega, i, P) * pow(tau - pow(omega, i, P), -1, P) % P for i in range(n)]
    ext = cs.with_input_constraints  # the input rows as arkworks appends them
    for m, got in zip((ext.a, ext.b, ext.c), (u, v, w)):
        want = [0] * cs.num_variables
        rows = np.repeat(np.arange(m.rows), np.diff(m.indptr))
        for r, c, coeff in zip(rows, m.indices, fr.to_ints(m.coeffs)):
            want[c] = (want[c] + coeff * lag[r]) % P
        assert fr.to_ints(got) == want
