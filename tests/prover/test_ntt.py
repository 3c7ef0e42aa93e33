"""NTTs against a naive DFT, round trips, and the QAP's H against its definition."""
import random

import numpy as np
import pytest

from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.polynomial.domain import Radix2Domain

fr = Fr.of(CURVE)

P = fr.MODULUS


def naive_eval(coeffs, points):
    return [sum(c * pow(x, j, P) for j, c in enumerate(coeffs)) % P for x in points]


def horner(coeffs, x):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % P
    return acc


@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 5, 7])
def test_ntt_equals_naive_dft(log_n):
    d = Radix2Domain(log_n, CURVE)
    rnd = random.Random(log_n)
    coeffs = [rnd.randrange(P) for _ in range(d.size)]
    pts = [pow(d.omega, i, P) for i in range(d.size)]
    assert fr.to_ints(d.ntt(fr.from_ints(coeffs))) == naive_eval(coeffs, pts)
    coset = [d.coset_offset * x % P for x in pts]
    assert fr.to_ints(d.coset_ntt(fr.from_ints(coeffs))) == naive_eval(coeffs, coset)
    assert fr.to_ints(d.intt(fr.from_ints(naive_eval(coeffs, pts)))) == coeffs
    assert fr.to_ints(d.coset_intt(fr.from_ints(naive_eval(coeffs, coset)))) == coeffs


def test_edge_values_transform():
    d = Radix2Domain(4, CURVE)
    coeffs = [0, 1, P - 1] + [P - 1] * 13
    pts = [pow(d.omega, i, P) for i in range(16)]
    assert fr.to_ints(d.ntt(fr.from_ints(coeffs))) == naive_eval(coeffs, pts)


def test_root_of_unity_orders():
    for k in (1, 10, 24, 32):
        w = CURVE.fr.root_of_unity(k)
        assert pow(w, 1 << k, P) == 1 and pow(w, 1 << (k - 1), P) == P - 1
    with pytest.raises(ValueError):
        CURVE.fr.root_of_unity(33)


def test_round_trip_2_20():
    d = Radix2Domain(20, CURVE)
    x = fr.random(d.size, np.random.default_rng(20))
    y = d.intt(d.ntt(x.copy()))
    assert fr.equal(x, y)
    assert fr.equal(d.coset_intt(d.coset_ntt(x.copy())), x)


def test_wrong_size_is_refused():
    with pytest.raises(ValueError, match="domain has 8"):
        Radix2Domain(3, CURVE).ntt(fr.zeros(4))


def test_lagrange_basis_interpolates():
    d = Radix2Domain(6, CURVE)
    rnd = random.Random(6)
    coeffs = [rnd.randrange(P) for _ in range(d.size)]
    evals = naive_eval(coeffs, [pow(d.omega, i, P) for i in range(d.size)])
    tau = rnd.randrange(P)
    lag = fr.to_ints(d.lagrange_at(tau))
    assert sum(l * e for l, e in zip(lag, evals)) % P == horner(coeffs, tau)


def test_h_times_z_is_ab_minus_c_at_a_random_point(mimc10):
    from proofflow.prover.groth16 import r1cs_to_qap
    cs = mimc10.constraint_system
    a, b, c = r1cs_to_qap.witness_map(cs, mimc10.instance(1, 0).witness)
    d = r1cs_to_qap.domain_for(cs)
    h = fr.to_ints(CpuBackend().compute_h(d, a, b, c))
    assert h[-1] == 0  # deg H <= n - 2
    pa, pb, pc = (fr.to_ints(d.intt(v.copy())) for v in (a, b, c))
    x = random.Random(9).randrange(P)
    lhs = horner(h, x) * d.evaluate_vanishing(x) % P
    assert lhs == (horner(pa, x) * horner(pb, x) - horner(pc, x)) % P
    assert lhs != 0
