"""A curve's groups on the CPU in C (``curve.c``): checks, sums, scalar products, MSMs and
fixed-base multiples over points in the engine's xy-LE encoding, compiled once per curve
with its constants (``curve_defines``). The point library of a curve whose bindings have
no fast bulk path (BN254's, ``proofflow.prover.curves.bn254_points``) is built on it.

Points go in and come out as bytes or (n, xy_bytes) uint8 arrays, scalars as canonical
integers below 2^256 ((n, 4) uint64 little-endian limbs, or ints)."""
from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from proofflow.prover.curves.descriptor import GROUPS, Curve
from proofflow.prover.native import field_defines, limbs, load

_P64 = ctypes.POINTER(ctypes.c_uint64)
_i64 = ctypes.c_int64
_SIGNATURES = {"check": ([_P64, _i64, ctypes.c_int], _i64), "add_points": ([_P64, _P64, _P64], None),
               "mul_point": ([_P64, _P64, _P64], None), "msm": ([_P64, _P64, _i64, _P64], ctypes.c_int),
               "multiples": ([_P64, _P64, _i64, _P64], ctypes.c_int)}



def curve_defines(curve: Curve) -> tuple[str, ...]:
    """curve.c's constants: Fq's (``field_defines``: R^2 mod q among them), each group's b in Montgomery
    form and r. curve.c takes u^2 = -1 and scalars of 4 limbs."""
    if curve.fq2_non_residue != -1 or curve.fr.limbs != 4:
        raise ValueError(f"curve.c takes Fq2 = Fq[u]/(u^2 + 1) and a 4-limb Fr, not {curve.label}'s")
    fq, n = curve.fq, curve.fq.limbs

    def mont(x: int) -> int:
        return x * fq.montgomery_r % fq.modulus
    b2 = mont(curve.g2_b[0]) | mont(curve.g2_b[1]) << (64 * n)
    return (*field_defines("FQ", fq),
            f"-DG1_B={limbs(mont(curve.g1_b), n)}", f"-DG2_B={limbs(b2, 2 * n)}",
            f"-DFR_MODULUS={limbs(curve.fr.modulus, 4)}")


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P64)


def _u64(data, width: int, what: str) -> np.ndarray:
    """Bytes or a uint8 array of whole ``width``-byte rows as contiguous uint64 words."""
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else data
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1)
    if raw.size % width:
        raise ValueError(f"{raw.size} bytes of {what} is not a whole number of {width}-byte rows")
    return raw.view(np.uint64) if raw.ctypes.data % 8 == 0 else raw.copy().view(np.uint64)


class CurveKernels:
    """curve.c compiled for ``curve``; one instance a curve (``of``)."""

    def __init__(self, curve: Curve):
        self.curve = curve
        self._defines = curve_defines(curve)

    @staticmethod
    @lru_cache(maxsize=None)
    def of(curve: Curve) -> "CurveKernels":
        return CurveKernels(curve)

    def _fn(self, group: str, name: str):
        lib = load("curve", defines=self._defines)
        if not getattr(lib, "_proofflow_typed", False):
            for g in GROUPS:
                for fn_name, (args, res) in _SIGNATURES.items():
                    fn = getattr(lib, f"{g}_{fn_name}")
                    fn.argtypes, fn.restype = args, res
            lib._proofflow_typed = True
        return getattr(lib, f"{group}_{name}")

    def _width(self, group: str) -> int:
        return self.curve.xy_bytes(group)

    @staticmethod
    def _scalars(scalars) -> np.ndarray:
        if isinstance(scalars, np.ndarray):
            return np.ascontiguousarray(scalars, dtype=np.uint64).reshape(-1, 4)
        raw = b"".join(int(s).to_bytes(32, "little") for s in scalars)
        return np.frombuffer(raw, dtype=np.uint64).reshape(-1, 4)

    def check(self, group: str, xy, subgroup: bool = True) -> int | None:
        """The index of the first point that is not canonical, not on the curve or (with
        ``subgroup``) not in the prime-order subgroup; None when all are good."""
        words = _u64(xy, self._width(group), f"{group} points")
        bad = self._fn(group, "check")(_ptr(words), words.size * 8 // self._width(group), int(subgroup))
        return None if bad < 0 else int(bad)

    def add(self, group: str, a: bytes, b: bytes) -> bytes:
        out = np.empty(self._width(group) // 8, dtype=np.uint64)
        self._fn(group, "add_points")(_ptr(_u64(a, self._width(group), "a")), _ptr(_u64(b, self._width(group), "b")),
                                       _ptr(out))
        return out.tobytes()

    def mul(self, group: str, a: bytes, scalar: int) -> bytes:
        """scalar * a for 0 <= scalar < 2^256."""
        out = np.empty(self._width(group) // 8, dtype=np.uint64)
        self._fn(group, "mul_point")(_ptr(_u64(a, self._width(group), "a")), _ptr(self._scalars([scalar])), _ptr(out))
        return out.tobytes()

    def msm(self, group: str, xy, scalars) -> bytes:
        """sum_i scalars[i] * xy[i]; the points are not checked."""
        words, s = _u64(xy, self._width(group), f"{group} points"), self._scalars(scalars)
        n = words.size * 8 // self._width(group)
        if s.shape[0] != n:
            raise ValueError(f"{n} points but {s.shape[0]} scalars")
        out = np.empty(self._width(group) // 8, dtype=np.uint64)
        if self._fn(group, "msm")(_ptr(words), _ptr(s), n, _ptr(out)):
            raise MemoryError(f"a {group} MSM of {n} points")
        return out.tobytes()

    def multiples(self, group: str, base: bytes, scalars) -> np.ndarray:
        """[s * base for s in scalars] as an (n, xy_bytes) uint8 array."""
        s = self._scalars(scalars)
        out = np.empty((s.shape[0], self._width(group)), dtype=np.uint8)
        if s.shape[0] and self._fn(group, "multiples")(_ptr(_u64(base, self._width(group), "base")), _ptr(s),
                                                        s.shape[0], out.ctypes.data_as(_P64)):
            raise MemoryError(f"{s.shape[0]} {group} multiples")
        return out
