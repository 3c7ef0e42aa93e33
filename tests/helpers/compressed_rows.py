"""Compressed rows that are no point of a curve (BLS12-381 unless told), by the reason
``native.compressed.REASONS`` gives (bad flags; a coordinate of x not below q; x off the
curve), in the curve's encoding (``descriptor.Compression``), for the tests of the CPU
decompression and of its GPU twin."""
from __future__ import annotations

import numpy as np

from proofflow.prover.curves.bls12_381 import BLS12_381
from proofflow.prover.curves.descriptor import Curve


def _row(curve: Curve, x: int, flags: int, coordinates: int = 1) -> np.ndarray:
    """x (G2's: c0 + c1 2^(8w)) in ``coordinates`` Fq widths as the curve writes a compressed
    point, ``flags`` in its most significant byte."""
    row = bytearray(x.to_bytes(coordinates * curve.fq.bytes, "little"))
    if curve.compression.big_endian:
        row.reverse()
    row[0 if curve.compression.big_endian else -1] |= flags
    return np.frombuffer(bytes(row), dtype=np.uint8).reshape(1, -1)


def _g2_row(curve: Curve, c0: int, c1: int, flags: int) -> np.ndarray:
    return _row(curve, c0 + (c1 << (8 * curve.fq.bytes)), flags, 2)


def _first(cond) -> int:
    return next(x for x in range(1, 1000) if cond(x))


def bad_rows(group: str, curve: Curve = BLS12_381) -> dict[int, list[np.ndarray]]:
    """Rows refused, by the reason compressed.REASONS names."""
    q = curve.fq.modulus
    m, inf, big = curve.compression.marker, curve.compression.infinity, curve.compression.larger

    def legendre(a: int) -> int:
        return pow(a % q, (q - 1) // 2, q)

    if group == "g1":
        off = _first(lambda x: legendre(x ** 3 + curve.g1_b) == q - 1)  # x^3 + b not a square
        flags = [_row(curve, 0, inf | m | big), _row(curve, 1, inf | m)]  # infinity with y's sign, or with x
        if m:  # no marker bit, whatever the rest says
            good = curve.point_class("g1")().to_compressed_bytes()
            flags = [_row(curve, 1, 0), _row(curve, 0, inf), *flags,
                     np.frombuffer(bytes([good[0] & ~m]) + good[1:], dtype=np.uint8).reshape(1, -1)]
        return {1: flags, 2: [_row(curve, q, m), _row(curve, q + 5, m | big)],
                3: [_row(curve, off, m), _row(curve, off, m | big)]}
    b0, b1 = curve.g2_b

    def norm_of_rhs(x0: int) -> int:  # x = x0 (c1 = 0): x^3 + b = (x0^3 + b0) + b1 u, square iff its norm is
        a0 = (x0 ** 3 + b0) % q
        return (a0 * a0 + b1 * b1) % q
    off = _first(lambda x: legendre(norm_of_rhs(x)) == q - 1)
    flags = [_g2_row(curve, 0, 1, inf | m), _g2_row(curve, 0, 0, inf | m | big)]
    if m:
        flags.insert(0, _g2_row(curve, 0, 0, inf))
    return {1: flags, 2: [_g2_row(curve, q, 0, m), _g2_row(curve, 1, q, m)], 3: [_g2_row(curve, off, 0, m)]}
