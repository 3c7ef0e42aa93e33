"""Compressed BLS12-381 rows that are no point, by the reason ``native.compressed.REASONS``
gives (bad flags; a coordinate of x not below q; x off the curve), for the tests of the CPU
decompression and of its GPU twin."""
from __future__ import annotations

import numpy as np

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE

Q = CURVE.fq.modulus
W = CURVE.fq.bytes


def _g1_row(x: int, flags: int) -> np.ndarray:
    row = bytearray(x.to_bytes(W, "big"))
    row[0] |= flags
    return np.frombuffer(bytes(row), dtype=np.uint8).reshape(1, -1)


def _g2_row(c0: int, c1: int, flags: int) -> np.ndarray:
    row = bytearray(c1.to_bytes(W, "big") + c0.to_bytes(W, "big"))
    row[0] |= flags
    return np.frombuffer(bytes(row), dtype=np.uint8).reshape(1, -1)


def _first(cond) -> int:
    return next(x for x in range(1, 1000) if cond(x))


def _legendre(a: int) -> int:
    return pow(a % Q, (Q - 1) // 2, Q)


def bad_rows(group: str) -> dict[int, list[np.ndarray]]:
    """Rows refused, by the reason compressed.REASONS names."""
    m, inf, big = CURVE.compression.marker, CURVE.compression.infinity, CURVE.compression.larger
    if group == "g1":
        off = _first(lambda x: _legendre(x ** 3 + CURVE.g1_b) == Q - 1)  # x^3 + 4 not a square
        good = CURVE.point_class("g1")().to_compressed_bytes()
        return {1: [_g1_row(1, 0), _g1_row(0, inf), _g1_row(0, inf | m | big), _g1_row(1, inf | m),
                    np.frombuffer(bytes([good[0] & ~m]) + good[1:], dtype=np.uint8).reshape(1, -1)],
                2: [_g1_row(Q, m), _g1_row(Q + 5, m | big)],
                3: [_g1_row(off, m), _g1_row(off, m | big)]}
    b0, b1 = CURVE.g2_b

    def norm_of_rhs(x0: int) -> int:  # x = x0 (c1 = 0): x^3 + b = (x0^3 + b0) + b1 u, square iff its norm is
        a0 = (x0 ** 3 + b0) % Q
        return (a0 * a0 + b1 * b1) % Q
    off = _first(lambda x: _legendre(norm_of_rhs(x)) == Q - 1)
    return {1: [_g2_row(0, 0, inf), _g2_row(0, 1, inf | m), _g2_row(0, 0, inf | m | big)],
            2: [_g2_row(Q, 0, m), _g2_row(1, Q, m)],
            3: [_g2_row(off, 0, m)]}
