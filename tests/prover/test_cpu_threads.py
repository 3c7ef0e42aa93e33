"""The CPU backend's MSMs on several threads (proofflow/prover/backend/cpu_threads.py): a
proof's MSMs at once and large ones split, each the same point as the one-thread path and
as a naive sum of scalar multiples; the plan covers every row once and balances by cost;
PROOFFLOW_CPU_THREADS sets the threads, which really run at once."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from proofflow import settings
from proofflow.prover import points
from proofflow.prover.backend import cpu_threads
from proofflow.prover.backend.base import MsmJob
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import prover

fr = Fr.of(CURVE)


def table(group: str, n: int, rng) -> points.PointTable:
    """n points: random multiples of the generator, with the point at infinity, a point
    twice and a point next to its negation among them."""
    g, sc = CURVE.point_class(group)(), CURVE.scalar
    pts = [g * sc(int(k)) for k in rng.integers(1, 1 << 62, size=n)]
    if n >= 8:
        pts[1], pts[3], pts[5] = CURVE.point_class(group).identity(), pts[2], -pts[4]
    return points.PointTable.from_points(CURVE, group, pts)


def witness_like(n: int, rng) -> np.ndarray:
    """Mostly 0 and 1, a few small words and full field elements, runs of each."""
    full = fr.to_ints(fr.random(n, rng))
    r = rng.random(n)
    vals = [0 if x < 0.35 else 1 if x < 0.75 else int(rng.integers(2, 1 << 32)) if x < 0.85 else v
            for x, v in zip(r, full)]
    vals[: n // 8] = [0] * (n // 8)  # a long run of zeros: a piece of little work
    return fr.from_ints(vals)


def naive(t: points.PointTable, values: np.ndarray):
    total = CURVE.point_class(t.group).identity()
    for p, k in zip(t.points(), fr.to_ints(values)):
        total = total + p * CURVE.scalar(k)
    return total


@pytest.fixture(scope="module")
def jobs():
    """A proof's MSMs in small: witness MSMs in G1 and G2, a dense G1 one, an empty one."""
    rng = np.random.default_rng(36)
    w = witness_like(300, rng)
    g1, g2 = table("g1", 300, rng), table("g2", 300, rng)
    h = fr.random(257, rng)
    return [MsmJob(g1, w), MsmJob(g2, w), MsmJob(table("g1", 257, rng), h, witness=False),
            MsmJob(points.PointTable.from_points(CURVE, "g1", []), fr.zeros(0))]


@pytest.fixture(scope="module")
def expected(jobs):
    return [naive(job.table, job.scalars) for job in jobs]


@pytest.mark.parametrize("threads", [2, 3, 8])
@pytest.mark.parametrize("min_rows", [16, 1 << 20])  # MSMs split into many pieces / kept whole
def test_parallel_msms_equal_the_sequential_ones_and_the_naive_sum(jobs, expected, threads, min_rows, monkeypatch):
    monkeypatch.setattr(cpu_threads, "MIN_ROWS", min_rows)
    sequential = CpuBackend(1).msms(jobs)
    parallel = CpuBackend(threads).msms(jobs)
    assert sequential == expected
    assert parallel == expected
    assert [p.to_xy_bytes_le() for p in parallel] == [p.to_xy_bytes_le() for p in sequential]


def test_a_split_msm_equals_the_whole(jobs, expected, monkeypatch):
    monkeypatch.setattr(cpu_threads, "MIN_ROWS", 8)
    backend = CpuBackend(8)
    w_job, g2_job, h_job = jobs[:3]
    pieces = cpu_threads.plan([h_job], 8)
    assert len(pieces) == 8
    assert backend.msm_g1(h_job.table, h_job.scalars) == expected[2]
    assert backend.msm_witness(w_job.table, w_job.scalars) == expected[0]
    assert backend.msm_witness(g2_job.table, g2_job.scalars) == expected[1]
    # and so do the row ranges summed by hand, through either path of points.py
    for msm, job, want in ((points.msm, h_job, expected[2]), (points.msm_split, w_job, expected[0])):
        total = CURVE.point_class(job.table.group).identity()
        for lo, hi in ((0, 1), (1, 100), (100, 100), (100, len(job.table))):
            total = total + msm(job.table, job.scalars, lo, hi)
        assert total == want
    with pytest.raises(ValueError, match="not within"):
        points.msm(h_job.table, h_job.scalars, 10, 5)


def test_the_plan_covers_every_row_once_and_balances_by_cost(jobs, monkeypatch):
    monkeypatch.setattr(cpu_threads, "MIN_ROWS", 16)
    for threads in (1, 2, 5, 64):
        pieces = cpu_threads.plan(jobs, threads)
        assert [p.cost for p in pieces] == sorted((p.cost for p in pieces), reverse=True)
        for j, job in enumerate(jobs):
            spans = sorted((p.lo, p.hi) for p in pieces if p.job == j)
            assert spans[0][0] == 0 and spans[-1][1] == len(job.table)
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
            if len(job.table):
                assert all(lo < hi for lo, hi in spans)
            assert sum(p.cost for p in pieces if p.job == j) == pytest.approx(cpu_threads.row_costs(job).sum())
    # one thread: nothing split; many: no piece above a share (bar rounding at a row)
    assert len(cpu_threads.plan(jobs, 1)) == len(jobs)
    pieces = cpu_threads.plan(jobs, 5)
    share = sum(p.cost for p in pieces) / 5
    assert max(p.cost for p in pieces) <= share + cpu_threads.GROUP_COST["g2"]
    # costs: a witness's zeros cost nothing, its ones little, G2 more than G1
    costs = cpu_threads.row_costs(jobs[0])
    w = fr.to_ints(jobs[0].scalars)
    assert {c for c, v in zip(costs, w) if v == 0} == {0.0}
    assert {c for c, v in zip(costs, w) if v == 1} == {cpu_threads.ONE_COST}
    assert cpu_threads.row_costs(jobs[1]).sum() == pytest.approx(costs.sum() * cpu_threads.GROUP_COST["g2"])


def test_the_threads_run_at_once(jobs, monkeypatch):
    """Each thread's first piece waits until ``threads`` pieces have started: this only
    passes when that many run at once."""
    monkeypatch.setattr(cpu_threads, "MIN_ROWS", 16)
    threads = 4
    barrier, seen, run = threading.Barrier(threads, timeout=20), set(), cpu_threads._piece

    def piece(job, p):
        name = threading.current_thread().name
        if name not in seen:  # a thread's first piece
            seen.add(name)
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass
        return run(job, p)

    monkeypatch.setattr(cpu_threads, "_piece", piece)
    CpuBackend(threads).msms(jobs)
    assert barrier.n_waiting == 0 and not barrier.broken
    assert len(seen) == threads and all(name.startswith("proofflow-msm") for name in seen)


def test_the_setting_gives_the_threads(monkeypatch):
    import os
    monkeypatch.delenv("PROOFFLOW_CPU_THREADS", raising=False)
    assert settings.current().cpu_threads == (os.cpu_count() or 1)
    assert get_backend("cpu").threads == (os.cpu_count() or 1)
    monkeypatch.setenv("PROOFFLOW_CPU_THREADS", "3")
    assert get_backend("cpu").threads == 3
    monkeypatch.setenv("PROOFFLOW_CPU_THREADS", "0")
    with pytest.raises(ValueError, match="PROOFFLOW_CPU_THREADS must be an integer >= 1"):
        settings.current()
    with pytest.raises(ValueError, match="at least one thread"):
        CpuBackend(0)


def test_a_proof_on_threads_is_the_one_thread_proof(pk10, mimc10, monkeypatch):
    monkeypatch.setattr(cpu_threads, "MIN_ROWS", 64)  # the 2^10 MSMs split too
    inst = mimc10.instance(5, 1)
    one, many = (prover.prove(pk10, mimc10.constraint_system, inst.witness, CpuBackend(t), np.random.default_rng(9))
                 for t in (1, 4))
    assert many.to_bytes() == one.to_bytes()
