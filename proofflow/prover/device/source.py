"""The CUDA kernels' source and NVRTC options: what a compiled module is built from.

The source lives in this package (``*.cuh`` headers, ``ntt.cu``, ``msm.cu``,
``fixed_base.cu``, ``bitsum.cu``, ``field.cu``) like the C kernels of ``proofflow.prover.native``: nothing to build at install
time. ``cache.load`` loads a module once per process from its cubin in the kernel
directory, compiling and saving it first when there is none for this source, NVRTC and
the device's arch; ``proofflow kernels build`` compiles them all ahead of time (the GPU
image does, for sm_90). The cubins are named by a digest of the source text, so headers
are inlined here rather than ``#include``d by NVRTC: editing one then recompiles as it
should. The headers also compile on the host (``common.cuh``): the CPU twin in
``tests/kernel_twin.py`` builds them with g++. Nothing here needs CuPy.
"""
from __future__ import annotations

import re
from pathlib import Path

_DIR = Path(__file__).resolve().parent
# The product a module is compiled with: 32-bit words with PTX carry chains (mul32), the Fr
# products as 64-bit CIOS (mul64), every Fr and Fq product and square with each 32 x 32
# product one IMAD.WIDE.U32.X (wide: mont.cuh's mul_wide), or wide with the curve formulas'
# Fq products and squares as called functions, not inlined (call: fq.cuh). All give the
# same values.
VARIANTS = ("mul32", "mul64", "wide", "call")
PRODUCT_VARIANTS = ("mul32", "mul64", "wide")  # those whose Fr or Fq products differ (call: wide's)
CURVE_VARIANTS = ("mul32", "wide", "call")  # those whose curve kernels differ (mul64: mul32's)
_DEFINES = {"mul32": (), "mul64": ("-DFR_MUL64",), "wide": ("-DPF_MUL_WIDE",),
            "call": ("-DPF_MUL_WIDE", "-DPF_FIELD_CALL")}
GROUPS = ("g1", "g2")  # msm.cu, fixed_base.cu and bitsum.cu build one group's kernels a module
CURVE_VARIANT = "call"  # msm.cu's, fixed_base.cu's and bitsum.cu's variant unless PROOFFLOW_CURVE_VARIANT says


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


def options(variant: str = "mul32", group: str | None = None, name: str | None = None) -> tuple[str, ...]:
    """NVRTC options of module ``name``: the product variant and, for the curve modules, the
    group."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    if group is not None and group not in GROUPS:
        raise ValueError(f"unknown group {group!r}: choose one of {', '.join(GROUPS)}")
    grouped = (f"-DPF_GROUP_{group.upper()}",) if group else ()
    return ("-std=c++17",) + _DEFINES[variant] + grouped
