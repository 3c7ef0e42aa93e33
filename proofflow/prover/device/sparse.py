"""Witness MSMs split by scalar value: zeros skipped, the points of ones summed, the rest to
Pippenger (``pippenger.msm``) on a compacted table. Kernels in ``bitsum.cu``.

Circuits made of bit decompositions (circom's Num2Bits and comparators, SHA-256's word
gadgets, the ``bits`` family) have witnesses that are ~99% 0 or 1. Pippenger alone drops
zero digits but still sorts every scalar, and every 1 lands in one bucket (window 0's
bucket 1) that its pieces and merges must then fold. Here each scalar is classified once
(its canonical value, read as msm.cu reads it); the ones' points are added up by a tree
reduction (``POINTS_PER_THREAD`` or more a thread, then ``FOLD`` partial sums a thread per
launch), optionally after batch-affine rounds that pair them up (``ONES_AFFINE_ROUNDS``:
Pippenger's rounds over one bucket, ~6 Fq products an addition against the XYZZ sum's
~10, for ~540 bytes of memory traffic a G1 pair; off until the H200 has timed it:
``bench.gpu --only bench_msm_bits``); the others' indices are gathered and their points
and scalars copied into temporaries for Pippenger, whose window width then follows their
count.

A vector with more than ``DENSE_SHARE`` of other scalars (MiMC's witness, random ones)
goes to Pippenger whole, as before, after one counting pass, over the table's precomputed
copies if it has them (``pippenger.Plan``): compacting it would copy most of the table (1.6
GB of G1 points at 2^24) to save little. The compacted rest takes the plain points. Below that share the
temporaries (a quarter of the table's points and scalars at most, Pippenger's scratch for
them, the classes and indices: ~90 bytes a point for G2) stay under the G2 MSM scratch
that ``proofflow.prover.resources`` counts a proof (~121 bytes a point). Batch-affine rounds over
the ones would add their first round's sums (half the ones' points), which it does not
count while ``ONES_AFFINE_ROUNDS`` is 0.

The steps run on ``pippenger.Executor``s (CuPy on the GPU; numpy and the CPU twin of the
kernels in tests/kernel_twin.py): ``ex`` launches this module's kernels, ``msm_ex``
Pippenger's. This module imports neither CuPy nor a compiler.
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.device import pippenger
from proofflow.prover.device.pippenger import Executor

ZERO, ONE, OTHER = 0, 1, 2  # bitsum.cu's classes
DENSE_SHARE = 0.25  # above this share of other scalars, Pippenger takes the whole vector
POINTS_PER_THREAD = 16  # fewest points a summing thread adds (more once MAX_THREADS are busy)
MAX_THREADS = 1 << 16  # summing threads: about what an H200 holds resident at G1's 128 registers
FOLD = 8  # partial sums a thread adds per folding launch
ONES_AFFINE_ROUNDS = 0  # batch-affine rounds over the ones' points before their tree sum


def classify(ex: Executor, scalars):
    """Each scalar's class (ZERO, ONE or OTHER) as a uint8 vector of ``ex``'s array module."""
    n = scalars.shape[0]
    out = ex.xp.empty(n, dtype=ex.xp.uint8)
    if n:
        ex.launch("bitsum_classify", n, scalars, np.uint64(n), out)
    return out


def point_sum(ex: Executor, group: str, points, idx, msm_ex: Executor | None = None, affine_rounds: int = 0):
    """sum points[idx[i]] (``idx`` uint32 on ``ex``, ascending) as a point of the curve's library; after
    ``affine_rounds`` batch-affine rounds (``pippenger.pair_rounds`` on ``msm_ex``, each
    halving the points) when given."""
    xp, count = ex.xp, int(idx.shape[0])
    if count == 0:
        return ex.curve.point_class(group).identity()
    if affine_rounds and count > 1:
        points, idx, _, _ = pippenger.pair_rounds(msm_ex, group, points, idx, xp.zeros(1, dtype=xp.uint32),
                                                  xp.full(1, count, dtype=xp.uint32), affine_rounds)
        count = int(idx.shape[0])
    width = pippenger.xyzz_limbs(ex.curve, group)
    threads = min(MAX_THREADS, -(-count // POINTS_PER_THREAD))
    parts = xp.empty(threads * width, dtype=xp.uint64)
    ex.launch(f"bitsum_points_{group}", threads, points, idx, np.uint32(count), np.uint32(threads), parts)
    while threads > 1:
        count, threads = threads, -(-threads // FOLD)
        folded = xp.empty(threads * width, dtype=xp.uint64)
        ex.launch(f"bitsum_fold_{group}", threads, parts, np.uint32(count), np.uint32(threads), folded)
        parts = folded
    return pippenger.to_affine(ex.curve, ex.host(parts), group)


def msm(ex: Executor, msm_ex: Executor, group: str, points, scalars, dense_share: float = DENSE_SHARE,
        plan: pippenger.Plan | None = None, ones_rounds: int | None = None, *, balanced: bool):
    """sum scalars[i] * P_i: ``points`` the table on the executors under ``plan`` (default
    the plain one): an (n, ``pippenger.affine_limbs(ex.curve, group)``) u64 array of the n affine
    Montgomery points P_i, or ``pippenger.precompute``'s copies (the points first);
    ``scalars`` an (n, 4) Fr vector, split by value unless more than ``dense_share`` of
    them are neither 0 nor 1; the ones' points summed after ``ones_rounds`` batch-affine
    rounds (default ``ONES_AFFINE_ROUNDS``); ``balanced`` as ``pippenger.msm`` takes it."""
    xp, n = ex.xp, scalars.shape[0]
    plan = plan or pippenger.plain(n)
    if points.shape != (plan.shifts * n, pippenger.affine_limbs(ex.curve, group)):
        raise ValueError(f"{points.shape[0]} points of {points.shape[1:]} limbs but {n} scalars and {plan}")
    if n == 0:
        return ex.curve.point_class(group).identity()
    cls = classify(ex, scalars)
    if int(xp.count_nonzero(cls == OTHER)) > dense_share * n:
        return pippenger.msm(msm_ex, group, points, scalars, plan, balanced=balanced)
    plain = points[:n]
    rounds = ONES_AFFINE_ROUNDS if ones_rounds is None else ones_rounds
    total = point_sum(ex, group, plain, xp.flatnonzero(cls == ONE).astype(xp.uint32), msm_ex, rounds)
    other = xp.flatnonzero(cls == OTHER)
    if other.shape[0]:
        total = total + pippenger.msm(msm_ex, group, plain[other], scalars[other], balanced=balanced)
    return total
