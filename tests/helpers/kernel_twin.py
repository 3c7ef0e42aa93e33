"""The CPU twin of the curve kernels (tests/kernel_twin.cpp) for BLS12-381: built with the
host's C++ compiler on first use, the curve's generated header (``source.curve_header``, and
decompress.cu's ``source.compression_header``) included first as NVRTC's modules have it, cached like proofflow.prover.native's kernels
(keyed by the hash of every source it compiles and of that header), loaded with ctypes.

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

from proofflow.prover.curves.bls12_381 import BLS12_381
from proofflow.prover.device import source
from proofflow.prover.field.fr import Fr
from proofflow.prover.native import cache_dir
from proofflow.prover.points import PointTable

CURVE = BLS12_381  # the curve the twin is compiled for
fr = Fr.of(CURVE)

_TESTS = Path(__file__).resolve().parent
_KERNELS = _TESTS.parents[1] / "proofflow" / "prover" / "device"
SOURCES = [_TESTS / "kernel_twin.cpp"] + sorted(_KERNELS.glob("*.cuh")) + [_KERNELS / "msm.cu", _KERNELS / "fixed_base.cu",
                                                                          _KERNELS / "decompress.cu"]

FIELD_OPS = {"mul": 0, "sqr": 1, "add": 2, "sub": 3, "neg": 4, "inv": 5, "to_mont": 6, "from_mont": 7}
XYZZ_OPS = {"madd": 0, "add": 1, "dbl": 2, "affine": 3}


class TwinUnavailable(RuntimeError):
    """No C++ compiler here, or it rejected the source."""


def compiler() -> str | None:
    for cand in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if cand and shutil.which(cand):
            return cand
    return None


@lru_cache(maxsize=1)
def load() -> ctypes.CDLL:
    cxx = compiler()
    if cxx is None:
        raise TwinUnavailable("no C++ compiler (g++, c++ or clang++; or set CXX)")
    header = (source.curve_header(CURVE) + source.compression_header(CURVE)).encode()  # decompress.cu's too
    digest = hashlib.sha256(header + b"".join(p.name.encode() + p.read_bytes() for p in SOURCES)).hexdigest()[:16]
    so = cache_dir() / f"kernel_twin-{platform.machine()}-{digest}.so"
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


def call(name: str, *args) -> None:
    fn = getattr(load(), name)
    fn.restype = None
    fn(*map(_arg, args))


class TwinExecutor:
    """``proofflow.prover.device.pippenger.Executor`` on the CPU twin."""

    xp = np
    curve = CURVE

    def launch(self, kernel: str, threads: int, *args) -> None:
        call("twin_" + kernel, np.uint64(threads), *args)

    def host(self, a) -> np.ndarray:
        return np.asarray(a)


class LaunchSpy(TwinExecutor):
    """A ``TwinExecutor`` that lists the kernels it launches, in order."""

    def __init__(self):
        self.launched: list[str] = []

    def launch(self, kernel: str, threads: int, *args) -> None:
        self.launched.append(kernel)
        super().launch(kernel, threads, *args)


def field_op(field: str, op: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Element-wise ``op`` on rows of u64 limbs (6 an Fq element, 12 an Fq2 element)."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = a if b is None else np.ascontiguousarray(b, dtype=np.uint64)
    out = np.empty_like(a)
    call(f"twin_{field}_op", np.int32(FIELD_OPS[op]), a, b, out, np.uint64(a.shape[0]))
    return out


def mul_wide(field: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """mont.cuh's mul_wide element-wise on rows of u64 limbs (6 an Fq element, 4 an Fr one)."""
    a, b = (np.ascontiguousarray(v, dtype=np.uint64) for v in (a, b))
    out = np.empty_like(a)
    call(f"twin_{field}_mul_wide", a, b, out, np.uint64(a.shape[0]))
    return out


def xyzz_op(group: str, op: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """One XYZZ operation on a point of 4 coordinates (``b``: a second XYZZ point for add,
    an affine Montgomery point for madd); affine returns the canonical xy limbs."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = a if b is None else np.ascontiguousarray(b, dtype=np.uint64)
    out = np.empty(a.size // 2 if op == "affine" else a.size, dtype=np.uint64)
    call(f"twin_xyzz_{group}", np.int32(XYZZ_OPS[op]), a, b, out)
    return out


# ==== bitsum.cu (proofflow.prover.device.sparse), its twin entry points at the end of kernel_twin.cpp ====
SOURCES.append(_KERNELS / "bitsum.cu")  # part of the twin's cache digest


def edge_table(group: str, n: int, rng) -> PointTable:
    """n random points with infinity, a repeated point and a point and its negation."""
    g = CURVE.point_class(group)()
    pts = [g * CURVE.scalar(int(x)) for x in fr.to_ints(fr.random(n, rng))]
    if n >= 8:
        pts[1], pts[2], pts[4] = CURVE.point_class(group).identity(), pts[3], -pts[5]
    return PointTable.from_points(CURVE, group, pts)


def tiled_edge_table(group: str, n: int, seed: int, distinct: int = 512) -> PointTable:
    """``edge_table`` of up to ``distinct`` points tiled to n rows: large tables without
    computing n points on the host."""
    xy = edge_table(group, min(n, distinct), np.random.default_rng(seed)).xy
    return PointTable(CURVE, group, np.tile(xy, (-(-n // len(xy)), 1))[:n].copy())


# MSM scalars at the edges of Fr and of the window digits (0, 1, r-1, carries into a next window)
MSM_EDGE_SCALARS = [0, 1, 2, fr.MODULUS - 1, fr.MODULUS - 2, (fr.MODULUS - 1) // 2, 1 << 254, 255, 256,
                    (1 << 248) - 1, int("73" + "00" * 31, 16)]


def points(ex: "TwinExecutor", table: PointTable) -> np.ndarray:
    """The table as the device holds it: (n, affine limbs) u64, Montgomery, on the twin."""
    limbs = table.curve.xy_bytes(table.group) // 8  # u64 limbs of x and y (-1 cannot size an empty table)
    pts = np.ascontiguousarray(table.xy).view(np.uint64).reshape(len(table), limbs).copy()
    ex.launch(f"to_montgomery_{table.group}", len(table), pts, np.uint64(len(table)))
    return pts
