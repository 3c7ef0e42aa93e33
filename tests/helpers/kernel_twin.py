"""The CPU twin of the curve kernels (tests/kernel_twin.cpp), one library a registered curve:
built with the host's C++ compiler on first use, the curve's generated header
(``source.curve_header``, and decompress.cu's ``source.compression_header``) included first
as NVRTC's modules have it, cached like proofflow.prover.native's kernels (keyed by the hash
of every source it compiles and of that header), loaded with ctypes. Every function takes
the curve (BLS12-381, the default curve, unless told).

``TwinExecutor`` runs ``proofflow.prover.device.pippenger`` and ``proofflow.prover.device.fixed_base`` on it:
numpy arrays instead of CuPy's, each kernel's per-thread body in a loop instead of a launch.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.device import source
from proofflow.prover.field.fr import Fr
from proofflow.prover.native import cache_dir
from proofflow.prover.points import PointTable

CURVE = registry.get_curve(registry.DEFAULT)  # the curve of a call that names none
CURVES = tuple(registry.CURVES.values())  # what the twin is tested on: every registered curve

_TESTS = Path(__file__).resolve().parent
_KERNELS = _TESTS.parents[1] / "proofflow" / "prover" / "device"
SOURCES = [_TESTS / "kernel_twin.cpp"] + sorted(_KERNELS.glob("*.cuh")) + [_KERNELS / "msm.cu", _KERNELS / "fixed_base.cu",
                                                                          _KERNELS / "decompress.cu"]

FIELD_OPS = {"mul": 0, "sqr": 1, "add": 2, "sub": 3, "neg": 4, "inv": 5, "to_mont": 6, "from_mont": 7}
XYZZ_OPS = {"madd": 0, "add": 1, "dbl": 2, "affine": 3}


def curve_id(value) -> str | None:
    """A test id: a curve by its name, another object (an MSM plan) as it prints, a plain
    value as pytest would (None)."""
    if isinstance(value, Curve):
        return value.name
    return None if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def per_curve(names: str = "", full=(None,), small=None):
    """``pytest.mark.parametrize`` over ``curve`` (and ``names``, comma-separated): every case
    of ``full`` on the default curve, those of ``small`` (default: all of ``full``) on each
    other registered curve. The templates are the same code for every curve, only their
    constants differ: a few small cases check another curve's, keeping the suite fast."""
    import pytest

    def rows(curve, cases):
        return [curve if not names else (curve, *(case if isinstance(case, tuple) else (case,))) for case in cases]
    out = rows(CURVE, full)
    for curve in CURVES:
        if curve is not CURVE:
            out += rows(curve, full if small is None else small)
    return pytest.mark.parametrize(f"curve,{names}" if names else "curve", out, ids=curve_id)


class TwinUnavailable(RuntimeError):
    """No C++ compiler here, or it rejected the source."""


def compiler() -> str | None:
    for cand in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if cand and shutil.which(cand):
            return cand
    return None


@lru_cache(maxsize=None)
def load(curve: Curve = CURVE) -> ctypes.CDLL:
    """The twin compiled for ``curve``."""
    cxx = compiler()
    if cxx is None:
        raise TwinUnavailable("no C++ compiler (g++, c++ or clang++; or set CXX)")
    header = (source.curve_header(curve) + source.compression_header(curve)).encode()  # decompress.cu's too
    digest = hashlib.sha256(header + b"".join(p.name.encode() + p.read_bytes() for p in SOURCES)).hexdigest()[:16]
    # the default curve's file is named as before curves (path_tag), so caches of it stay current
    so = cache_dir() / f"kernel_twin-{registry.path_tag(curve)}{platform.machine()}-{digest}.so"
    if not so.exists():
        so.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=so.name, suffix=".tmp", dir=so.parent)
        os.close(fd)
        try:
            with tempfile.NamedTemporaryFile(suffix=".h", dir=so.parent) as curve_h:
                curve_h.write(header)
                curve_h.flush()
                proc = subprocess.run([cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-Wno-unknown-pragmas",
                                       f"-I{_KERNELS}", "-include", curve_h.name, str(SOURCES[0]), "-o", tmp],
                                      capture_output=True, text=True)
            if proc.returncode != 0:
                raise TwinUnavailable(f"compiling the kernel twin failed:\n{proc.stderr}")
            os.replace(tmp, so)  # atomic: a concurrent test run never loads half a file
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return ctypes.CDLL(str(so))


def _arg(a):
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise ValueError("twin kernels take C-contiguous arrays")
        return ctypes.c_void_p(a.ctypes.data)
    return {np.uint64: ctypes.c_uint64, np.uint32: ctypes.c_uint32, np.int32: ctypes.c_int32}[type(a)](int(a))


def call(name: str, *args, curve: Curve = CURVE) -> None:
    fn = getattr(load(curve), name)
    fn.restype = None
    fn(*map(_arg, args))


class TwinExecutor:
    """``proofflow.prover.device.pippenger.Executor`` on the CPU twin of ``curve``."""

    xp = np

    def __init__(self, curve: Curve = CURVE):
        self.curve = curve

    def launch(self, kernel: str, threads: int, *args) -> None:
        call("twin_" + kernel, np.uint64(threads), *args, curve=self.curve)

    def host(self, a) -> np.ndarray:
        return np.asarray(a)


class LaunchSpy(TwinExecutor):
    """A ``TwinExecutor`` that lists the kernels it launches, in order."""

    def __init__(self, curve: Curve = CURVE):
        super().__init__(curve)
        self.launched: list[str] = []

    def launch(self, kernel: str, threads: int, *args) -> None:
        self.launched.append(kernel)
        super().launch(kernel, threads, *args)


def field_op(field: str, op: str, a: np.ndarray, b: np.ndarray | None = None, curve: Curve = CURVE) -> np.ndarray:
    """Element-wise ``op`` on rows of u64 limbs (an Fq element: 6 on BLS12-381, 4 on BN254;
    an Fq2 element twice that)."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = a if b is None else np.ascontiguousarray(b, dtype=np.uint64)
    out = np.empty_like(a)
    call(f"twin_{field}_op", np.int32(FIELD_OPS[op]), a, b, out, np.uint64(a.shape[0]), curve=curve)
    return out


def mul_wide(field: str, a: np.ndarray, b: np.ndarray, curve: Curve = CURVE) -> np.ndarray:
    """mont.cuh's mul_wide element-wise on rows of u64 limbs (an Fq element's, or 4 an Fr one)."""
    a, b = (np.ascontiguousarray(v, dtype=np.uint64) for v in (a, b))
    out = np.empty_like(a)
    call(f"twin_{field}_mul_wide", a, b, out, np.uint64(a.shape[0]), curve=curve)
    return out


def xyzz_op(group: str, op: str, a: np.ndarray, b: np.ndarray | None = None, curve: Curve = CURVE) -> np.ndarray:
    """One XYZZ operation on a point of 4 coordinates (``b``: a second XYZZ point for add,
    an affine Montgomery point for madd); affine returns the canonical xy limbs."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = a if b is None else np.ascontiguousarray(b, dtype=np.uint64)
    out = np.empty(a.size // 2 if op == "affine" else a.size, dtype=np.uint64)
    call(f"twin_xyzz_{group}", np.int32(XYZZ_OPS[op]), a, b, out, curve=curve)
    return out


# ==== bitsum.cu (proofflow.prover.device.sparse), its twin entry points at the end of kernel_twin.cpp ====
SOURCES.append(_KERNELS / "bitsum.cu")  # part of the twin's cache digest


def edge_table(group: str, n: int, rng, curve: Curve = CURVE) -> PointTable:
    """n random points with infinity, a repeated point and a point and its negation."""
    g = curve.point_class(group)()
    pts = [g * curve.scalar(int(x)) for x in Fr.of(curve).to_ints(Fr.of(curve).random(n, rng))]
    if n >= 8:
        pts[1], pts[2], pts[4] = curve.point_class(group).identity(), pts[3], -pts[5]
    return PointTable.from_points(curve, group, pts)


def tiled_edge_table(group: str, n: int, seed: int, distinct: int = 512, curve: Curve = CURVE) -> PointTable:
    """``edge_table`` of up to ``distinct`` points tiled to n rows: large tables without
    computing n points on the host."""
    xy = edge_table(group, min(n, distinct), np.random.default_rng(seed), curve).xy
    return PointTable(curve, group, np.tile(xy, (-(-n // len(xy)), 1))[:n].copy())


def msm_edge_scalars(curve: Curve = CURVE) -> list[int]:
    """MSM scalars at the edges of ``curve``'s Fr and of the window digits (0, 1, r-1, the top
    bit below r, carries into a next window)."""
    p = curve.fr.modulus
    return [0, 1, 2, p - 1, p - 2, (p - 1) // 2, 1 << (p.bit_length() - 1), 255, 256, (1 << 248) - 1,
            int("73" + "00" * 31, 16) % p]


def points(ex: "TwinExecutor", table: PointTable) -> np.ndarray:
    """The table as the device holds it: (n, affine limbs) u64, Montgomery, on the twin (of
    the table's curve, which must be ``ex``'s)."""
    if ex.curve.name != table.curve.name:
        raise ValueError(f"a {table.curve.name} table on the {ex.curve.name} twin")
    limbs = table.curve.xy_bytes(table.group) // 8  # u64 limbs of x and y (-1 cannot size an empty table)
    pts = np.ascontiguousarray(table.xy).view(np.uint64).reshape(len(table), limbs).copy()
    ex.launch(f"to_montgomery_{table.group}", len(table), pts, np.uint64(len(table)))
    return pts
