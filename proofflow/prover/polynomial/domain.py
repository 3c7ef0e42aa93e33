"""Radix-2 evaluation domains over a curve's Fr: NTT, inverse and coset variants.

Fr's multiplicative group has order divisible by 2^s (s its 2-adicity: 32 on BLS12-381), so
a domain of size 2^k <= 2^s has the primitive root w_k = g^((p-1)/2^k) for the field's
generator g (7 on BLS12-381), which is also the coset offset. Twiddle tables and coset
power tables are computed once per curve and size and cached.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr


class Radix2Domain:
    """The subgroup {w^i : i < n} of size n = 2^log_n of ``curve``'s Fr, and its coset g*{w^i}."""

    def __init__(self, log_n: int, curve: Curve):
        self.curve = curve
        self.fr = fr = Fr.of(curve)
        self.log_n = log_n
        self.size = 1 << log_n
        self.omega = curve.fr.root_of_unity(log_n)
        self.omega_inv = pow(self.omega, -1, fr.MODULUS)
        self.size_inv = pow(self.size, -1, fr.MODULUS)
        self.coset_offset = fr.MULTIPLICATIVE_GENERATOR

    @staticmethod
    def for_size(n: int, curve: Curve) -> "Radix2Domain":
        """The smallest domain with at least n points."""
        return _domain(curve, max(0, (n - 1).bit_length()))

    # ---- cached tables ----
    def twiddles(self, inverse: bool = False) -> np.ndarray:
        return _twiddles(self.curve, self.log_n, inverse)

    def coset_powers(self, inverse: bool = False) -> np.ndarray:
        """g^i (or g^-i / n for the inverse, folding the 1/n of the iNTT in) for i < n."""
        return _coset_powers(self.curve, self.log_n, inverse)

    # ---- transforms, in place on an (n, 4) Fr vector; each also returns it ----
    def _check(self, x: np.ndarray) -> np.ndarray:
        self.fr._check(x, "x")
        if x.shape[0] != self.size:
            raise ValueError(f"vector has {x.shape[0]} elements, the domain has {self.size}")
        return x

    def _butterflies(self, x: np.ndarray, inverse: bool) -> None:
        fr = self.fr
        fr._lib().fr_ntt(fr.ptr(self._check(x)), self.log_n, fr.ptr(self.twiddles(inverse)))

    def ntt(self, x: np.ndarray) -> np.ndarray:
        """Coefficients -> evaluations at w^i."""
        self._butterflies(x, False)
        return x

    def intt(self, x: np.ndarray) -> np.ndarray:
        """Evaluations at w^i -> coefficients."""
        self._butterflies(x, True)
        return self.fr.mul(x, self.fr.constant(self.size_inv), out=x)

    def coset_ntt(self, x: np.ndarray) -> np.ndarray:
        """Coefficients -> evaluations at g*w^i."""
        self.fr.mul(self._check(x), self.coset_powers(), out=x)
        return self.ntt(x)

    def coset_intt(self, x: np.ndarray) -> np.ndarray:
        """Evaluations at g*w^i -> coefficients."""
        self._butterflies(x, True)
        return self.fr.mul(x, self.coset_powers(True), out=x)

    # ---- the vanishing polynomial Z(X) = X^n - 1 ----
    def vanishing_on_coset(self) -> int:
        """Z(g*w^i) = g^n - 1, the same at every point of the coset."""
        p = self.fr.MODULUS
        return (pow(self.coset_offset, self.size, p) - 1) % p

    def evaluate_vanishing(self, tau: int) -> int:
        p = self.fr.MODULUS
        return (pow(tau, self.size, p) - 1) % p

    def lagrange_at(self, tau: int) -> np.ndarray:
        """L_i(tau) for every i: Z(tau)/n * w^i / (tau - w^i); tau must lie outside the domain."""
        fr, z = self.fr, self.evaluate_vanishing(tau)
        if z == 0:
            raise ValueError("tau lies in the domain")
        w_pows = fr.powers(fr.constant(self.omega), self.size)
        # w^i / (tau - w^i) = -w^i / (w^i - tau): keeps the vector first, the constant broadcast.
        denom = fr.sub(w_pows, fr.constant(tau))
        return fr.mul(fr.mul(w_pows, fr.batch_inverse(denom)), fr.constant(-z * self.size_inv))


@lru_cache(maxsize=None)
def _domain(curve: Curve, log_n: int) -> Radix2Domain:
    return Radix2Domain(log_n, curve)


@lru_cache(maxsize=8)
def _twiddles(curve: Curve, log_n: int, inverse: bool) -> np.ndarray:
    d = _domain(curve, log_n)
    fr, base = d.fr, d.omega_inv if inverse else d.omega
    t = fr.powers(fr.constant(base), max(1, d.size // 2))
    t.flags.writeable = False
    return t


@lru_cache(maxsize=8)
def _coset_powers(curve: Curve, log_n: int, inverse: bool) -> np.ndarray:
    d = _domain(curve, log_n)
    fr, g = d.fr, d.coset_offset
    if inverse:
        t = fr.powers(fr.constant(pow(g, -1, fr.MODULUS)), d.size, start=fr.constant(d.size_inv))
    else:
        t = fr.powers(fr.constant(g), d.size)
    t.flags.writeable = False
    return t
