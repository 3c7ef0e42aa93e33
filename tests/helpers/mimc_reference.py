"""The MiMC-5 chain in plain Python integers, constants derived independently of the C
kernels and their cache: the reference the tests and bench/synthesis.py check against."""
from __future__ import annotations

from proofflow.prover.circuits.base import derive
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

fr = Fr.of(CURVE)


def reference_trace(rounds: int, key: int, x: int, p: int = fr.MODULUS) -> list[int]:
    """[t2_0, t4_0, x_1, t2_1, ...] then the ciphertext x_R + k, over the prime field of ``p``
    (a curve's scalar field; BLS12-381's by default)."""
    trace = []
    for i in range(rounds):
        s = (x + key + derive(p, "proofflow/mimc5/round-constant", i)) % p
        t2 = s * s % p
        t4 = t2 * t2 % p
        x = t4 * s % p
        trace += (t2, t4, x)
    return trace + [(x + key) % p]
