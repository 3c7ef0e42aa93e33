"""Key tables' rows between the engine's xy-LE encoding and the curve library's compressed
one (``descriptor.Compression``: x and two or three flags, half the bytes), on the CPU in C
(``compressed.c``, compiled once per curve with its constants, ``defines``; the rows spread
over the cores). Decompressing checks each point: its flags, x below q, x^3 + b a square
(the point on the curve); a refused row is a KeyFormatError naming the table and the row.
The GPU decompresses a key's tables as it uploads them with the same algorithm
(``proofflow/prover/device/decompress.cu``), this its CPU twin."""
from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from proofflow.prover.curves.descriptor import GROUPS, Curve
from proofflow.prover.errors import KeyFormatError
from proofflow.prover.native import field_defines, limbs, load

ENCODINGS = ("compressed", "xy")  # a key table's rows: the library's compressed points, or xy-LE
# why a row is refused, by compressed.c's (and decompress.cu's) code
REASONS = {1: "bad flags (the encoding's marker, infinity and sign bits do not make a point)",
           2: "a coordinate of x is not below the field's modulus",
           3: "x is not on the curve (x^3 + b has no square root)"}


def row_bytes(curve: Curve, group: str, encoding: str) -> int:
    """A point's bytes in a table of ``encoding``."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown key table encoding {encoding!r}: one of {', '.join(ENCODINGS)}")
    return curve.compressed_bytes(group) if encoding == "compressed" else curve.xy_bytes(group)


def constants(curve: Curve) -> dict[str, int | tuple[int, int]]:
    """What decompression needs of a curve besides Fq's Montgomery constants (as integers): 1/2
    in Montgomery form, the exponents (q+1)/4 and (q-3)/4, (q-1)/2, each group's b in
    Montgomery form (G2's as (c0, c1)). ValueError for a curve the algorithm does not cover:
    q = 3 mod 4, Fq2 = Fq[u]/(u^2 + 1), the flags in bits q leaves free."""
    q, c = curve.fq.modulus, curve.compression
    top_free = 8 - (q.bit_length() - 8 * (curve.fq.bytes - 1))  # bits above q in its top byte
    if (q % 4 != 3 or curve.fq2_non_residue != -1 or c.flags & ((1 << (8 - top_free)) - 1)
            or q >> (64 * curve.fq.limbs - 64) >= 2**63 - 1):
        raise ValueError(f"compressed {curve.label} points need q = 3 mod 4, u^2 = -1, flags in the "
                         f"{top_free} top bits q leaves free and q's top limb below 2^63 - 1")
    r = curve.fq.montgomery_r
    return {"half_mont": (q + 1) // 2 * r % q, "sqrt_exp": (q + 1) // 4, "sqrt_exp_less_one": (q - 3) // 4,
            "half": (q - 1) // 2, "g1_b": curve.g1_b * r % q,
            "g2_b": (curve.g2_b[0] * r % q, curve.g2_b[1] * r % q)}



def defines(curve: Curve) -> tuple[str, ...]:
    """compressed.c's -D constants for ``curve``."""
    k, n, c = constants(curve), curve.fq.limbs, curve.compression
    return (*field_defines("FQ", curve.fq),
            f"-DFQ_HALF_MONT={limbs(k['half_mont'], n)}", f"-DFQ_SQRT_EXP={limbs(k['sqrt_exp'], n)}",
            f"-DFQ_SQRT_EXP_LESS_ONE={limbs(k['sqrt_exp_less_one'], n)}", f"-DFQ_HALF={limbs(k['half'], n)}",
            f"-DG1_B={limbs(k['g1_b'], n)}", f"-DG2_B={limbs(k['g2_b'][0] | k['g2_b'][1] << (64 * n), 2 * n)}",
            f"-DBIG_ENDIAN_X={int(c.big_endian)}", f"-DFLAG_INFINITY=0x{c.infinity:02x}",
            f"-DFLAG_LARGER=0x{c.larger:02x}", f"-DFLAG_MARKER=0x{c.marker:02x}")


@lru_cache(maxsize=None)
def _lib(curve: Curve) -> ctypes.CDLL:
    lib = load("compressed", defines=defines(curve))
    for fn in (lib.decompress_rows, lib.compress_rows):
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                       ctypes.POINTER(ctypes.c_int32)]
        fn.restype = ctypes.c_int64
    return lib


def _rows(rows: np.ndarray, width: int, what: str) -> np.ndarray:
    if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] != width:
        raise ValueError(f"{what} must be uint8 rows of {width} bytes, got {rows.dtype} {rows.shape}")
    rows = np.ascontiguousarray(rows)
    return rows if rows.ctypes.data % 8 == 0 else rows.copy()  # the C reads 64-bit limbs


def _out(out: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=np.uint8)
    if out.dtype != np.uint8 or out.shape != shape or not out.flags.c_contiguous or out.ctypes.data % 8:
        raise ValueError(f"out must be C-contiguous, 8-byte aligned uint8 of shape {shape}")
    return out


def decompress(curve: Curve, group: str, rows: np.ndarray, out: np.ndarray | None = None,
               origin: str = "a table") -> np.ndarray:
    """Compressed rows of ``group`` as xy-LE rows (into ``out`` if given), every point checked;
    KeyFormatError naming ``origin`` and the first refused row otherwise."""
    return _convert(curve, group, "decompress_rows", _rows(rows, curve.compressed_bytes(group), "compressed points"),
                    _out(out, (len(rows), curve.xy_bytes(group))), f"{origin}: row {{}} is not a compressed "
                    f"{curve.label} {group.upper()} point")


def compress(curve: Curve, group: str, xy: np.ndarray, out: np.ndarray | None = None,
             origin: str = "a table") -> np.ndarray:
    """xy-LE rows of ``group`` compressed (into ``out`` if given); each point must be on the
    curve (KeyFormatError naming ``origin`` and the first row that is not)."""
    return _convert(curve, group, "compress_rows", _rows(xy, curve.xy_bytes(group), "xy-LE points"),
                    _out(out, (len(xy), curve.compressed_bytes(group))),
                    f"{origin}: row {{}} is not a {curve.label} {group.upper()} point")


def _convert(curve: Curve, group: str, fn: str, rows: np.ndarray, out: np.ndarray, refused: str) -> np.ndarray:
    """``rows`` through compressed.c's ``fn`` into ``out``; ``refused`` (with the row) and the
    reason make the KeyFormatError of the first row it refuses."""
    reason = ctypes.c_int32(0)
    bad = getattr(_lib(curve), fn)(1 + GROUPS.index(group), rows.ctypes.data, out.ctypes.data, len(rows),
                                   ctypes.byref(reason))
    if bad >= 0:
        raise KeyFormatError(f"{refused.format(bad)}: {REASONS[reason.value]}")
    return out
