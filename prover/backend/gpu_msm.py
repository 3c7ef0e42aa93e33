"""G1 MSM on the GPU (Pippenger, kernels in ``prover/kernels/msm.cu``).

The point table is uploaded once per device and kept resident (``PointTable.device_cache``),
converted to Montgomery form there. A call cuts the scalars into signed c-bit digits,
counting-sorts (point, sign) pairs into buckets, sums each bucket in pieces of at most
``PIECE`` entries (one thread a piece) and merges the pieces' sums ``GROUP`` at a time, so
no thread's work grows with a bucket's size; it then reduces each window's buckets to
sum b * B_b and brings back one point per window; the host combines the windows
(sum 2^(c*w) * W_w) with arkworks and returns an arkworks G1Point.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from prover import curve, kernels

Q = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
_THREADS = 128
_FQ_LIMBS = 6
PIECE = 128  # most bucket entries one thread adds
GROUP = 8  # most partial sums one thread adds in a merging step
CHUNKS = 2048  # bucket-reduction threads per window (at most one per bucket)


def _kernel(name: str):
    return kernels.load("mul32", "msm.cu").get_function(name)


def _blocks(n: int) -> int:
    return max(1, -(-n // _THREADS))


def window_bits(n: int) -> int:
    """Digit width: 16 bits for big MSMs, 8 or 4 for small ones. Only widths dividing 256
    keep the top window's buckets as full as the others: with c = 15, say, a 256/c-th
    window holds nothing but carries, all in bucket 1, and one thread adds half the points
    serially (measured: 22 s instead of 83 ms at 2^20 on the H200)."""
    return 16 if n >= 1 << 16 else 8 if n >= 1 << 8 else 4


def device_points(table: curve.PointTable) -> cp.ndarray:
    """The table's points on the current device: (n, 12) uint64, affine Montgomery."""
    key = ("g1-affine-mont", cp.cuda.runtime.getDevice())
    if key not in table.device_cache:
        if table.group != "g1":
            raise ValueError("the GPU MSM takes G1 tables only")
        pts = cp.asarray(np.ascontiguousarray(table.xy).view(np.uint64).reshape(-1, 2 * _FQ_LIMBS))
        n = pts.shape[0]
        _kernel("g1_to_montgomery")((_blocks(n),), (_THREADS,), (pts, np.uint64(n)))
        table.device_cache[key] = pts
    return table.device_cache[key]


def _to_affine(limbs: np.ndarray):
    """One XYZZ point (24 uint64 limbs, Montgomery) to an arkworks point. The Montgomery
    factors cancel in X/ZZ and Y/ZZZ, so no conversion is needed."""
    v = [int.from_bytes(limbs[6 * k:6 * k + 6].tobytes(), "little") for k in range(4)]
    x, y, zz, zzz = v
    if zz == 0:
        return curve.point_class("g1").identity()
    ax, ay = x * pow(zz, -1, Q) % Q, y * pow(zzz, -1, Q) % Q
    return curve.point_class("g1").from_xy_bytes_unchecked_le(ax.to_bytes(48, "little") + ay.to_bytes(48, "little"))


class _Spans:
    """CUDA-event timing of the MSM's steps, into a dict of milliseconds (when asked for)."""

    def __init__(self, out: dict | None):
        self.out, self.last, self.name = out, None, None

    def mark(self, name: str | None) -> None:
        if self.out is None:
            return
        ev = cp.cuda.Event()
        ev.record()
        if self.last is not None:
            ev.synchronize()
            self.out[self.name] = cp.cuda.get_elapsed_time(self.last, ev)
        self.last, self.name = ev, name


def _split(lens: cp.ndarray, size: int):
    """Cut segments of ``lens`` items into pieces of at most ``size``: each piece's segment,
    each segment's first piece and piece count, and the number of pieces."""
    counts = (lens + (size - 1)) // size
    last = cp.cumsum(counts, dtype=cp.uint32)
    total = int(last[-1])
    seg = cp.searchsorted(last, cp.arange(total, dtype=cp.uint32), side="right").astype(cp.uint32)
    return seg, (last - counts).astype(cp.uint32), counts.astype(cp.uint32), total


def _merge(parts: cp.ndarray, first: cp.ndarray, lens: cp.ndarray):
    """Sum each segment (``lens[s]`` XYZZ points from ``parts[first[s]]``) down to at most
    one point, ``GROUP`` points a thread per launch."""
    while int(lens.max()) > 1:
        seg, gfirst, glens, total = _split(lens, GROUP)
        out = cp.empty(total * 24, dtype=cp.uint64)
        _kernel("msm_combine")((_blocks(total),), (_THREADS,),
                               (parts, first, lens, seg, gfirst, np.uint32(total), np.uint32(GROUP), out))
        parts, first, lens = out, gfirst, glens
    return parts, first, lens


def msm_g1(table: curve.PointTable, scalars, c: int | None = None, spans: dict | None = None,
           piece: int = PIECE):
    """sum scalars[i] * table[i]; ``scalars`` an Fr vector on the host or the device.
    ``spans``, if given, receives each step's device time in ms (it synchronizes)."""
    n = len(table)
    if scalars.shape != (n, 4):
        raise ValueError(f"{n} points but scalars of shape {scalars.shape}")
    if n == 0:
        return curve.point_class("g1").identity()
    pts = device_points(table)
    s = cp.ascontiguousarray(cp.asarray(scalars))
    c = c or window_bits(n)
    nwin, nb = -(-256 // c), 1 << (c - 1)
    chunks = min(nb, CHUNKS)
    args = (s, np.uint64(n), np.int32(c), np.int32(nwin))
    t = _Spans(spans)
    t.mark("sort")

    counts = cp.zeros(nwin * (nb + 1), dtype=cp.uint32)
    _kernel("msm_count")((_blocks(n),), (_THREADS,), args + (counts,))
    offsets = cp.cumsum(counts, dtype=cp.uint64)
    total = int(offsets[-1])
    offsets = (offsets - counts).astype(cp.uint32)  # exclusive scan
    entries = cp.empty(max(total, 1), dtype=cp.uint32)
    _kernel("msm_scatter")((_blocks(n),), (_THREADS,), args + (offsets.copy(), entries))

    t.mark("accumulate")
    seg, first, lens, npieces = _split(counts, piece)
    parts = cp.empty(npieces * 24, dtype=cp.uint64)
    _kernel("msm_accumulate")((_blocks(npieces),), (_THREADS,),
                              (pts, entries, offsets, counts, seg, first, np.uint32(npieces), np.uint32(piece), parts))
    t.mark("merge")
    parts, first, lens = _merge(parts, first, lens)
    t.mark("reduce")
    partial = cp.empty(nwin * chunks * 24, dtype=cp.uint64)
    _kernel("msm_reduce")((_blocks(nwin * chunks),), (_THREADS,),
                          (parts, first, lens, np.int32(nb), np.int32(nwin), np.int32(chunks), partial))
    windows, _, _ = _merge(partial, cp.arange(0, nwin * chunks, chunks, dtype=cp.uint32),
                           cp.full(nwin, chunks, dtype=cp.uint32))

    t.mark("combine")
    host = cp.asnumpy(windows).reshape(nwin, 24)
    points = [_to_affine(row) for row in host]
    result = curve.point_class("g1").multiexp_unchecked(points, [curve.scalar(1 << (c * w)) for w in range(nwin)])
    t.mark(None)
    return result
