"""The CPU backend's MSMs on several cores: a proof's independent MSMs at once, and large
ones split into row ranges of equal work whose sums are added at the end.

Threads, not processes: arkworks' multiexp (``py_arkworks_bls12381``) runs on one core but
releases the GIL while it computes (another thread, sleeping 1 ms at a time, wakes on time
throughout a 2^14 multiexp), and so does BN254's C one (``native/curve.c``, through ctypes),
so threads of one process run multiexps in parallel, over the point objects the key already
decoded (BN254's: over the table's rows), with nothing pickled. What holds the GIL is small:
building the Scalars and the points' list (a few percent of a multiexp), and the witness's
ones, added one by one (``points.msm_split``, a twentieth of a multiexp's cost a point).

The plan balances by cost, not by rows: each MSM is split into as many pieces as it has
shares of the total work (a share: the total over the threads), so with few threads the
MSMs mostly stay whole (a smaller multiexp costs more a point, Pippenger's buckets being
amortized over fewer points), and with many each is cut across them. The pieces are queued
largest first, so the threads finish close together.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from proofflow.prover import points
from proofflow.prover.backend.base import MsmJob
from proofflow.prover.field.fr import Fr

# Measured on this project's CI host (arkworks 0.5 bindings, 2^12..2^16 points): a G2
# multiexp costs 3.1-3.2x a G1 one a point; adding one point (a witness's 1) 0.05x.
GROUP_COST = {"g1": 1.0, "g2": 3.2}
ONE_COST = 0.05
MIN_ROWS = 4096  # no piece smaller: below it a multiexp costs >30% more a point than at 2^16


@dataclass(frozen=True)
class Piece:
    """Rows lo..hi of MSM ``job``, of estimated ``cost``."""
    job: int
    lo: int
    hi: int
    cost: float


def row_costs(job: MsmJob) -> np.ndarray:
    """Each row's share of ``job``'s work: 1 a scalar (a witness's: 0 for a 0, ``ONE_COST``
    for a 1), times its group's cost."""
    values = np.asarray(job.scalars)
    if job.witness:
        one = Fr.of(job.table.curve).one()
        costs = np.where((values == one).all(axis=1), ONE_COST, values.any(axis=1).astype(np.float64))
    else:
        costs = np.ones(values.shape[0])
    return costs * GROUP_COST[job.table.group]


def plan(jobs: list[MsmJob], threads: int) -> list[Piece]:
    """The pieces of ``jobs`` for ``threads`` threads, largest first: each MSM cut at equal
    cost into one piece per share of the total it holds (rounded up), none below
    ``MIN_ROWS`` rows; every row of every MSM in exactly one piece."""
    costs = [np.cumsum(row_costs(job)) for job in jobs]
    total = sum(float(c[-1]) for c in costs if c.size)
    share = total / threads if total else 1.0
    pieces = []
    for j, cum in enumerate(costs):
        rows = cum.size
        work = float(cum[-1]) if rows else 0.0
        count = max(1, min(math.ceil(work / share - 1e-9), rows // MIN_ROWS))
        cuts = np.searchsorted(cum, work * np.arange(1, count) / count) + 1  # each past the row reaching its share
        bounds = np.unique(np.concatenate([[0], cuts, [rows]])).tolist()
        if len(bounds) == 1:  # an empty MSM: one empty piece, its sum the identity
            bounds = [0, 0]
        for lo, hi in zip(bounds, bounds[1:]):
            piece_cost = float(cum[hi - 1] - (cum[lo - 1] if lo else 0.0)) if hi > lo else 0.0
            pieces.append(Piece(j, lo, hi, piece_cost))
    return sorted(pieces, key=lambda p: -p.cost)


@lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="proofflow-msm")


def _piece(job: MsmJob, piece: Piece):
    msm = points.msm_split if job.witness else points.msm
    return msm(job.table, job.scalars, piece.lo, piece.hi)


def msms(jobs: list[MsmJob], threads: int) -> list:
    """Each job's MSM, in the jobs' order, on ``threads`` threads: the same points as
    computing them one after another."""
    for job in jobs:  # decoded here once, not raced for by the threads
        job.table.prepare()
    pieces = plan(jobs, threads)
    futures = [_pool(threads).submit(_piece, jobs[p.job], p) for p in pieces]
    sums = [job.table.curve.point_class(job.table.group).identity() for job in jobs]
    for p, future in zip(pieces, futures):
        sums[p.job] = sums[p.job] + future.result()
    return sums
