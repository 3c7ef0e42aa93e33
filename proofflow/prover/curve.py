"""G1 and G2 of BLS12-381 through py-arkworks-bls12381, and the project's point encoding.

Points are stored as uncompressed little-endian affine coordinates ("xy-LE"): 96 bytes for
G1 (x || y, 48 bytes each), 192 for G2 (x.c0 || x.c1 || y.c0 || y.c1); the point at
infinity is all zeros. A ``PointTable`` holds many such points as one uint8 array, the
form proving keys are saved in and the form the GPU backend uploads; arkworks objects are
built from it lazily, once, for the CPU path.
"""
from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import GT, G1Point, G2Point, Scalar

from proofflow.prover.field import fr

XY_BYTES = {"g1": 96, "g2": 192}
COMPRESSED_BYTES = {"g1": 48, "g2": 96}
_CLS = {"g1": G1Point, "g2": G2Point}


def point_class(group: str):
    return _CLS[group]


def to_xy(point) -> bytes:
    return point.to_xy_bytes_le()


def from_xy(group: str, data: bytes, check_subgroup: bool = True):
    """Decode one point; on-curve always checked, subgroup membership unless told not to."""
    cls = _CLS[group]
    return cls.from_xy_bytes_le(data) if check_subgroup else cls.from_xy_bytes_unchecked_le(data)


def scalars(values: np.ndarray) -> list:
    """An Fr vector (Montgomery limbs) as arkworks Scalars."""
    raw = fr.to_bytes_le(values)
    return [Scalar.from_le_bytes(raw[i:i + 32]) for i in range(0, len(raw), 32)]


def scalar(x: int) -> Scalar:
    return Scalar.from_le_bytes((x % fr.MODULUS).to_bytes(32, "little"))


class PointTable:
    """n points of one group as an (n, XY_BYTES) uint8 array, plus per-backend caches."""

    def __init__(self, group: str, xy: np.ndarray):
        width = XY_BYTES[group]
        if xy.dtype != np.uint8 or xy.ndim != 2 or xy.shape[1] != width:
            raise ValueError(f"{group} table must be uint8 of shape (n, {width})")
        self.group = group
        self.xy = xy
        self._points: list | None = None
        self.device_cache: dict = {}  # backends keep their own resident copies here

    def __len__(self) -> int:
        return self.xy.shape[0]

    @classmethod
    def from_points(cls, group: str, points) -> "PointTable":
        raw = b"".join(p.to_xy_bytes_le() for p in points)
        return cls(group, np.frombuffer(raw, dtype=np.uint8).reshape(-1, XY_BYTES[group]).copy())

    def points(self) -> list:
        """arkworks objects, decoded once (on-curve checked; the key file's digest covers the rest)."""
        if self._points is None:
            cls, raw, w = _CLS[self.group], self.xy.tobytes(), XY_BYTES[self.group]
            self._points = [cls.from_xy_bytes_unchecked_le(raw[i:i + w]) for i in range(0, len(raw), w)]
        return self._points


def msm(table: PointTable, values: np.ndarray):
    """sum_i values[i] * table[i] on the CPU through arkworks' multiexp."""
    if len(table) != values.shape[0]:
        raise ValueError(f"{len(table)} points but {values.shape[0]} scalars")
    cls = _CLS[table.group]
    if len(table) == 0:
        return cls.identity()
    return cls.multiexp_unchecked(table.points(), scalars(values))


def msm_split(table: PointTable, values: np.ndarray):
    """``msm`` with the scalars split by value, as the GPU splits a witness MSM
    (``proofflow.prover.device.sparse``): zeros skipped, the points of ones added up, the
    rest through arkworks' multiexp."""
    if len(table) != values.shape[0]:
        raise ValueError(f"{len(table)} points but {values.shape[0]} scalars")
    ones = (values == fr.one()).all(axis=1)
    other = np.flatnonzero(values.any(axis=1) & ~ones)
    pts = table.points()
    total = _CLS[table.group].identity()
    for i in np.flatnonzero(ones).tolist():
        total = total + pts[i]
    if other.size:
        total = total + _CLS[table.group].multiexp_unchecked([pts[i] for i in other.tolist()], scalars(values[other]))
    return total


def pairing_check(g1s: list, g2s: list) -> bool:
    """True when prod e(g1s[i], g2s[i]) == 1."""
    return bool(GT.pairing_check(g1s, g2s))

