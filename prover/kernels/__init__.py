"""CUDA kernels, compiled at run time by NVRTC through CuPy.

The source lives in this package (``fr.cuh``, ``ntt.cu``, ``msm.cu``) like the C kernels of
``prover.native``: nothing to build at install time. ``load`` compiles once per process
(lru_cache) and CuPy keeps the compiled module in its on-disk kernel cache. That cache is
keyed by the source text, not by included files, so the header is inlined here rather
than ``#include``d by NVRTC: editing ``fr.cuh`` then recompiles as it should.
Importing this package imports CuPy; only the GPU backend does.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import cupy

_DIR = Path(__file__).resolve().parent
VARIANTS = ("mul32", "mul64")  # 32-bit words with PTX carry chains, or 64-bit CIOS


def source(name: str = "ntt.cu") -> str:
    header = (_DIR / "fr.cuh").read_text()
    return (_DIR / name).read_text().replace('#include "fr.cuh"', header)


@lru_cache(maxsize=None)
def load(variant: str = "mul32", name: str = "ntt.cu") -> cupy.RawModule:
    """The module compiled from ``name`` (``ntt.cu`` or ``msm.cu``)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    options = ("-std=c++17",) + (("-DFR_MUL64",) if variant == "mul64" else ())
    return cupy.RawModule(code=source(name), options=options)
