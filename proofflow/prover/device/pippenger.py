"""The host side of the Pippenger MSM in ``proofflow/prover/device/msm.cu``, for G1 and G2.

A call cuts the scalars into signed c-bit digits, counting-sorts (point, sign) pairs into
buckets, sums each bucket in pieces of at most ``PIECE`` entries (one thread a piece) and
merges the pieces' sums ``GROUP`` at a time, so no thread's work grows with a bucket's
size; it then reduces each window's buckets to sum b * B_b in ``CHUNKS`` chunks a window
and brings back one point per window; the host combines the windows (sum 2^(c*w) * W_w)
with arkworks and returns an arkworks point.

The steps run on an ``Executor``: an array module (CuPy on the GPU, numpy for the CPU twin
of the kernels in tests/kernel_twin.py) and a way to launch a kernel over n threads. This
module imports neither CuPy nor a compiler.
"""
from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from proofflow.prover import curve

Q = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
FQ_LIMBS = 6  # u64 limbs of an Fq element
COORD_LIMBS = {"g1": FQ_LIMBS, "g2": 2 * FQ_LIMBS}  # limbs of one coordinate (Fq, Fq2)
PIECE = 128  # most bucket entries one thread adds
GROUP = 8  # most partial sums one thread adds in a merging step
CHUNKS = 2048  # bucket-reduction threads per window (at most one per bucket)


class Executor(Protocol):
    xp: object  # numpy or cupy

    def launch(self, kernel: str, threads: int, *args) -> None:
        """Run ``kernel`` over ``threads`` threads (arrays of ``xp``, numpy scalars)."""

    def host(self, a) -> np.ndarray:
        """An ``xp`` array as a numpy array."""


def affine_limbs(group: str) -> int:
    return 2 * COORD_LIMBS[group]


def xyzz_limbs(group: str) -> int:
    return 4 * COORD_LIMBS[group]


def window_bits(n: int) -> int:
    """Digit width: 16 bits for big MSMs, 8 or 4 for small ones. Only widths dividing 256
    keep the top window's buckets as full as the others: with c = 15, say, a 256/c-th
    window holds nothing but carries, all in bucket 1, and one thread adds half the points
    serially (measured: 22 s instead of 83 ms at 2^20 on the H200)."""
    return 16 if n >= 1 << 16 else 8 if n >= 1 << 8 else 4


def _coordinate(limbs: np.ndarray, group: str):
    """An Fq (int) or Fq2 ((c0, c1) ints) coordinate from its little-endian u64 limbs."""
    ints = [int.from_bytes(limbs[k:k + FQ_LIMBS].tobytes(), "little") for k in range(0, len(limbs), FQ_LIMBS)]
    return ints[0] if group == "g1" else tuple(ints)


def _div(a, b):
    """a / b in Fq or Fq2 (u^2 = -1): b^-1 = conj(b) / (b0^2 + b1^2)."""
    if isinstance(a, int):
        return a * pow(b, -1, Q) % Q
    (a0, a1), (b0, b1) = a, b
    t = pow(b0 * b0 + b1 * b1, -1, Q)
    i0, i1 = b0 * t % Q, -b1 * t % Q
    return (a0 * i0 - a1 * i1) % Q, (a0 * i1 + a1 * i0) % Q


def _is_zero(a) -> bool:
    return a == 0 if isinstance(a, int) else a == (0, 0)


def _encode(a) -> bytes:
    parts = (a,) if isinstance(a, int) else a
    return b"".join(v.to_bytes(48, "little") for v in parts)


def to_affine(limbs: np.ndarray, group: str):
    """One XYZZ point (``xyzz_limbs(group)`` u64 limbs, Montgomery) as an arkworks point. The
    Montgomery factor R lies in Fq, so it cancels in X/ZZ and Y/ZZZ: no conversion needed."""
    w = COORD_LIMBS[group]
    x, y, zz, zzz = (_coordinate(limbs[k * w:(k + 1) * w], group) for k in range(4))
    cls = curve.point_class(group)
    if _is_zero(zz):
        return cls.identity()
    return cls.from_xy_bytes_unchecked_le(_encode(_div(x, zz)) + _encode(_div(y, zzz)))


def _split(xp, lens, size: int):
    """Cut segments of ``lens`` items into pieces of at most ``size``: each piece's segment,
    each segment's first piece and piece count, and the number of pieces."""
    counts = (lens + (size - 1)) // size
    last = xp.cumsum(counts, dtype=xp.uint32)
    total = int(last[-1])
    seg = xp.searchsorted(last, xp.arange(total, dtype=xp.uint32), side="right").astype(xp.uint32)
    return seg, (last - counts).astype(xp.uint32), counts.astype(xp.uint32), total


def _merge(ex: Executor, group: str, parts, first, lens):
    """Sum each segment (``lens[s]`` XYZZ points from ``parts[first[s]]``) down to at most
    one point, ``GROUP`` points a thread per launch."""
    xp = ex.xp
    while int(lens.max()) > 1:
        seg, gfirst, glens, total = _split(xp, lens, GROUP)
        out = xp.empty(total * xyzz_limbs(group), dtype=xp.uint64)
        ex.launch(f"msm_combine_{group}", total,
                  parts, first, lens, seg, gfirst, np.uint32(total), np.uint32(GROUP), out)
        parts, first, lens = out, gfirst, glens
    return parts, first, lens


def msm(ex: Executor, group: str, points, scalars, c: int | None = None, piece: int = PIECE,
        mark: Callable[[str | None], None] = lambda name: None):
    """sum scalars[i] * points[i]: ``points`` the table on the executor (n affine Montgomery
    points, ``affine_limbs(group)`` u64 limbs each), ``scalars`` an (n, 4) Fr vector.
    ``mark(step)`` is called as each step starts (``None`` at the end), for timing."""
    xp, n = ex.xp, scalars.shape[0]
    c = c or window_bits(n)
    nwin, nb = -(-256 // c), 1 << (c - 1)
    chunks = min(nb, CHUNKS)
    width = xyzz_limbs(group)
    args = (scalars, np.uint64(n), np.int32(c), np.int32(nwin))
    mark("sort")

    counts = xp.zeros(nwin * (nb + 1), dtype=xp.uint32)
    ex.launch("msm_count", n, *args, counts)
    offsets = xp.cumsum(counts, dtype=xp.uint64)
    total = int(offsets[-1])
    offsets = (offsets - counts).astype(xp.uint32)  # exclusive scan
    entries = xp.empty(max(total, 1), dtype=xp.uint32)
    ex.launch("msm_scatter", n, *args, offsets.copy(), entries)

    mark("accumulate")
    seg, first, lens, npieces = _split(xp, counts, piece)
    parts = xp.empty(npieces * width, dtype=xp.uint64)
    ex.launch(f"msm_accumulate_{group}", npieces,
              points, entries, offsets, counts, seg, first, np.uint32(npieces), np.uint32(piece), parts)
    mark("merge")
    parts, first, lens = _merge(ex, group, parts, first, lens)
    mark("reduce")
    partial = xp.empty(nwin * chunks * width, dtype=xp.uint64)
    ex.launch(f"msm_reduce_{group}", nwin * chunks,
              parts, first, lens, np.int32(nb), np.int32(nwin), np.int32(chunks), partial)
    windows, _, _ = _merge(ex, group, partial, xp.arange(0, nwin * chunks, chunks, dtype=xp.uint32),
                           xp.full(nwin, chunks, dtype=xp.uint32))

    mark("combine")
    host = ex.host(windows).reshape(nwin, width)
    cls = curve.point_class(group)
    result = cls.multiexp_unchecked([to_affine(row, group) for row in host],
                                    [curve.scalar(1 << (c * w)) for w in range(nwin)])
    mark(None)
    return result
