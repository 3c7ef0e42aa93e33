"""Field elements and points as circom's and snarkjs's binary files store them, to and
from the engine's forms: Fr vectors (Montgomery, R = 2^256) and xy-LE point tables.

- r1cs coefficients and witness values: 32-byte little-endian integers in standard form.
- zkey section 4 coefficients: c·R² mod r for R = 2^256, stored as a plain integer.
- zkey points: affine x‖y, each coordinate 48 bytes little-endian in Montgomery form
  with R = 2^384 mod q (G2: x.c0, x.c1, y.c0, y.c1); the point at infinity is all zeros,
  which converts to all zeros, the engine's own encoding of infinity.

Point tables hold millions of coordinates, so their conversion runs in a small C kernel
(fq_montgomery.c), compiled and cached as proofflow.prover.native compiles its own.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path

import numpy as np

from proofflow.prover import native
from proofflow.prover.circom.errors import BLS12_381_Q, CorruptFile
from proofflow.prover.curve import XY_BYTES, PointTable
from proofflow.prover.field import fr

FQ_BYTES = 48
_FQ_LIMBS = FQ_BYTES // 8
_R_FR = (1 << 256) % fr.MODULUS


def _fq_limbs(x: int) -> np.ndarray:
    return np.frombuffer(x.to_bytes(FQ_BYTES, "little"), dtype=np.uint64).copy()


_TO_MONTGOMERY = _fq_limbs((1 << 768) % BLS12_381_Q)  # a Montgomery product by R² multiplies by R
_FROM_MONTGOMERY = _fq_limbs(1)  # one by 1 divides by R


@lru_cache(maxsize=None)
def _fq_kernel():
    fn = native.load("fq_montgomery", Path(__file__).parent).fq_mont_mul_by
    p64 = ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [p64, p64, p64, ctypes.c_int64]
    fn.restype = ctypes.c_int64
    return fn


def _fq_mont_mul_by(raw, k: np.ndarray) -> tuple[np.ndarray, int | None]:
    """Each 48-byte coordinate of ``raw`` times k/R mod q, as uint64 limbs; with the index
    of the first coordinate not below q (None when all are)."""
    coords = np.require(np.frombuffer(raw, dtype="<u8"), np.uint64, ["C", "A"])
    out = np.empty_like(coords)
    p64 = ctypes.POINTER(ctypes.c_uint64)
    bad = _fq_kernel()(coords.ctypes.data_as(p64), k.ctypes.data_as(p64), out.ctypes.data_as(p64),
                       coords.size // _FQ_LIMBS)
    return out, (None if bad < 0 else int(bad))


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


def fr_to_zkey_coefficients(values: np.ndarray) -> np.ndarray:
    """An Fr vector of c to zkey coefficients (c·R² as 32-byte integers), (n, 32) uint8:
    the limbs of the element c·R are c·R² (the inverse of fr_from_zkey_coefficients)."""
    return fr.mul(values, fr.constant(_R_FR)).view(np.uint8).reshape(-1, fr.BYTES)


def points_from_montgomery(raw, group: str, path, section, what: str) -> PointTable:
    """A zkey section (or part) of affine Montgomery points to an xy-LE PointTable. Points
    are checked on the curve only when the table is decoded for arkworks (``points()``)."""
    width = XY_BYTES[group]
    if len(raw) % width:
        raise CorruptFile(path, f"{len(raw)} bytes of {what} is not a whole number of {group} points", section)
    out, bad = _fq_mont_mul_by(raw, _FROM_MONTGOMERY)
    if bad is not None:
        raise CorruptFile(path, f"{what} point {bad * FQ_BYTES // width} has a coordinate not below the base "
                                "field's prime", section)
    return PointTable(group, out.view(np.uint8).reshape(-1, width))


def points_to_montgomery(table: PointTable) -> np.ndarray:
    """An xy-LE PointTable in a zkey's encoding (affine, Montgomery coordinates), as a
    uint8 array of the same shape."""
    out, bad = _fq_mont_mul_by(table.xy, _TO_MONTGOMERY)
    if bad is not None:
        raise ValueError(f"{table.group} point {bad * FQ_BYTES // table.xy.shape[1]} has a coordinate not below q")
    return out.view(np.uint8).reshape(table.xy.shape)
