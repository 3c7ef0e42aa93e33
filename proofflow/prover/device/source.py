"""CUDA kernels, compiled at run time by NVRTC through CuPy.

The source lives in this package (``*.cuh`` headers, ``ntt.cu``, ``msm.cu``,
``fixed_base.cu``) like the C kernels of ``proofflow.prover.native``: nothing to build at install
time. ``load`` compiles once per process (lru_cache) and CuPy keeps the compiled module in
its on-disk kernel cache. That cache is keyed by the source text, not by included files,
so headers are inlined here rather than ``#include``d by NVRTC: editing one then
recompiles as it should. The headers also compile on the host (``common.cuh``): the CPU
twin in ``tests/kernel_twin.py`` builds them with g++.
``source`` needs no CuPy (the CPU twin and the compile checks use it); ``load`` imports it.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import cupy


_DIR = Path(__file__).resolve().parent
VARIANTS = ("mul32", "mul64")  # 32-bit words with PTX carry chains, or 64-bit CIOS
GROUPS = ("g1", "g2")  # msm.cu and fixed_base.cu build one group's kernels a module


_INCLUDE = re.compile(r'^#include "([\w.]+)"[^\n]*$', re.MULTILINE)


def source(name: str = "ntt.cu") -> str:
    """``name``'s text with its local includes inlined, each header once (first use)."""
    seen: set[str] = set()

    def expand(file: str) -> str:
        def include(m: re.Match) -> str:
            header = m.group(1)
            if header in seen:
                return ""
            seen.add(header)
            return expand(header)
        return _INCLUDE.sub(include, (_DIR / file).read_text())

    return expand(name)


def options(variant: str = "mul32", group: str | None = None) -> tuple[str, ...]:
    """NVRTC options of a module: the Fr product variant and, for the curve modules, the group."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    if group is not None and group not in GROUPS:
        raise ValueError(f"unknown group {group!r}: choose one of {', '.join(GROUPS)}")
    return (("-std=c++17",) + (("-DFR_MUL64",) if variant == "mul64" else ())
            + ((f"-DPF_GROUP_{group.upper()}",) if group else ()))


@lru_cache(maxsize=None)
def load(variant: str = "mul32", name: str = "ntt.cu", group: str | None = None) -> "cupy.RawModule":
    """The module compiled from ``name``: ``ntt.cu``, or ``msm.cu`` / ``fixed_base.cu`` for
    one ``group`` (``g1`` or ``g2``)."""
    opts = options(variant, group)
    import cupy
    return cupy.RawModule(code=source(name), options=opts)
