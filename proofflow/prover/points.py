"""Points of a curve's G1 and G2 through its point library (``Curve.points``), and the
project's point encoding.

Points are worked on as uncompressed little-endian affine coordinates ("xy-LE",
``Curve.xy_bytes``): G1 x || y, G2 x.c0 || x.c1 || y.c0 || y.c1 (96 and 192 bytes on
BLS12-381); the point at infinity is all zeros. A ``PointTable`` holds many such points of
one curve as one uint8 array, the form the GPU's MSMs read; a proving key's table may be
stored compressed instead (``native.compressed``: x and flags, half the bytes), which the GPU
decompresses as it uploads it and the CPU path here on first use of ``xy``, once, into
memory. The library's objects are built from ``xy`` lazily, once, for the CPU path, unless the
library sums rows straight from the table (``multiexp_xy_le``: BN254's).
"""
from __future__ import annotations

import threading

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr


def to_xy(point) -> bytes:
    return point.to_xy_bytes_le()


def from_xy(curve: Curve, group: str, data: bytes, check_subgroup: bool = True):
    """Decode one point; on-curve always checked, subgroup membership unless told not to."""
    cls = curve.point_class(group)
    return cls.from_xy_bytes_le(data) if check_subgroup else cls.from_xy_bytes_unchecked_le(data)


def scalars(curve: Curve, values: np.ndarray) -> list:
    """An Fr vector (Montgomery limbs) as the point library's Scalars."""
    fr = Fr.of(curve)
    raw, Scalar = fr.to_bytes_le(values), curve.library().Scalar
    return [Scalar.from_le_bytes(raw[i:i + fr.BYTES]) for i in range(0, len(raw), fr.BYTES)]


def sums_rows(curve: Curve, group: str) -> bool:
    """Whether the library's MSM takes xy-LE rows and canonical scalars (``multiexp_xy_le``),
    so the CPU path needs no point objects."""
    return hasattr(curve.point_class(group), "multiexp_xy_le")


class PointTable:
    """n points of one group of ``curve`` as an (n, xy_bytes) uint8 array (``xy``), or as the
    (n, compressed_bytes) rows of a compressed key table (``compressed``; ``of_compressed``),
    plus per-backend caches. ``origin`` names it in errors (its file)."""

    def __init__(self, curve: Curve, group: str, xy: np.ndarray | None, *, compressed: np.ndarray | None = None,
                 origin: str | None = None):
        for rows, width, what in ((xy, curve.xy_bytes(group), "xy"), (compressed, curve.compressed_bytes(group),
                                                                       "compressed")):
            if rows is not None and (rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] != width):
                raise ValueError(f"{group} table ({what}) must be uint8 of shape (n, {width})")
        if (xy is None) == (compressed is None):
            raise ValueError("a table is made of its xy rows or of its compressed rows")
        self.curve = curve
        self.group = group
        self.compressed = compressed
        self.origin = origin or f"a {group.upper()} table"
        self._xy = xy
        self._decoding = threading.Lock()
        self._points: list | None = None
        self.device_cache: dict = {}  # backends keep their own resident copies here

    @classmethod
    def of_compressed(cls, curve: Curve, group: str, rows: np.ndarray, origin: str | None = None) -> "PointTable":
        return cls(curve, group, None, compressed=rows, origin=origin)

    @property
    def encoding(self) -> str:
        """How its rows are stored: "compressed" or "xy" (``native.compressed.ENCODINGS``)."""
        return "xy" if self.compressed is None else "compressed"

    @property
    def rows(self) -> np.ndarray:
        """Its rows as stored (in its key file)."""
        return self._xy if self.compressed is None else self.compressed

    @property
    def xy(self) -> np.ndarray:
        """Its points as xy-LE rows: decompressed (every point checked: KeyFormatError naming
        the table's file and row) on first use, kept in memory."""
        if self._xy is None:
            with self._decoding:
                if self._xy is None:
                    from proofflow.prover.native import compressed
                    self._xy = compressed.decompress(self.curve, self.group, self.compressed, origin=self.origin)
        return self._xy

    @property
    def xy_nbytes(self) -> int:
        """Its bytes as xy-LE rows, what the GPU keeps resident (without decompressing it)."""
        return len(self) * self.curve.xy_bytes(self.group)

    def __len__(self) -> int:
        return self.rows.shape[0]

    @classmethod
    def from_points(cls, curve: Curve, group: str, points) -> "PointTable":
        raw = b"".join(p.to_xy_bytes_le() for p in points)
        return cls(curve, group, np.frombuffer(raw, dtype=np.uint8).reshape(-1, curve.xy_bytes(group)).copy())

    def prepare(self) -> None:
        """What the CPU MSMs need, made before threads share the table: the library's
        objects, unless it sums the rows themselves."""
        if not sums_rows(self.curve, self.group):
            self.points()

    def check_on_curve(self) -> None:
        """ValueError unless every point is on the curve: the library's objects decoded, or
        where the library sums rows, the rows checked in bulk (``first_off_curve_xy_le``)."""
        cls = self.curve.point_class(self.group)
        if not sums_rows(self.curve, self.group):
            self.points()
        elif (bad := cls.first_off_curve_xy_le(self.xy)) is not None:
            raise ValueError(f"{self.group} point {bad} is not on the curve")

    def points(self) -> list:
        """The library's objects, decoded once (on-curve checked; the key file's digest covers the rest)."""
        if self._points is None:
            cls, raw, w = self.curve.point_class(self.group), self.xy.tobytes(), self.curve.xy_bytes(self.group)
            self._points = [cls.from_xy_bytes_unchecked_le(raw[i:i + w]) for i in range(0, len(raw), w)]
        return self._points


def _rows(table: PointTable, values: np.ndarray, lo: int, hi: int | None) -> int:
    if len(table) != values.shape[0]:
        raise ValueError(f"{len(table)} points but {values.shape[0]} scalars")
    hi = len(table) if hi is None else hi
    if not 0 <= lo <= hi <= len(table):
        raise ValueError(f"rows {lo}..{hi} are not within the table's {len(table)}")
    return hi


def msm(table: PointTable, values: np.ndarray, lo: int = 0, hi: int | None = None):
    """sum_i values[i] * table[i] over rows lo..hi (all by default) on the CPU through the
    library's multiexp."""
    hi = _rows(table, values, lo, hi)
    cls = table.curve.point_class(table.group)
    if hi == lo:
        return cls.identity()
    if sums_rows(table.curve, table.group):
        return cls.multiexp_xy_le(table.xy[lo:hi], Fr.of(table.curve).to_canonical(np.ascontiguousarray(values[lo:hi])))
    return cls.multiexp_unchecked(table.points()[lo:hi], scalars(table.curve, values[lo:hi]))


def msm_split(table: PointTable, values: np.ndarray, lo: int = 0, hi: int | None = None):
    """``msm`` with the scalars split by value, as the GPU splits a witness MSM
    (``proofflow.prover.device.sparse``): zeros skipped, the points of ones added up, the
    rest through the library's multiexp. A library that sums rows takes them all at once
    (its buckets skip the zeros and add the ones)."""
    if sums_rows(table.curve, table.group):
        return msm(table, values, lo, hi)
    hi = _rows(table, values, lo, hi)
    part = values[lo:hi]
    ones = (part == Fr.of(table.curve).one()).all(axis=1)
    other = np.flatnonzero(part.any(axis=1) & ~ones)
    pts = table.points()
    cls = table.curve.point_class(table.group)
    total = cls.identity()
    for i in (np.flatnonzero(ones) + lo).tolist():
        total = total + pts[i]
    if other.size:
        total = total + cls.multiexp_unchecked([pts[i] for i in (other + lo).tolist()],
                                               scalars(table.curve, part[other]))
    return total
