"""The host side of the Pippenger MSM in ``proofflow/prover/device/msm.cu``, for G1 and G2.

A call cuts the scalars into signed c-bit digits, counting-sorts (point, sign) pairs into
buckets, sums each bucket in pieces of at most ``PIECE`` entries (one thread a piece) and
merges the pieces' sums ``GROUP`` at a time, so no thread's work grows with a bucket's
size; it then reduces each window's buckets to sum b * B_b in chunks (``CHUNKS`` or more
a window) and brings back one point per window; the host combines the windows
(sum 2^(c*w) * W_w) with the curve's point library (arkworks) and returns its point.

Precomputed multiples: a proving key's points never change, so a table may be kept with K
copies (``Plan.shifts``), copy k scaled by 2^(c*k) (``precompute``, once per key, on the
executor: c doublings a copy from the one before, one inversion per ``SHIFT_BATCH``
points). Window w then reads copy w mod K and shares the buckets of its group w div K
with up to K - 1 other windows: ceil(256/c) windows collapse to ceil(windows/K) groups,
each reduced once and combined with 2^(c*K*g), so wider digits (fewer windows, fewer
additions) pay off. ``key_plans`` picks c and K for each table of a key from an estimated
cost within a byte budget for the copies; K = 1 is the plain MSM, the same launches as
without precomputation.

Batch-affine rounds (``affine_rounds``, msm_affine.cuh; off by default until measured): before
the accumulation, each round pairs up every bucket's pending points and adds each pair in
affine coordinates, all the round's slope denominators inverted together by one
Montgomery's trick over the grid (leaf threads of ``AFFINE_LEAF`` pairs, levels of
``AFFINE_FAN`` values, the last ``AFFINE_INVERT`` or fewer values inverted one a thread):
~5 products and a square an addition against the mixed XYZZ addition's 8 and 2, for
ceil(log2 m) rounds of a launch sequence each and an inversion's latency. The sums of a
round sit in a fresh buffer (``affine_limbs`` u64 a sum), so at the peak (round 1 reading
round 0's sums) a G1 MSM holds ~80 bytes of scratch a bucket entry, G2 ~150: 17 GB for G1
at 2^24 under (20, 13), which ``proofflow.prover.resources`` does not count, as no prover path
selects the rounds yet. The accumulation then sums what the rounds left, through
identity entries.

The steps run on an ``Executor``: an array module (CuPy on the GPU, numpy for the CPU twin
of the kernels in tests/kernel_twin.py), a way to launch a kernel over n threads, and the
curve its kernels were compiled for (which sizes the points). This module imports neither
CuPy nor a compiler.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Protocol

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16.data_structures import PK_TABLES

PIECE = 128  # most bucket entries one thread adds
GROUP = 8  # most partial sums one thread adds in a merging step
CHUNKS = 2048  # fewest bucket-reduction threads a bucket set gets (at most one a bucket)
REDUCE_THREADS = 16 * CHUNKS  # bucket-reduction threads spread over an MSM's bucket sets
ENTRY_POINTS = 1 << 31  # a bucket entry indexes the table's rows in 31 bits (the top bit: the sign)
SHIFT_BATCH = 32  # points of a copy a thread of ``precompute`` takes, with one inversion
SHIFT_CHUNK = 1 << 22  # points a ``precompute`` launch takes: its XYZZ scratch is 768 MiB for G1
AFFINE_LEAF = 16  # pairs a leaf thread of a batch-affine round takes under one running product
AFFINE_FAN = 32  # values a thread folds at each level of a round's Montgomery's trick
AFFINE_INVERT = 1024  # at most this many values left: each inverted by its own thread
AFFINE_ALL = 32  # ``affine_rounds`` enough to bring any bucket (< 2^32 entries) to one point


class Executor(Protocol):
    xp: object  # numpy or cupy
    curve: Curve  # the curve its kernels were compiled for

    def launch(self, kernel: str, threads: int, *args) -> None:
        """Run ``kernel`` over ``threads`` threads (arrays of ``xp``, numpy scalars)."""

    def host(self, a) -> np.ndarray:
        """An ``xp`` array as a numpy array."""


def coordinate_limbs(curve: Curve, group: str) -> int:
    """u64 limbs of one coordinate of ``group``'s points (Fq, Fq2): 6 and 12 on BLS12-381."""
    return curve.coordinate_bytes(group) // 8


def affine_limbs(curve: Curve, group: str) -> int:
    return 2 * coordinate_limbs(curve, group)


def xyzz_limbs(curve: Curve, group: str) -> int:
    return 4 * coordinate_limbs(curve, group)


def window_bits(n: int) -> int:
    """Digit width: 16 bits for big MSMs, 8 or 4 for small ones. Only widths dividing 256
    keep the top window's buckets as full as the others: with c = 15, say, a 256/c-th
    window holds nothing but carries, all in bucket 1, and one thread adds half the points
    serially (measured: 22 s instead of 83 ms at 2^20 on the H200)."""
    return 16 if n >= 1 << 16 else 8 if n >= 1 << 8 else 4


@dataclass(frozen=True)
class Plan:
    """How an MSM cuts its scalars and reads its table: signed ``c``-bit digits in
    ``windows`` windows, the table held as ``shifts`` copies (1: the points alone), window
    w reading copy w mod shifts and summed into bucket set w div shifts of ``groups``."""
    c: int
    shifts: int = 1

    def __post_init__(self):  # c <= 24: a bucket set's slots in 2^23 + 1 counters
        if not 2 <= self.c <= 24 or not 1 <= self.shifts <= self.windows:
            raise ValueError(f"no MSM plan with c = {self.c} and {self.shifts} shifts")

    @property
    def windows(self) -> int:
        return -(-256 // self.c)

    @property
    def groups(self) -> int:
        return -(-self.windows // self.shifts)


def plain(n: int) -> Plan:
    """The plan without precomputed copies."""
    return Plan(window_bits(n))


# ---- choosing a key's plans ----

@dataclass(frozen=True)
class CostModel:
    """An MSM's estimated wall time, ``unit_ns`` a digit (its sort and mixed addition), each
    digit costing 1 + ``divergence`` / sqrt(m) with m digits a bucket on average (a warp's
    threads finish together only when their spans are about equally long), a bucket's
    reduction ``bucket_cost`` digits, and ``fixed_ms`` a call."""
    unit_ns: float
    divergence: float
    bucket_cost: float
    fixed_ms: float


# bench.fit_msm_cost's fit (call + spans kernels) to the H200's plan sweep in
# bench/results/msm-phases-h200.jsonl: G1 at 2^22 and 2^24, 15 plans within 5.2%; G2 at
# 2^22 only, 6 plans within 1.9% (its split between digits and buckets is the less certain).
# Measured on BLS12-381: another curve's narrower Fq scales every term about alike, which
# leaves the plans' ranking, what the model is for, about as it is.
COST = {"g1": CostModel(unit_ns=0.449, divergence=0.0, bucket_cost=14.2, fixed_ms=3.3),
        "g2": CostModel(unit_ns=1.489, divergence=0.75, bucket_cost=0.54, fixed_ms=4.3)}
MIN_GAIN = 0.005  # each copy a step adds must save this much of the table's plain MSM
C_MAX = {"g1": 22, "g2": 20}  # the widest digits of a precomputed plan: the widest the sweep timed


def cost(plan: Plan, n: int, group: str = "g1") -> float:
    """Estimated ms of an MSM of n points of ``group`` under ``plan``."""
    m = COST[group]
    digits, buckets = n * plan.windows, plan.groups << (plan.c - 1)
    spread = 1 + m.divergence / math.sqrt(max(digits, 1) / buckets)
    return m.unit_ns * 1e-6 * (digits * spread + m.bucket_cost * buckets) + m.fixed_ms


@lru_cache(maxsize=256)
def _candidates(n: int, group: str) -> tuple[Plan, ...]:
    """Every precomputed plan for n points of ``group`` whose entries fit 31 bits."""
    return tuple(Plan(c, k) for c in range(4, C_MAX[group] + 1) for k in range(2, Plan(c).windows + 1)
                 if k * n <= ENTRY_POINTS)


@lru_cache(maxsize=64)
def key_plans(curve: Curve, tables: tuple[tuple[str, int], ...], spare: int) -> tuple[Plan, ...]:
    """The plan of each table of a key over ``curve`` (a tuple of (group, points)) when the key's copies may
    take ``spare`` bytes beyond its tables. Greedily, a step at a time, one table moves to
    a plan of more copies: the step that saves the most estimated time (``cost``) per byte
    it adds, among those that fit the bytes left and save ``MIN_GAIN`` of their table's
    plain cost for each copy they add. ``spare`` = 0: every table plain."""
    plans = [plain(n) for _, n in tables]
    left = spare
    while True:
        best = None  # (time saved a byte, table, plan, bytes)
        for t, (group, n) in enumerate(tables):
            now, floor = plans[t], MIN_GAIN * cost(plain(n), n, group)
            for cand in _candidates(n, group) if n else ():
                added, saved = cand.shifts - now.shifts, cost(now, n, group) - cost(cand, n, group)
                nbytes = added * n * curve.xy_bytes(group)
                if added > 0 and nbytes <= left and saved >= floor * added:
                    rate = saved / nbytes
                    if best is None or rate > best[0]:
                        best = (rate, t, cand, nbytes)
        if best is None:
            return tuple(plans)
        _, t, plans[t], nbytes = best
        left -= nbytes


def copies_budget(curve: Curve, tables: tuple[tuple[str, int], ...], key_budget: int | None,
                  precompute: int | None) -> int:
    """Bytes the copies of a key's ``tables`` ((group, points) each) may take on a device
    that keeps keys within ``key_budget`` bytes (PROOFFLOW_KEY_BUDGET's; None: unknown):
    ``precompute`` bytes (PROOFFLOW_MSM_PRECOMPUTE), or for None (``auto``) half the budget
    less the tables themselves, so that a second key as large, copies and all, stays
    resident beside it (keys of several runs at once, #19); none when the budget is unknown."""
    if precompute is not None:
        return precompute
    if key_budget is None:
        return 0
    return max(0, key_budget // 2 - sum(n * curve.xy_bytes(group) for group, n in tables))


def proving_key_plans(pk, key_budget: int | None, precompute: int | None) -> dict[str, Plan]:
    """``key_plans`` for the tables of a proving key, by name, within ``copies_budget``."""
    tables = tuple((group, len(getattr(pk, name))) for name, group in PK_TABLES.items())
    budget = copies_budget(pk.curve, tables, key_budget, precompute)
    return dict(zip(PK_TABLES, key_plans(pk.curve, tables, budget)))


def copy_bytes(curve: Curve, tables, plans) -> int:
    """Device bytes the precomputed copies of ``plans`` add to ``tables`` ((group, points) each)."""
    return sum((p.shifts - 1) * n * curve.xy_bytes(group) for (group, n), p in zip(tables, plans))


def _coordinate(curve: Curve, limbs: np.ndarray, group: str):
    """An Fq (int) or Fq2 ((c0, c1) ints) coordinate from its little-endian u64 limbs."""
    w = curve.fq.limbs
    ints = [int.from_bytes(limbs[k:k + w].tobytes(), "little") for k in range(0, len(limbs), w)]
    return ints[0] if group == "g1" else tuple(ints)


def _div(curve: Curve, a, b):
    """a / b in Fq or Fq2 = Fq[u]/(u^2 - β): b^-1 = conj(b) / (b0^2 - β b1^2)."""
    q, beta = curve.fq.modulus, curve.fq2_non_residue
    if isinstance(a, int):
        return a * pow(b, -1, q) % q
    (a0, a1), (b0, b1) = a, b
    t = pow(b0 * b0 - beta * b1 * b1, -1, q)
    i0, i1 = b0 * t % q, -b1 * t % q
    return (a0 * i0 + beta * a1 * i1) % q, (a0 * i1 + a1 * i0) % q


def _is_zero(a) -> bool:
    return a == 0 if isinstance(a, int) else a == (0, 0)


def _encode(curve: Curve, a) -> bytes:
    parts = (a,) if isinstance(a, int) else a
    return b"".join(v.to_bytes(curve.fq.bytes, "little") for v in parts)


def to_affine(curve: Curve, limbs: np.ndarray, group: str):
    """One XYZZ point (``xyzz_limbs(curve, group)`` u64 limbs, Montgomery) as a point of the
    curve's library. The Montgomery factor R lies in Fq, so it cancels in X/ZZ and Y/ZZZ: no
    conversion needed."""
    w = coordinate_limbs(curve, group)
    x, y, zz, zzz = (_coordinate(curve, limbs[k * w:(k + 1) * w], group) for k in range(4))
    cls = curve.point_class(group)
    if _is_zero(zz):
        return cls.identity()
    return cls.from_xy_bytes_unchecked_le(_encode(curve, _div(curve, x, zz)) + _encode(curve, _div(curve, y, zzz)))


def _split(xp, lens, size: int):
    """Cut segments of ``lens`` items into pieces of at most ``size``: each piece's segment,
    each segment's first piece and piece count, and the number of pieces."""
    counts = (lens + (size - 1)) // size
    last = xp.cumsum(counts, dtype=xp.uint32)
    total = int(last[-1])
    seg = xp.searchsorted(last, xp.arange(total, dtype=xp.uint32), side="right").astype(xp.uint32)
    return seg, (last - counts).astype(xp.uint32), counts.astype(xp.uint32), total


def _spans(xp, offsets, counts, size: int):
    """Cut sorted entries (segment s: ``counts[s]`` of them from ``offsets[s]``, the segments
    back to back) into spans of ``size``, one a thread whatever segments they cross: each
    span's first segment, each segment's first slot and slot count (the spans it meets),
    the numbers of spans, entries and slots."""
    ends = offsets.astype(xp.uint64) + counts
    met = xp.where(counts > 0, (xp.maximum(ends, 1) - 1) // size - offsets // size + 1, 0)
    last = xp.cumsum(met, dtype=xp.uint64)
    total, slots = (int(v) for v in xp.stack((ends[-1], last[-1])).tolist())  # one read back from the device
    nspans = -(-total // size)
    span_seg = xp.searchsorted(ends, xp.arange(nspans, dtype=xp.uint64) * size, side="right").astype(xp.uint32)
    return span_seg, (last - met).astype(xp.uint32), met.astype(xp.uint32), nspans, total, slots


def _merge(ex: Executor, group: str, parts, first, lens):
    """Sum each segment (``lens[s]`` XYZZ points from ``parts[first[s]]``) down to at most
    one point, ``GROUP`` points a thread per launch."""
    xp = ex.xp
    while int(lens.max()) > 1:
        seg, gfirst, glens, total = _split(xp, lens, GROUP)
        out = xp.empty(total * xyzz_limbs(ex.curve, group), dtype=xp.uint64)
        ex.launch(f"msm_combine_{group}", total,
                  parts, first, lens, seg, gfirst, np.uint32(total), np.uint32(GROUP), out)
        parts, first, lens = out, gfirst, glens
    return parts, first, lens


def _invert(ex: Executor, group: str, vals, count: int) -> None:
    """Replace the ``count`` non-zero coordinate-field elements ``vals`` by their inverses:
    Montgomery's trick a level at a time (``AFFINE_FAN`` values a thread), one inversion
    for each value of the top level."""
    if count <= AFFINE_INVERT:
        ex.launch(f"msm_invert_{group}", count, vals, np.uint64(count))
        return
    xp, w, threads = ex.xp, coordinate_limbs(ex.curve, group), -(-count // AFFINE_FAN)
    pre, tot = xp.empty(count * w, dtype=xp.uint64), xp.empty(threads * w, dtype=xp.uint64)
    ex.launch(f"msm_invert_up_{group}", threads, vals, pre, np.uint64(count), np.uint64(threads), tot)
    _invert(ex, group, tot, threads)
    ex.launch(f"msm_invert_down_{group}", threads, vals, pre, np.uint64(count), np.uint64(threads), tot)


def _affine_round(ex: Executor, group: str, points, entries, start, lens):
    """One batch-affine round: bucket s's ``lens[s]`` pending points (the rows of ``points``
    that ``entries[start[s]:]`` names, sign bits as msm_scatter writes them) paired up and
    each pair added in affine coordinates, the slopes' inverses from one Montgomery's trick
    over the round. Returns the sums (a lone point carried over), one row each, with each
    bucket's first row and count among them."""
    xp = ex.xp
    seg, first, counts, items = _split(xp, lens, 2)
    out = xp.empty((items, affine_limbs(ex.curve, group)), dtype=xp.uint64)
    threads = -(-items // AFFINE_LEAF)
    tot = xp.empty(threads * coordinate_limbs(ex.curve, group), dtype=xp.uint64)
    args = (points, entries, start, lens, seg, first, np.uint32(items), np.uint32(threads), out, tot)
    ex.launch(f"msm_affine_up_{group}", threads, *args)
    _invert(ex, group, tot, threads)
    ex.launch(f"msm_affine_down_{group}", threads, *args)
    return out, first, counts


def pair_rounds(ex: Executor, group: str, points, entries, offsets, counts, rounds: int,
                mark: Callable[[str | None], None] = lambda name: None):
    """Up to ``rounds`` batch-affine rounds over the sorted buckets, stopping once every
    bucket has at most one point. Returns what the accumulation then sums: the points,
    entries (the identity over the last round's sums), each bucket's first entry and count.
    (The witness split's sum of the ones' points runs them over a single bucket.)"""
    for r in range(rounds):
        if int(counts.max()) <= 1:
            break
        mark(f"affine {r}")
        points, offsets, counts = _affine_round(ex, group, points, entries, offsets, counts)
        entries = ex.xp.arange(points.shape[0], dtype=ex.xp.uint32)
    return points, entries, offsets, counts


def accumulate(ex: Executor, group: str, points, entries, offsets, counts, piece: int, balanced: bool):
    """Each bucket's entries (``counts[s]`` from ``entries[offsets[s]]``, rows of ``points``)
    summed into partial sums of at most ``piece`` entries: XYZZ sums, each bucket's first
    and count. ``balanced``: spans of ``piece`` entries across buckets (``_spans``), else
    each bucket in pieces of near-equal length."""
    xp, width = ex.xp, xyzz_limbs(ex.curve, group)
    if balanced:
        seg, first, lens, nspans, entered, slots = _spans(xp, offsets, counts, piece)
        parts = xp.empty(max(slots, 1) * width, dtype=xp.uint64)
        if nspans:
            ex.launch(f"msm_accumulate_spans_{group}", nspans, points, entries, offsets, counts, seg, first,
                      np.uint32(nspans), np.uint32(piece), np.uint32(entered), parts)
        return parts, first, lens
    seg, first, lens, npieces = _split(xp, counts, piece)
    parts = xp.empty(npieces * width, dtype=xp.uint64)
    ex.launch(f"msm_accumulate_{group}", npieces,
              points, entries, offsets, counts, seg, first, np.uint32(npieces), np.uint32(piece), parts)
    return parts, first, lens


def precompute(ex: Executor, group: str, points, plan: Plan, chunk: int = SHIFT_CHUNK):
    """The table ``msm`` takes under ``plan`` for the n points ``points`` (affine Montgomery,
    (n, ``affine_limbs(ex.curve, group)``) on the executor): ``plan.shifts`` copies, copy k =
    2^(c*k) * points in rows k*n .. k*n + n - 1, each made from the one before."""
    xp, n = ex.xp, points.shape[0]
    out = xp.empty((plan.shifts * n, affine_limbs(ex.curve, group)), dtype=xp.uint64)
    out[:n] = points
    tmp = xp.empty(min(n, chunk) * xyzz_limbs(ex.curve, group), dtype=xp.uint64)
    for k in range(1, plan.shifts):
        for lo in range(0, n, chunk):
            m = min(chunk, n - lo)
            src, dst = out[(k - 1) * n + lo:][:m], out[k * n + lo:][:m]
            ex.launch(f"msm_shift_{group}", -(-m // SHIFT_BATCH),
                      src, dst, tmp, np.uint64(m), np.int32(plan.c), np.uint32(SHIFT_BATCH))
    return out


def msm(ex: Executor, group: str, points, scalars, plan: Plan | None = None, piece: int = PIECE,
        mark: Callable[[str | None], None] = lambda name: None, affine_rounds: int = 0, *,
        balanced: bool):
    """sum scalars[i] * P_i: ``points`` the table on the executor under ``plan`` (default
    ``plain(n)``): the n affine Montgomery points P_i, ``affine_limbs(ex.curve, group)`` u64 limbs
    each, or ``precompute``'s copies of them; ``scalars`` an (n, 4) Fr vector.
    ``affine_rounds`` batch-affine rounds (``AFFINE_ALL``: until each bucket is one point)
    halve the buckets before the XYZZ accumulation sums what is left; 0, the default, runs
    none. ``balanced``: the accumulation in spans of ``piece`` entries that cross buckets, the
    same length for every thread (``msm_accumulate_spans``), instead of each bucket cut into
    pieces of near-equal length (PROOFFLOW_MSM_BALANCED). ``mark(step)`` is called as each
    step starts (``None`` at the end), for timing."""
    xp, n = ex.xp, scalars.shape[0]
    plan = plan or plain(n)
    if points.shape[0] != plan.shifts * n or plan.shifts * n > ENTRY_POINTS:
        raise ValueError(f"a table of {points.shape[0]} rows for {n} scalars and {plan}")
    c, nsets, nb = plan.c, plan.groups, 1 << (plan.c - 1)
    chunks = min(nb, max(CHUNKS, REDUCE_THREADS // nsets))  # a few bucket sets still fill the device
    curve = ex.curve
    width = xyzz_limbs(curve, group)
    args = (scalars, np.uint64(n), np.int32(c), np.int32(plan.windows), np.int32(plan.shifts))
    mark("sort")

    counts = xp.zeros(nsets * (nb + 1), dtype=xp.uint32)
    ex.launch("msm_count", n, *args, counts)
    offsets = xp.cumsum(counts, dtype=xp.uint64)
    total = int(offsets[-1])
    offsets = (offsets - counts).astype(xp.uint32)  # exclusive scan
    entries = xp.empty(max(total, 1), dtype=xp.uint32)
    ex.launch("msm_scatter", n, *args, offsets.copy(), entries)

    points, entries, offsets, counts = pair_rounds(ex, group, points, entries, offsets, counts,
                                                   affine_rounds, mark)
    mark("accumulate")
    parts, first, lens = accumulate(ex, group, points, entries, offsets, counts, piece, balanced)
    mark("merge")
    parts, first, lens = _merge(ex, group, parts, first, lens)
    mark("reduce")
    partial = xp.empty(nsets * chunks * width, dtype=xp.uint64)
    ex.launch(f"msm_reduce_{group}", nsets * chunks,
              parts, first, lens, np.int32(nb), np.int32(nsets), np.int32(chunks), partial)
    sets, _, _ = _merge(ex, group, partial, xp.arange(0, nsets * chunks, chunks, dtype=xp.uint32),
                        xp.full(nsets, chunks, dtype=xp.uint32))

    mark("combine")
    host = ex.host(sets).reshape(nsets, width)
    cls = curve.point_class(group)
    result = cls.multiexp_unchecked([to_affine(curve, row, group) for row in host],
                                    [curve.scalar(1 << (c * plan.shifts * g)) for g in range(nsets)])
    mark(None)
    return result


def scratch_bytes(curve: Curve, group: str, n: int, plan: Plan | None = None, piece: int = PIECE) -> int:
    """At most the bytes ``msm`` allocates at once for n scalars under ``plan`` (default
    ``plain(n)``), besides its table and scalars; counted from its arrays at their peak,
    the merges of the pieces' sums: the digits' entries (4 bytes a digit, every digit
    counted as non-zero), the pieces' XYZZ sums and two levels of their merges (a bucket
    adds at most one piece, and a merge at most one sum, beyond its share; 24 bytes of
    indices each), and 32 bytes a bucket slot of counters and offsets. For
    ``proofflow.prover.resources``: MSMs that run at once (``overlap``) need the sum of theirs."""
    plan = plan or plain(n)
    slots = plan.groups * ((1 << (plan.c - 1)) + 1)
    digits = n * plan.windows
    pieces = -(-digits // piece) + slots
    merged = -(-pieces // GROUP) + slots
    merged2 = -(-merged // GROUP) + slots
    return 4 * digits + (8 * xyzz_limbs(curve, group) + 24) * (pieces + merged + merged2) + 32 * slots
