"""snarkjs's QAP bases: the H vector of a proof in the basis its zkey's H points use, and
the Lagrange bases at τ that a zkey's points are made of (for the test-only setup). Here,
beside the engine's own reduction (``r1cs_to_qap``), as every backend computes this H
(``Backend.compute_h_odd_coset``); ``circom`` builds on it.

A zkey's H points are the Lagrange basis of the 2n-point domain at its odd points
x_i = ω_2n·ω_n^i, over δ (not τ^i·Z(τ)/δ as in arkworks). So the prover evaluates
A·B − C there, with no division by Z: since x_i^n = −1, the result is −2·H(x_i), and the
setup folded that factor into the points.

snarkjs's roots of unity come from the first quadratic non-residue (5 on BLS12-381), the
engine's from the field's generator (7 there). Both give primitive roots, so snarkjs's ω_n
is ω_n^m of ours for an odd m: its j-th domain point is our (m·j mod n)-th. Relabelling
the vectors by that permutation lets the computation use the backend's own NTTs (any
backend's), with only the coset shift and products as Fr pointwise operations.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr
from proofflow.prover.polynomial.domain import Radix2Domain


def snarkjs_root_of_unity(curve: Curve, log_n: int) -> int:
    """ffjavascript's primitive 2^log_n-th root: a power of its first non-residue."""
    r = curve.fr.modulus
    return pow(curve.fr.first_non_residue(), (r - 1) >> log_n, r)


@lru_cache(maxsize=None)
def _exponent(curve: Curve) -> int:
    """M with ω^M = ω' for our and snarkjs's roots of order 2^s, s the 2-adicity
    (Pohlig-Hellman: the group is cyclic of order 2^s, so M comes out one bit at a time)."""
    s, p = curve.max_log2, curve.fr.modulus
    base, target = curve.fr.root_of_unity(s), snarkjs_root_of_unity(curve, s)
    m = 0
    for bit in range(s):
        rest = target * pow(base, -m, p) % p
        if pow(rest, 1 << (s - 1 - bit), p) != 1:
            m |= 1 << bit
    assert pow(base, m, p) == target
    return m


@lru_cache(maxsize=4)
def snarkjs_order(curve: Curve, log_n: int) -> np.ndarray:
    """Where snarkjs's j-th point of the 2^log_n domain sits in ours, for every j."""
    n = 1 << log_n
    where = (_exponent(curve) % n) * np.arange(n, dtype=np.int64) % n
    where.flags.writeable = False
    return where


@lru_cache(maxsize=4)
def odd_coset_shift(curve: Curve, log_n: int) -> np.ndarray:
    """ω'_2n^i for i < n: multiplying coefficients by it moves evaluations to the odd points."""
    fr = Fr.of(curve)
    shift = fr.powers(fr.constant(snarkjs_root_of_unity(curve, log_n + 1)), 1 << log_n)
    shift.flags.writeable = False
    return shift


def lagrange_at(curve: Curve, tau: int, log_n: int) -> np.ndarray:
    """L_j(τ) for snarkjs's j-th point of the 2^log_n domain, for every j: the basis its
    zkeys evaluate the QAP polynomials in (τ outside the domain)."""
    return Radix2Domain.for_size(1 << log_n, curve).lagrange_at(tau)[snarkjs_order(curve, log_n)]


def h_basis_at(curve: Curve, tau: int, log_n: int) -> np.ndarray:
    """The zkey's H points before their division by δ: the Lagrange basis of the 2n domain
    at its odd points ω'_2n·ω'_n^i, in snarkjs's order (its (2i+1)-th points)."""
    return np.ascontiguousarray(lagrange_at(curve, tau, log_n + 1)[1::2])


def h_odd_coset(ntt: Callable[..., np.ndarray], domain: Radix2Domain, a: np.ndarray, b: np.ndarray,
                c: np.ndarray | None = None) -> np.ndarray:
    """A·B − C at snarkjs's odd points, in its order, from a, b and c over its domain (by
    default c = a·b there, which a satisfying witness gives), through ``ntt`` (a backend's:
    ``ntt(domain, x, inverse=False)``). The inputs are not modified."""
    fr = domain.fr
    where, shift = snarkjs_order(domain.curve, domain.log_n), odd_coset_shift(domain.curve, domain.log_n)
    evals = []
    for v in (a, b) if c is None else (a, b, c):
        ours = np.empty_like(v)
        ours[where] = v
        evals.append(ours)
    if c is None:
        evals.append(fr.mul(*evals))
    for i, v in enumerate(evals):
        coeffs = ntt(domain, v, inverse=True)
        evals[i] = ntt(domain, fr.mul(coeffs, shift, out=coeffs))
    ea, eb, ec = evals
    h = fr.sub(fr.mul(ea, eb, out=ea), ec, out=ea)
    return np.ascontiguousarray(h[where])
