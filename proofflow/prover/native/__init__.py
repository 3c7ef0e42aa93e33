"""CPU kernels written in C, compiled on first use and cached, loaded with ctypes.

Like the GPU kernels (CUDA source compiled by NVRTC at run time), the CPU twin keeps its
hot loops as source in the package: nothing to build at install time, one compile per
machine and source version. The cache key is the source's hash, and the shared object is
published with an atomic rename so concurrent workers never load a half-written file.
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


def _build(src: Path, out: Path) -> None:
    cc = _compiler()
    base = [cc, "-O3", "-fPIC", "-shared", "-std=c11", str(src)]
    with files.atomic_path(out) as tmp:
        # OpenMP spreads the array loops over the cores; fall back to one thread without it.
        for extra in (["-fopenmp"], []):
            proc = subprocess.run(base + extra + ["-o", str(tmp)], capture_output=True, text=True)
            if proc.returncode == 0:
                return
        raise NativeBuildError(f"compiling {src.name} failed:\n{proc.stderr}")


@lru_cache(maxsize=None)
def load(name: str, src_dir: Path = _SRC_DIR) -> ctypes.CDLL:
    """Compile (once per machine and source version) and load ``<src_dir>/<name>.c``."""
    src = Path(src_dir) / f"{name}.c"
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    so = cache_dir() / f"{name}-{platform.machine()}-{digest}.so"
    if not so.exists():
        _build(src, so)
    return ctypes.CDLL(str(so))
