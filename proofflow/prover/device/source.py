"""The CUDA kernels' source and NVRTC options: what a compiled module is built from.

The source lives in this package (``*.cuh`` headers, ``ntt.cu``, ``msm.cu``,
``fixed_base.cu``, ``bitsum.cu``, ``field.cu``, ``decompress.cu``) like the C kernels of ``proofflow.prover.native``: nothing to build at install
time. ``cache.load`` loads a module once per process from its cubin in the kernel
directory, compiling and saving it first when there is none for this source, NVRTC and
the device's arch; ``proofflow kernels build`` compiles them all ahead of time (the GPU
image does, for sm_90). The cubins are named by a digest of the source text, so headers
are inlined here rather than ``#include``d by NVRTC: editing one then recompiles as it
should. A module is compiled per curve: its text starts with ``curve_header``, the curve's
field constants as #defines that fr.cuh and fq.cuh instantiate the Montgomery template
with, so the digest covers the curve. The headers also compile on the host
(``common.cuh``): the CPU twin in ``tests/kernel_twin.py`` builds them with g++, the same
generated header included first. Nothing here needs CuPy.
"""
from __future__ import annotations

import re
from pathlib import Path

from proofflow.prover.curves.descriptor import Curve, PrimeField
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
GROUPS = ("g1", "g2")  # msm.cu, fixed_base.cu, bitsum.cu and decompress.cu build one group's kernels a module
CURVE_VARIANT = "call"  # the curve modules' variant unless BEST_VARIANT or PROOFFLOW_CURVE_VARIANT says
# A curve's group whose curve kernels are fastest in another variant (docs/gpu-kernels.md): with
# BN254's 4-limb Fq, G1's inlined products fit the instruction cache (bench/results/gpu-h100.json,
# bn254's msm_g1_variants); its G2 and every BLS12-381 group are fastest called
BEST_VARIANT = {("bn254", "g1"): "wide"}


def curve_variant(curve: str, group: str, configured: str | None = None) -> str:
    """The variant of ``curve``'s ``group`` curve modules (msm.cu, fixed_base.cu, bitsum.cu,
    decompress.cu): ``configured`` (PROOFFLOW_CURVE_VARIANT) when set, else the group's best."""
    return configured or BEST_VARIANT.get((curve, group), CURVE_VARIANT)


_INCLUDE = re.compile(r'^#include "([\w.]+)"[^\n]*$', re.MULTILINE)


def _words(x: int, count: int) -> list[str]:
    return [f"0x{(x >> (32 * i)) & 0xFFFFFFFF:08x}u" for i in range(count)]


def _montgomery_defines(prefix: str, field: PrimeField) -> list[str]:
    """The Montgomery template's arguments for a field: its word count, -p^-1 mod 2^32 and p,
    in 32-bit words, little-endian."""
    n = 2 * field.limbs
    return [f"#define {prefix}_WORDS {n}",
            f"#define {prefix}_M0 0x{field.montgomery_inverse(32):08x}u  // -p^-1 mod 2^32",
            f"#define {prefix}_MODULUS {', '.join(_words(field.modulus, n))}"]


def _base_field_defines(field: PrimeField) -> list[str]:
    """Fq's constants besides its template's: one and R^2 in Montgomery form, and the words
    of q - 2 (Fermat's inversion's exponent) as one expression of the word index, since a
    run-time index into an array would put it in local memory."""
    n, q2 = 2 * field.limbs, _words(field.modulus - 2, 2 * field.limbs)
    exponent = " : ".join(f"(i) == {i} ? {w}" for i, w in enumerate(q2[:-1])) + f" : {q2[-1]}"
    return [f"#define PF_FQ_ONE {', '.join(_words(field.montgomery_r, n))}  // R mod q",
            f"#define PF_FQ_R2 {', '.join(_words(field.montgomery_r2, n))}  // R^2 mod q",
            f"#define PF_FQ_INV_EXPONENT_WORD(i) ({exponent})  // q - 2",
            *_uint4_defines(n // 4)]


def _uint4_defines(count: int) -> list[str]:
    """An Fq element as ``count`` uint4, spelled out for fq.cuh's loads and stores: each
    uint4 a value of its own (a whole 16-byte load or store), as a loop over them would
    not compile to."""
    k = range(count)
    return [f"#define PF_FQ_UINT4_PARAMS {', '.join(f'uint4 v{i}' for i in k)}",
            f"#define PF_FQ_UINT4_WORDS {', '.join(f'v{i}.{c}' for i in k for c in 'xyzw')}",
            f"#define PF_FQ_UINT4S(p) {', '.join(f'(p)[{i}]' for i in k)}",
            "#define PF_FQ_STORE_UINT4S(p, a) " + " ".join(
                f"(p)[{i}] = make_uint4({', '.join(f'(a).w[{4 * i + j}]' for j in range(4))});" for i in k)]


def curve_header(curve: Curve) -> str:
    """The #defines a module of ``curve`` is compiled with: Fr's and Fq's constants, and Fq2's
    non-residue (fq2.cuh's formulas take u^2 = -1)."""
    lines = [f"// {curve.label} (generated by proofflow.prover.device.source from proofflow.prover.curves)",
             *_montgomery_defines("PF_FR", curve.fr), *_montgomery_defines("PF_FQ", curve.fq),
             *_base_field_defines(curve.fq),
             f"#define PF_FQ2_NON_RESIDUE ({curve.fq2_non_residue})"]
    return "\n".join(lines) + "\n"


def _exponent(name: str, x: int, count: int) -> str:
    """#define ``name``(i): word i of ``x`` as one expression of the word index (as
    PF_FQ_INV_EXPONENT_WORD: a run-time index into an array would put it in local memory)."""
    words = _words(x, count)
    return f"#define {name}(i) (" + " : ".join(f"(i) == {i} ? {w}" for i, w in enumerate(words[:-1])) + \
        f" : {words[-1]})"


def compression_header(curve: Curve) -> str:
    """What decompress.cu takes besides the curve's header: the curve library's compressed
    encoding (``descriptor.Compression``) and the constants of its square roots
    (``native.compressed.constants``, the CPU twin's), Fq values in 32-bit words."""
    from proofflow.prover.native.compressed import constants
    k, c, n = constants(curve), curve.compression, 2 * curve.fq.limbs
    return "\n".join([
        f"// {curve.label}'s compressed points (source.compression_header)",
        f"#define PF_COMPRESSED_BIG_ENDIAN {int(c.big_endian)}",
        f"#define PF_FLAG_INFINITY 0x{c.infinity:02x}u",
        f"#define PF_FLAG_LARGER 0x{c.larger:02x}u",
        f"#define PF_FLAG_MARKER 0x{c.marker:02x}u",
        _exponent("PF_FQ_SQRT_EXPONENT_WORD", k["sqrt_exp"], n) + "  // (q + 1) / 4",
        _exponent("PF_FQ_SQRT_LESS_ONE_EXPONENT_WORD", k["sqrt_exp_less_one"], n) + "  // (q - 3) / 4",
        f"#define PF_FQ_HALF {', '.join(_words(k['half'], n))}  // (q - 1) / 2",
        f"#define PF_FQ_HALF_MONT {', '.join(_words(k['half_mont'], n))}  // 1/2, Montgomery",
        f"#define PF_G1_B {', '.join(_words(k['g1_b'], n))}  // Montgomery",
        f"#define PF_G2_B0 {', '.join(_words(k['g2_b'][0], n))}",
        f"#define PF_G2_B1 {', '.join(_words(k['g2_b'][1], n))}"]) + "\n"


# the modules that take a header of their own after the curve's
MODULE_HEADERS = {"decompress.cu": compression_header}


def source(name: str, curve: Curve) -> str:
    """``name``'s text for ``curve``: its ``curve_header`` (and its own, ``MODULE_HEADERS``),
    then the file with its local includes inlined, each header once (first use)."""
    seen: set[str] = set()

    def expand(file: str) -> str:
        def include(m: re.Match) -> str:
            header = m.group(1)
            if header in seen:
                return ""
            seen.add(header)
            return expand(header)
        return _INCLUDE.sub(include, (_DIR / file).read_text())

    own = MODULE_HEADERS[name](curve) if name in MODULE_HEADERS else ""
    return curve_header(curve) + own + expand(name)


def options(variant: str = "mul32", group: str | None = None, name: str | None = None) -> tuple[str, ...]:
    """NVRTC options of module ``name``: the product variant and, for the curve modules, the
    group."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    if group is not None and group not in GROUPS:
        raise ValueError(f"unknown group {group!r}: choose one of {', '.join(GROUPS)}")
    grouped = (f"-DPF_GROUP_{group.upper()}",) if group else ()
    return ("-std=c++17",) + _DEFINES[variant] + grouped
