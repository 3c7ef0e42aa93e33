"""BN254's points with the API the engine expects of a point library (py-arkworks-bls12381's:
``descriptor.Curve``), the module ``curves.bn254`` names.

A point holds its xy-LE encoding (canonical affine coordinates, 32 bytes each; all zeros at
infinity). The group law, scalar products, MSMs and fixed-base multiples run in the engine's
C (``native.curve``): no per-point Python in bulk, and ``multiexp_xy_le`` sums a key table's
rows without making point objects. The pairing, and the reading of compressed points
(arkworks's own deserializer: on the curve and in the subgroup), go through zksnake's
arkworks 0.4 bindings for ark-bn254, the only binding on PyPI with wheels and a fast
pairing. Encodings:
- compressed, as arkworks writes BN254: x (G2: c0 || c1) little-endian, the top bit of the
  last byte set when y is the larger of y and -y (G2: c1 compared first), the next bit at
  infinity (x zero);
- snarkjs's JSON and zkeys: ``circom.snarkjs_json``, ``circom.encoding`` (generic);
- Ethereum's 32-byte big-endian words: ``curves.ethereum``.
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.curves.bn254 import BN254, Q, R
from proofflow.prover.native.curve import CurveKernels

_W = BN254.fq.bytes
_INFINITY_FLAG, _NEGATIVE_FLAG = 0x40, 0x80
# The generators, as EIP-196/197 (and snarkjs, and arkworks) fix them: G1 = (1, 2); G2's
# coordinates c0 + c1 u.
G1_GENERATOR = (1, 2)
G2_GENERATOR = ((10857046999023057135944570762232829481370756359578518086990519993285655852781,
                 11559732032986387107991004021392285783925812861821192530917403151452391805634),
                (8495653923123431417604973247489272438418190587263600148770280649306958101930,
                 4082367875863433681332203403145435568316851327593401208105741076214120093531))


def _kernels() -> CurveKernels:
    return CurveKernels.of(BN254)


def _ark():
    from zksnake._algebra import ec_bn254  # imported with the first pairing or decompression
    return ec_bn254


def _le(*coords: int) -> bytes:
    return b"".join(c.to_bytes(_W, "little") for c in coords)


class Scalar:
    """An element of Fr (reduced mod r)."""
    __slots__ = ("value",)

    def __init__(self, value: int = 0):
        self.value = int(value) % R

    @classmethod
    def from_le_bytes(cls, data: bytes) -> "Scalar":
        if len(data) != BN254.fr.bytes:
            raise ValueError(f"a scalar is {BN254.fr.bytes} bytes little-endian, got {len(data)}")
        return cls(int.from_bytes(data, "little"))

    def to_le_bytes(self) -> bytes:
        return self.value.to_bytes(BN254.fr.bytes, "little")

    def __int__(self) -> int:
        return self.value

    def __eq__(self, other) -> bool:
        return isinstance(other, Scalar) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Scalar({self.value})"


class _Point:
    __slots__ = ("_xy", "_arkworks")
    GROUP = ""
    GENERATOR = b""

    def __init__(self):
        """The group's generator."""
        self._xy, self._arkworks = self.GENERATOR, None

    @classmethod
    def _of(cls, xy: bytes):
        p = cls.__new__(cls)
        p._xy, p._arkworks = bytes(xy), None
        return p

    @classmethod
    def width(cls) -> int:
        return BN254.xy_bytes(cls.GROUP)

    @classmethod
    def identity(cls):
        return cls._of(bytes(cls.width()))

    def is_identity(self) -> bool:
        return not any(self._xy)

    def coordinates(self) -> list[int]:
        """x, y (G1) or x.c0, x.c1, y.c0, y.c1 (G2) as ints; zeros at infinity."""
        return [int.from_bytes(self._xy[i:i + _W], "little") for i in range(0, len(self._xy), _W)]

    # ---- the engine's encodings ----
    @classmethod
    def _decoded(cls, data: bytes, subgroup: bool):
        if len(data) != cls.width():
            raise ValueError(f"a {cls.GROUP} point is {cls.width()} bytes xy-LE, got {len(data)}")
        if _kernels().check(cls.GROUP, data, subgroup) is not None:
            raise ValueError(f"not a point of BN254's {cls.GROUP.upper()}"
                             f"{' (off the curve, or outside the subgroup)' if subgroup else ' (off the curve)'}")
        return cls._of(data)

    @classmethod
    def from_xy_bytes_le(cls, data: bytes):
        """Checked on the curve and in the subgroup."""
        return cls._decoded(data, subgroup=cls.GROUP == "g2")  # G1's cofactor is 1: its curve is its subgroup

    @classmethod
    def from_xy_bytes_unchecked_le(cls, data: bytes):
        """Checked on the curve only."""
        return cls._decoded(data, subgroup=False)

    def to_xy_bytes_le(self) -> bytes:
        return self._xy

    def to_compressed_bytes(self) -> bytes:
        if self.is_identity():
            return bytes(len(self._xy) // 2 - 1) + bytes([_INFINITY_FLAG])
        coords = self.coordinates()
        half = len(coords) // 2
        y = coords[half:]
        neg = [(Q - c) % Q for c in y]
        larger = list(reversed(y)) > list(reversed(neg))  # arkworks orders Fq2 by c1, then c0
        raw = bytearray(self._xy[:len(self._xy) // 2])
        raw[-1] |= _NEGATIVE_FLAG if larger else 0
        return bytes(raw)

    @classmethod
    def from_compressed_bytes(cls, data: bytes):
        """arkworks's reading: on the curve and in the subgroup, else ValueError."""
        if len(data) != cls.width() // 2:
            raise ValueError(f"a compressed {cls.GROUP} point is {cls.width() // 2} bytes, got {len(data)}")
        ark = _ark()
        try:
            p = getattr(ark, "PointG1" if cls.GROUP == "g1" else "PointG2").from_bytes(bytes(data))
        except ValueError as exc:
            raise ValueError(f"not a compressed BN254 {cls.GROUP.upper()} point: {exc}") from None
        if p.is_zero():
            return cls.identity()
        coords = [p.x, p.y] if cls.GROUP == "g1" else [*p.x, *p.y]
        point = cls._of(_le(*coords))
        point._arkworks = p
        return point

    # ---- the group law ----
    def __add__(self, other):
        self._same(other)
        return type(self)._of(_kernels().add(self.GROUP, self._xy, other._xy))

    def __neg__(self):
        if self.is_identity():
            return self
        coords = self.coordinates()
        half = len(coords) // 2
        neg = type(self)._of(_le(*coords[:half], *((Q - c) % Q for c in coords[half:])))
        if self._arkworks is not None:  # the verifier negates key and proof points: keep theirs made
            neg._arkworks = -self._arkworks
        return neg

    def __sub__(self, other):
        return self + (-other)

    def __mul__(self, scalar):
        if not isinstance(scalar, Scalar):
            return NotImplemented
        return type(self)._of(_kernels().mul(self.GROUP, self._xy, scalar.value))

    __rmul__ = __mul__

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._xy == self._xy

    def __hash__(self) -> int:
        return hash((self.GROUP, self._xy))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'infinity' if self.is_identity() else self.coordinates()})"

    def _same(self, other) -> None:
        if type(other) is not type(self):
            raise TypeError(f"cannot add a {type(other).__name__} to a {type(self).__name__}")

    # ---- many points ----
    @classmethod
    def multiexp_unchecked(cls, points, scalars):
        """sum_i scalars[i] * points[i]."""
        if len(points) != len(scalars):
            raise ValueError(f"{len(points)} points but {len(scalars)} scalars")
        if not points:
            return cls.identity()
        return cls._of(_kernels().msm(cls.GROUP, b"".join(p._xy for p in points), [s.value for s in scalars]))

    @classmethod
    def multiexp_xy_le(cls, rows: np.ndarray, scalars: np.ndarray):
        """sum_i scalars[i] * rows[i] for (n, xy_bytes) uint8 xy-LE rows (not checked) and
        (n, 4) uint64 canonical scalars: a key table's MSM with no point objects."""
        return cls._of(_kernels().msm(cls.GROUP, rows, scalars))

    @classmethod
    def first_off_curve_xy_le(cls, rows: np.ndarray) -> int | None:
        """The index of the first of (n, xy_bytes) uint8 xy-LE rows not on the curve (or with
        a coordinate not below q); None when all are on it."""
        return _kernels().check(cls.GROUP, rows, subgroup=False)

    @classmethod
    def multiples_xy_le(cls, scalars: np.ndarray) -> np.ndarray:
        """[s * G for s in scalars] ((n, 4) uint64 canonical) as (n, xy_bytes) uint8 xy-LE rows."""
        return _kernels().multiples(cls.GROUP, cls.GENERATOR, scalars)

    # ---- the pairing's side ----
    def _arkworks_point(self):
        """This point in zksnake's arkworks bindings (made once a point: a few hundred µs)."""
        if self._arkworks is None:
            ark = _ark()
            c = self.coordinates()
            try:
                if self.GROUP == "g1":
                    self._arkworks = ark.PointG1.identity() if self.is_identity() else ark.PointG1(*c)
                else:
                    self._arkworks = ark.g2() * 0 if self.is_identity() else ark.PointG2(*c)
            except BaseException as exc:  # the bindings panic (a BaseException) on a point outside the subgroup
                if type(exc).__name__ != "PanicException":
                    raise
                raise ValueError(f"a {self.GROUP.upper()} point outside BN254's subgroup cannot be paired") from None
        return self._arkworks


class G1Point(_Point):
    __slots__ = ()
    GROUP = "g1"
    GENERATOR = _le(*G1_GENERATOR)


class G2Point(_Point):
    __slots__ = ()
    GROUP = "g2"
    GENERATOR = _le(*G2_GENERATOR[0], *G2_GENERATOR[1])


def _fq12(value) -> list[int]:
    """zksnake prints an Fq12 as the bytes of its arkworks serialization, in hex without
    padding: 12 coefficients of 32 bytes little-endian, in tower order."""
    raw = bytes(int(t, 16) for t in str(value).strip("[]").split(","))
    if len(raw) != 12 * _W:
        raise ValueError(f"an Fq12 of {len(raw)} bytes from the pairing library")
    return [int.from_bytes(raw[i:i + _W], "little") for i in range(0, len(raw), _W)]


def _points(points, cls) -> list:
    for p in points:
        if not isinstance(p, cls):
            raise TypeError(f"a pairing takes {cls.__name__}s, got a {type(p).__name__}")
    return [p._arkworks_point() for p in points]


def pairing(g1: G1Point, g2: G2Point) -> list[int]:
    """e(g1, g2) as its 12 Fq coefficients in tower order (``Curve.pairing``), as arkworks and
    snarkjs compute it: its final exponentiation (Fuentes-Castaneda et al.) gives the
    textbook pairing to the fixed power 2x(6x^2 + 3x + 1), x BN254's parameter."""
    return _fq12(_ark().pairing(*_points([g1], G1Point), *_points([g2], G2Point)))


def pairing_check(g1s, g2s) -> bool:
    """Whether prod e(g1s[i], g2s[i]) is one."""
    if len(g1s) != len(g2s):
        raise ValueError(f"{len(g1s)} G1 points but {len(g2s)} G2 points")
    return _fq12(_ark().multi_pairing(_points(g1s, G1Point), _points(g2s, G2Point))) == [1] + [0] * 11
