"""Radix-2 evaluation domains over Fr: NTT, inverse and coset variants.

Fr's multiplicative group has order divisible by 2^32, so a domain of size 2^k has the
primitive root w_k = g^((p-1)/2^k) for the generator g = 7. Twiddle tables and coset
power tables are computed once per size and cached.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from proofflow.prover.field import fr

MAX_LOG2 = fr.TWO_ADICITY


def root_of_unity(log_n: int) -> int:
    """A primitive 2^log_n-th root of unity, as an int."""
    if not 0 <= log_n <= MAX_LOG2:
        raise ValueError(f"log_n must be in 0..{MAX_LOG2}, got {log_n}")
    return pow(fr.MULTIPLICATIVE_GENERATOR, (fr.MODULUS - 1) >> log_n, fr.MODULUS)


class Radix2Domain:
    """The subgroup {w^i : i < n} of size n = 2^log_n, and its coset g*{w^i}."""

    coset_offset = fr.MULTIPLICATIVE_GENERATOR

    def __init__(self, log_n: int):
        self.log_n = log_n
        self.size = 1 << log_n
        self.omega = root_of_unity(log_n)
        self.omega_inv = pow(self.omega, -1, fr.MODULUS)
        self.size_inv = pow(self.size, -1, fr.MODULUS)

    @staticmethod
    def for_size(n: int) -> "Radix2Domain":
        """The smallest domain with at least n points."""
        return _domain(max(0, (n - 1).bit_length()))

    # ---- cached tables ----
    def twiddles(self, inverse: bool = False) -> np.ndarray:
        return _twiddles(self.log_n, inverse)

    def coset_powers(self, inverse: bool = False) -> np.ndarray:
        """g^i (or g^-i / n for the inverse, folding the 1/n of the iNTT in) for i < n."""
        return _coset_powers(self.log_n, inverse)

    # ---- transforms, in place on an (n, 4) Fr vector; each also returns it ----
    def _check(self, x: np.ndarray) -> np.ndarray:
        fr._check(x, "x")
        if x.shape[0] != self.size:
            raise ValueError(f"vector has {x.shape[0]} elements, the domain has {self.size}")
        return x

    def ntt(self, x: np.ndarray) -> np.ndarray:
        """Coefficients -> evaluations at w^i."""
        fr._lib().fr_ntt(fr.ptr(self._check(x)), self.log_n, fr.ptr(self.twiddles()))
        return x

    def intt(self, x: np.ndarray) -> np.ndarray:
        """Evaluations at w^i -> coefficients."""
        fr._lib().fr_ntt(fr.ptr(self._check(x)), self.log_n, fr.ptr(self.twiddles(True)))
        return fr.mul(x, fr.constant(self.size_inv), out=x)

    def coset_ntt(self, x: np.ndarray) -> np.ndarray:
        """Coefficients -> evaluations at g*w^i."""
        fr.mul(self._check(x), self.coset_powers(), out=x)
        return self.ntt(x)

    def coset_intt(self, x: np.ndarray) -> np.ndarray:
        """Evaluations at g*w^i -> coefficients."""
        fr._lib().fr_ntt(fr.ptr(self._check(x)), self.log_n, fr.ptr(self.twiddles(True)))
        return fr.mul(x, self.coset_powers(True), out=x)

    # ---- the vanishing polynomial Z(X) = X^n - 1 ----
    def vanishing_on_coset(self) -> int:
        """Z(g*w^i) = g^n - 1, the same at every point of the coset."""
        return (pow(self.coset_offset, self.size, fr.MODULUS) - 1) % fr.MODULUS

    def evaluate_vanishing(self, tau: int) -> int:
        return (pow(tau, self.size, fr.MODULUS) - 1) % fr.MODULUS

    def lagrange_at(self, tau: int) -> np.ndarray:
        """L_i(tau) for every i: Z(tau)/n * w^i / (tau - w^i); tau must lie outside the domain."""
        z = self.evaluate_vanishing(tau)
        if z == 0:
            raise ValueError("tau lies in the domain")
        w_pows = fr.powers(fr.constant(self.omega), self.size)
        # w^i / (tau - w^i) = -w^i / (w^i - tau): keeps the vector first, the constant broadcast.
        denom = fr.sub(w_pows, fr.constant(tau))
        return fr.mul(fr.mul(w_pows, fr.batch_inverse(denom)), fr.constant(-z * self.size_inv))


@lru_cache(maxsize=None)
def _domain(log_n: int) -> Radix2Domain:
    return Radix2Domain(log_n)


@lru_cache(maxsize=8)
def _twiddles(log_n: int, inverse: bool) -> np.ndarray:
    d = _domain(log_n)
    base = d.omega_inv if inverse else d.omega
    t = fr.powers(fr.constant(base), max(1, d.size // 2))
    t.flags.writeable = False
    return t


@lru_cache(maxsize=8)
def _coset_powers(log_n: int, inverse: bool) -> np.ndarray:
    d = _domain(log_n)
    g = d.coset_offset
    if inverse:
        t = fr.powers(fr.constant(pow(g, -1, fr.MODULUS)), d.size, start=fr.constant(d.size_inv))
    else:
        t = fr.powers(fr.constant(g), d.size)
    t.flags.writeable = False
    return t
