"""Field elements and points as circom's and snarkjs's binary files store them, to and
from the engine's forms: Fr vectors (Montgomery, R = 2^256) and xy-LE point tables.

- r1cs coefficients and witness values: Fr-wide little-endian integers in standard form.
- zkey section 4 coefficients: c·R² mod r for R = 2^256, stored as a plain integer.
- zkey points: affine x‖y, each coordinate Fq-wide (48 bytes on BLS12-381) little-endian in
  Montgomery form with R = 2^(64 limbs) mod q (G2: x.c0, x.c1, y.c0, y.c1); the point at
  infinity is all zeros, which converts to all zeros, the engine's own encoding of infinity.

Point tables hold millions of coordinates, so their conversion runs in a small C kernel
(fq_montgomery.c), compiled and cached per curve as proofflow.prover.native compiles its own.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path

import numpy as np

from proofflow.prover import native
from proofflow.prover.circom.errors import CorruptFile
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr
from proofflow.prover.points import PointTable


def _fq_limbs(curve: Curve, x: int) -> np.ndarray:
    return np.frombuffer(x.to_bytes(curve.fq.bytes, "little"), dtype=np.uint64).copy()


@lru_cache(maxsize=None)
def _fq_kernel(curve: Curve):
    fn = native.load("fq_montgomery", Path(__file__).parent, native.field_defines("FQ", curve.fq)).fq_mont_mul_by
    p64 = ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [p64, p64, p64, ctypes.c_int64]
    fn.restype = ctypes.c_int64
    return fn


def _fq_mont_mul_by(curve: Curve, raw, k: int) -> tuple[np.ndarray, int | None]:
    """Each Fq coordinate of ``raw`` times k/R mod q, as uint64 limbs; with the index of the
    first coordinate not below q (None when all are)."""
    coords = np.require(np.frombuffer(raw, dtype="<u8"), np.uint64, ["C", "A"])
    out = np.empty_like(coords)
    p64 = ctypes.POINTER(ctypes.c_uint64)
    bad = _fq_kernel(curve)(coords.ctypes.data_as(p64), _fq_limbs(curve, k).ctypes.data_as(p64),
                            out.ctypes.data_as(p64), coords.size // curve.fq.limbs)
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


def _whole_limbs(fr: Fr, raw, path, section, what: str) -> np.ndarray:
    if len(raw) % fr.BYTES:
        raise CorruptFile(path, f"{len(raw)} bytes of {what} is not a whole number of field elements", section)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, fr.LIMBS)


def _unreduced(fr: Fr, limbs: np.ndarray, path, section, what: str) -> CorruptFile:
    return CorruptFile(path, f"{what} {first_unreduced(limbs, fr.MODULUS)} is not below the field's prime", section)


def _fr_limbs(fr: Fr, raw, path, section, what: str) -> np.ndarray:
    limbs = _whole_limbs(fr, raw, path, section, what)
    if first_unreduced(limbs, fr.MODULUS) is not None:
        raise _unreduced(fr, limbs, path, section, what)
    return np.ascontiguousarray(limbs, dtype=np.uint64)


def fr_from_standard(curve: Curve, raw, path, section, what: str = "value") -> np.ndarray:
    """Standard-form values to an Fr vector of ``curve``. The conversion refuses a value not
    below the prime as it goes (a witness's millions are not scanned twice); only then is the
    first one looked for, to name it."""
    fr = Fr.of(curve)
    limbs = _whole_limbs(fr, raw, path, section, what)
    try:
        return fr.from_canonical(limbs)
    except ValueError:
        raise _unreduced(fr, limbs, path, section, what) from None


def fr_from_zkey_coefficients(curve: Curve, raw, path, section) -> np.ndarray:
    """zkey coefficients (c·R² as integers) to an Fr vector of c. Read as Montgomery limbs
    they are the element c·R, so one Montgomery reduction (x -> x/R) leaves c·R, which is
    c's Montgomery form."""
    fr = Fr.of(curve)
    return fr.to_canonical(_fr_limbs(fr, raw, path, section, "coefficient"))


def fr_to_zkey_coefficients(curve: Curve, values: np.ndarray) -> np.ndarray:
    """An Fr vector of c to zkey coefficients (c·R² as 32-byte integers), (n, 32) uint8:
    the limbs of the element c·R are c·R² (the inverse of fr_from_zkey_coefficients)."""
    fr = Fr.of(curve)
    return fr.mul(values, fr.constant(curve.fr.montgomery_r)).view(np.uint8).reshape(-1, fr.BYTES)


def points_from_montgomery(curve: Curve, raw, group: str, path, section, what: str) -> PointTable:
    """A zkey section (or part) of affine Montgomery points to an xy-LE PointTable. Points
    are checked on the curve only when the table is decoded for its library (``points()``)."""
    width = curve.xy_bytes(group)
    if len(raw) % width:
        raise CorruptFile(path, f"{len(raw)} bytes of {what} is not a whole number of {group} points", section)
    out, bad = _fq_mont_mul_by(curve, raw, 1)  # a Montgomery product by 1 divides by R
    if bad is not None:
        raise CorruptFile(path, f"{what} point {bad * curve.fq.bytes // width} has a coordinate not below the base "
                                "field's prime", section)
    return PointTable(curve, group, out.view(np.uint8).reshape(-1, width))


def points_to_montgomery(table: PointTable) -> np.ndarray:
    """An xy-LE PointTable in a zkey's encoding (affine, Montgomery coordinates), as a
    uint8 array of the same shape."""
    curve = table.curve
    out, bad = _fq_mont_mul_by(curve, table.xy, curve.fq.montgomery_r2)  # a Montgomery product by R² multiplies by R
    if bad is not None:
        point = bad * curve.fq.bytes // table.xy.shape[1]
        raise ValueError(f"{table.group} point {point} has a coordinate not below q")
    return out.view(np.uint8).reshape(table.xy.shape)
