"""Field elements and points as circom's and snarkjs's binary files store them, decoded
into the engine's forms: Fr vectors (Montgomery, R = 2^256) and xy-LE point tables.

- r1cs coefficients and witness values: 32-byte little-endian integers in standard form.
- zkey section 4 coefficients: c·R² mod r for R = 2^256, stored as a plain integer.
- zkey points: affine x‖y, each coordinate 48 bytes little-endian in Montgomery form
  with R = 2^384 mod q (G2: x.c0, x.c1, y.c0, y.c1); the point at infinity is all zeros,
  which decodes to all zeros, the engine's own encoding of infinity.
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.circom.errors import BLS12_381_Q, CorruptFile
from proofflow.prover.curve import XY_BYTES, PointTable
from proofflow.prover.field import fr

FQ_BYTES = 48
_FQ_R_INV = pow(1 << (8 * FQ_BYTES), -1, BLS12_381_Q)


def first_unreduced(limbs: np.ndarray, modulus: int) -> int | None:
    """Index of the first row of (n, k) little-endian uint64 limbs that is >= ``modulus``."""
    k = limbs.shape[1]
    below = np.zeros(limbs.shape[0], dtype=bool)
    equal = np.ones(limbs.shape[0], dtype=bool)
    for i in reversed(range(k)):
        m = np.uint64((modulus >> (64 * i)) & (2**64 - 1))
        below |= equal & (limbs[:, i] < m)
        equal &= limbs[:, i] == m
    bad = np.flatnonzero(~below)
    return int(bad[0]) if bad.size else None


def _fr_limbs(raw, path, section, what: str) -> np.ndarray:
    if len(raw) % fr.BYTES:
        raise CorruptFile(path, f"{len(raw)} bytes of {what} is not a whole number of field elements", section)
    limbs = np.frombuffer(raw, dtype="<u8").reshape(-1, fr.LIMBS)
    bad = first_unreduced(limbs, fr.MODULUS)
    if bad is not None:
        raise CorruptFile(path, f"{what} {bad} is not below the field's prime", section)
    return np.ascontiguousarray(limbs, dtype=np.uint64)


def fr_from_standard(raw, path, section, what: str = "value") -> np.ndarray:
    """Standard-form 32-byte values to an Fr vector."""
    return fr.from_canonical(_fr_limbs(raw, path, section, what))


def fr_from_zkey_coefficients(raw, path, section) -> np.ndarray:
    """zkey coefficients (c·R² as integers) to an Fr vector of c. Read as Montgomery limbs
    they are the element c·R, so one Montgomery reduction (x -> x/R) leaves c·R, which is
    c's Montgomery form."""
    return fr.to_canonical(_fr_limbs(raw, path, section, "coefficient"))


def points_from_montgomery(raw, group: str, path, section, what: str) -> PointTable:
    """A zkey section (or part) of affine Montgomery points to an xy-LE PointTable. Points
    are checked on the curve only when the table is decoded for arkworks (``points()``)."""
    width = XY_BYTES[group]
    if len(raw) % width:
        raise CorruptFile(path, f"{len(raw)} bytes of {what} is not a whole number of {group} points", section)
    out = bytearray(len(raw))
    q, r_inv = BLS12_381_Q, _FQ_R_INV
    for pos in range(0, len(raw), FQ_BYTES):
        x = int.from_bytes(raw[pos:pos + FQ_BYTES], "little")
        if x >= q:
            raise CorruptFile(path, f"{what} point {pos // width} has a coordinate not below the base field's prime",
                              section)
        out[pos:pos + FQ_BYTES] = (x * r_inv % q).to_bytes(FQ_BYTES, "little")
    return PointTable(group, np.frombuffer(out, dtype=np.uint8).reshape(-1, width))
