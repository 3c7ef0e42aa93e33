"""CPU kernels written in C, compiled on first use and cached, loaded with ctypes.

Like the GPU kernels (CUDA source compiled by NVRTC at run time), the CPU twin keeps its
hot loops as source in the package: nothing to build at install time, one compile per
machine, source version and set of constants. A field's kernels are compiled per curve, its
constants passed as -D defines (``field_defines``); the cache key is the hash of the source,
the headers beside this module (fq.h) and the defines, and the shared object is published with an atomic rename so concurrent
workers never load a half-written file.
"""
from __future__ import annotations

import ctypes
import hashlib
import platform
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from proofflow import settings
from proofflow.prover import files
from proofflow.prover.curves.descriptor import PrimeField

_SRC_DIR = Path(__file__).resolve().parent


class NativeBuildError(RuntimeError):
    """The C compiler is missing or rejected the kernel source."""


def cache_dir() -> Path:
    return settings.current().cache_root / "native"


def _compiler() -> str:
    for cand in (settings.current().c_compiler, "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return cand
    raise NativeBuildError("no C compiler found (set CC, or install gcc): the CPU field kernels need one")


def limbs(x: int, count: int) -> str:
    """``x`` as ``count`` comma-separated 64-bit limbs, least significant first: a C array's initializer."""
    return ",".join(f"0x{(x >> (64 * i)) & (2**64 - 1):016x}ULL" for i in range(count))


def field_defines(prefix: str, field: PrimeField) -> tuple[str, ...]:
    """A field's constants as the C kernels take them: <prefix>_LIMBS, <prefix>_MODULUS,
    <prefix>_ONE (R mod p) and <prefix>_R2 (R^2 mod p) as comma-separated 64-bit limbs,
    <prefix>_INV (-p^-1 mod 2^64)."""
    n = field.limbs
    return (f"-D{prefix}_LIMBS={n}", f"-D{prefix}_MODULUS={limbs(field.modulus, n)}",
            f"-D{prefix}_ONE={limbs(field.montgomery_r, n)}", f"-D{prefix}_R2={limbs(field.montgomery_r2, n)}",
            f"-D{prefix}_INV=0x{field.montgomery_inverse(64):016x}ULL")


def _build(src: Path, out: Path, defines: tuple[str, ...]) -> None:
    cc = _compiler()
    base = [cc, "-O3", "-fPIC", "-shared", "-std=c11", *defines, str(src)]
    with files.atomic_path(out) as tmp:
        # OpenMP spreads the array loops over the cores; fall back to one thread without it.
        for extra in (["-fopenmp"], []):
            proc = subprocess.run(base + extra + ["-o", str(tmp)], capture_output=True, text=True)
            if proc.returncode == 0:
                return
        raise NativeBuildError(f"compiling {src.name} failed:\n{proc.stderr}")


@lru_cache(maxsize=None)
def load(name: str, src_dir: Path = _SRC_DIR, defines: tuple[str, ...] = ()) -> ctypes.CDLL:
    """Compile (once per machine, source version and ``defines``) and load ``<src_dir>/<name>.c``."""
    src = Path(src_dir) / f"{name}.c"
    headers = b"".join(h.read_bytes() for h in sorted(_SRC_DIR.glob("*.h")))  # what sources include
    digest = hashlib.sha256(src.read_bytes() + headers + "\0".join(defines).encode()).hexdigest()[:16]
    so = cache_dir() / f"{name}-{platform.machine()}-{digest}.so"
    if not so.exists():
        _build(src, so, defines)
    settings.export_omp_wait_policy()  # before OpenMP's runtime loads with the first kernel
    return ctypes.CDLL(str(so))
