"""snarkjs's QAP bases: the H vector of a proof in the basis its zkey's H points use, and
the Lagrange bases at τ that a zkey's points are made of (for the test-only setup). Here,
beside the engine's own reduction (``r1cs_to_qap``), as every backend computes this H
(``Backend.compute_h_odd_coset``); ``circom`` builds on it.

A zkey's H points are the Lagrange basis of the 2n-point domain at its odd points
x_i = ω_2n·ω_n^i, over δ (not τ^i·Z(τ)/δ as in arkworks). So the prover evaluates
A·B − C there, with no division by Z: since x_i^n = −1, the result is −2·H(x_i), and the
setup folded that factor into the points.

snarkjs's roots of unity come from the generator 5, the engine's from 7. Both give
primitive roots, so snarkjs's ω_n is ω_n^m of ours for an odd m: its j-th domain point is
our (m·j mod n)-th. Relabelling the vectors by that permutation lets the computation use
the backend's own NTTs (any backend's), with only the coset shift and products as Fr
pointwise operations.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from proofflow.prover.field import fr
from proofflow.prover.polynomial.domain import MAX_LOG2, Radix2Domain, root_of_unity

SNARKJS_GENERATOR = 5  # ffjavascript's roots of unity are powers of 5^((r-1)/2^32)


def snarkjs_root_of_unity(log_n: int) -> int:
    return pow(SNARKJS_GENERATOR, (fr.MODULUS - 1) >> log_n, fr.MODULUS)


@lru_cache(maxsize=1)
def _exponent() -> int:
    """M with ω^M = ω' for our and snarkjs's roots of order 2^32 (Pohlig-Hellman: the
    group is cyclic of order 2^32, so M comes out one bit at a time)."""
    base, target, p = root_of_unity(MAX_LOG2), snarkjs_root_of_unity(MAX_LOG2), fr.MODULUS
    m = 0
    for bit in range(MAX_LOG2):
        rest = target * pow(base, -m, p) % p
        if pow(rest, 1 << (MAX_LOG2 - 1 - bit), p) != 1:
            m |= 1 << bit
    assert pow(base, m, p) == target
    return m


@lru_cache(maxsize=4)
def snarkjs_order(log_n: int) -> np.ndarray:
    """Where snarkjs's j-th point of the 2^log_n domain sits in ours, for every j."""
    n = 1 << log_n
    where = (_exponent() % n) * np.arange(n, dtype=np.int64) % n
    where.flags.writeable = False
    return where


@lru_cache(maxsize=4)
def odd_coset_shift(log_n: int) -> np.ndarray:
    """ω'_2n^i for i < n: multiplying coefficients by it moves evaluations to the odd points."""
    shift = fr.powers(fr.constant(snarkjs_root_of_unity(log_n + 1)), 1 << log_n)
    shift.flags.writeable = False
    return shift


def lagrange_at(tau: int, log_n: int) -> np.ndarray:
    """L_j(τ) for snarkjs's j-th point of the 2^log_n domain, for every j: the basis its
    zkeys evaluate the QAP polynomials in (τ outside the domain)."""
    return Radix2Domain.for_size(1 << log_n).lagrange_at(tau)[snarkjs_order(log_n)]


def h_basis_at(tau: int, log_n: int) -> np.ndarray:
    """The zkey's H points before their division by δ: the Lagrange basis of the 2n domain
    at its odd points ω'_2n·ω'_n^i, in snarkjs's order (its (2i+1)-th points)."""
    return np.ascontiguousarray(lagrange_at(tau, log_n + 1)[1::2])


def h_odd_coset(ntt: Callable[..., np.ndarray], domain: Radix2Domain, a: np.ndarray, b: np.ndarray,
                c: np.ndarray | None = None) -> np.ndarray:
    """A·B − C at snarkjs's odd points, in its order, from a, b and c over its domain (by
    default c = a·b there, which a satisfying witness gives), through ``ntt`` (a backend's:
    ``ntt(domain, x, inverse=False)``). The inputs are not modified."""
    where, shift = snarkjs_order(domain.log_n), odd_coset_shift(domain.log_n)
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
