"""Running a proof's MSMs at once (proofflow/prover/device/overlap.py), without a GPU: the
start order, the lanes (concurrency, results in order, failures only after every task has
ended), the kernel twin's MSMs in lanes against arkworks, the prover's use of
``Backend.msms``, and the scratch bound that ``resources`` adds up for overlapped MSMs
against the twin's allocations. The GPU path: tests/device/test_gpu_overlap.py."""
from __future__ import annotations

import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from proofflow import settings
from proofflow.prover import points, resources
from proofflow.prover.backend.base import MsmJob
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import overlap, pippenger, sparse
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16.data_structures import PK_TABLES
from proofflow.spec import MemoryKind, RunConfig

fr = Fr.of(CURVE)

UNKNOWN = resources.Disk(Path("/unknown"), None)  # a place whose free space is not checked


def _no_lane(k):
    import contextlib
    return contextlib.nullcontext()


# ---- the start order and the lanes ----

def test_the_costliest_msm_starts_first():
    # a proof's jobs as the prover lists them: A, B_G1, L, H, B_G2
    assert overlap.order([("g1", 100), ("g1", 100), ("g1", 97), ("g1", 99), ("g2", 100)]) == [4, 0, 1, 3, 2]
    assert overlap.order([("g1", 400), ("g2", 100)]) == [0, 1]  # 400 G1 points outweigh 100 G2 ones (4 each)
    assert overlap.order([]) == []


def test_lanes_run_their_tasks_at_once_and_return_them_in_order():
    lanes, n = overlap.Lanes(), overlap.WIDTH
    barrier = threading.Barrier(n, timeout=30)  # passes only when all n tasks run at once
    entered = []

    def lane(k):
        entered.append(k)
        return _no_lane(k)

    def task(i):
        barrier.wait()
        return i, threading.current_thread().name

    got = lanes.run([lambda i=i: task(i) for i in range(n)], lane, start=[3, 1, 4, 0, 2])
    assert [i for i, _ in got] == list(range(n))
    assert len({name for _, name in got}) == n and all(name.startswith("proofflow-msm") for _, name in got)
    assert sorted(entered) == list(range(n))


def test_a_lane_gets_the_place_of_its_task_in_the_start_order():
    seen = {}
    lock = threading.Lock()

    def lane(k):
        import contextlib

        @contextlib.contextmanager
        def mark():
            with lock:
                seen[threading.get_ident()] = k
            yield
        return mark()

    def task(i):
        return i, seen[threading.get_ident()]

    got = overlap.Lanes().run([lambda i=i: task(i) for i in range(3)], lane, start=[2, 0, 1])
    assert got == [(0, 1), (1, 2), (2, 0)]


def test_a_failure_is_raised_once_every_task_has_ended():
    ended = threading.Event()

    def slow():
        time.sleep(0.3)
        ended.set()
        return "slow"

    def failing():
        raise RuntimeError("lane failed")

    with pytest.raises(RuntimeError, match="lane failed"):
        overlap.Lanes().run([failing, slow], _no_lane)
    assert ended.is_set()


def test_lanes_refuse_a_bad_start_order_and_too_many_tasks():
    lanes = overlap.Lanes(width=2)
    with pytest.raises(ValueError, match="no order"):
        lanes.run([lambda: 1, lambda: 2], _no_lane, start=[0, 0])
    with pytest.raises(ValueError, match="3 tasks for 2 lanes"):
        lanes.run([lambda: 1] * 3, _no_lane)
    assert lanes.run([], _no_lane) == []


# ---- MSMs in lanes: the kernel twin ----

@pytest.fixture(scope="module")
def twin():
    kernel_twin = pytest.importorskip("kernel_twin")
    if kernel_twin.compiler() is None:
        pytest.skip("no C++ compiler for the kernel twin")
    return kernel_twin


def _table(group: str, n: int, rng) -> points.PointTable:
    g = CURVE.point_class(group)()
    return points.PointTable.from_points(CURVE, group, [g * CURVE.scalar(int(x))
                                                        for x in fr.to_ints(fr.random(n, rng))])


def _twin_points(twin, table: points.PointTable) -> np.ndarray:
    pts = np.ascontiguousarray(table.xy).view(np.uint64).reshape(len(table), -1).copy()
    twin.TwinExecutor().launch(f"to_montgomery_{table.group}", len(table), pts, np.uint64(len(table)))
    return pts


def _bits(n: int, rng) -> np.ndarray:
    """Mostly 0 and 1 with a few field elements: the split's sparse path."""
    vals = [int(rng.integers(0, 2)) for _ in range(n)]
    vals[::29] = fr.to_ints(fr.random(len(vals[::29]), rng))
    return fr.from_ints(vals)


def test_twin_msms_in_lanes_match_arkworks(twin):
    """A proof's five MSMs (dense and split witness ones, G1 and G2, one over precomputed
    copies) in lanes at once, on the CPU twin: each as arkworks computes it alone."""
    rng = np.random.default_rng(20)
    ex, n = twin.TwinExecutor(), 300
    tables = {name: _table(group, n, rng) for name, group in PK_TABLES.items()}
    w, h = _bits(n, rng), fr.random(n, rng)
    plan = pippenger.Plan(8, 4)
    copies = pippenger.precompute(ex, "g1", _twin_points(twin, tables["h_query"]), plan)
    tasks = {
        "a_query": lambda: sparse.msm(ex, ex, "g1", _twin_points(twin, tables["a_query"]), w, balanced=True),
        "b_g1_query": lambda: pippenger.msm(ex, "g1", _twin_points(twin, tables["b_g1_query"]), w, balanced=True),
        "b_g2_query": lambda: sparse.msm(ex, ex, "g2", _twin_points(twin, tables["b_g2_query"]), w, balanced=True),
        "h_query": lambda: pippenger.msm(ex, "g1", copies, h, plan, balanced=True),
        "l_query": lambda: sparse.msm(ex, ex, "g1", _twin_points(twin, tables["l_query"]), h, balanced=True),
    }
    start = overlap.order([(tables[name].group, n) for name in tasks])
    got = overlap.Lanes().run(list(tasks.values()), _no_lane, start)
    scalars = {"a_query": w, "b_g1_query": w, "b_g2_query": w, "h_query": h, "l_query": h}
    assert got == [points.msm(tables[name], scalars[name]) for name in tasks]


# ---- the prover through Backend.msms ----

class _Reversed(CpuBackend):
    """The CPU backend computing a proof's MSMs last to first, as overlapped lanes may end."""

    def __init__(self):
        self.calls = []

    def msms(self, jobs):
        self.calls.append([(job.table.group, job.witness) for job in jobs])
        return [self.msm_job(job) for job in reversed(jobs)][::-1]


def test_the_prover_hands_its_msms_to_the_backend_at_once(pk10, mimc10):
    from proofflow.prover.groth16 import prover
    inst = mimc10.instance(3, 0)
    cs = mimc10.constraint_system
    want = prover.prove(pk10, cs, inst.witness, CpuBackend(), rng=np.random.default_rng(5))
    backend = _Reversed()
    got = prover.prove(pk10, cs, inst.witness, backend, rng=np.random.default_rng(5))
    assert got.to_bytes() == want.to_bytes()
    # A, B_G1, L (witness), H (dense), B_G2 (witness)
    assert backend.calls == [[("g1", True), ("g1", True), ("g1", True), ("g1", False), ("g2", True)]]


def test_cpu_msms_are_its_msms_one_by_one():
    rng = np.random.default_rng(21)
    g1, g2 = _table("g1", 64, rng), _table("g2", 64, rng)
    w, s = _bits(64, rng), fr.random(64, rng)
    jobs = [MsmJob(g1, w), MsmJob(g2, s, witness=False), MsmJob(g2, w)]
    assert CpuBackend().msms(jobs) == [points.msm(g1, w), points.msm(g2, s), points.msm(g2, w)]


# ---- memory: the scratch bound, and what resources adds up ----

SCRATCH_CASES = [("g1", 1000, None, pippenger.PIECE, "dense"), ("g2", 1000, None, pippenger.PIECE, "dense"),
                 ("g1", 1000, pippenger.Plan(8, 4), pippenger.PIECE, "dense"),
                 ("g1", 2000, pippenger.Plan(6, 8), 4, "small"),  # many pieces a bucket: merges of several levels
                 ("g2", 600, pippenger.Plan(5, 2), 4, "equal")]


@pytest.mark.parametrize("group,n,plan,piece,kind", SCRATCH_CASES)
def test_scratch_bytes_bound_the_msms_allocations(twin, group, n, plan, piece, kind):
    """pippenger.scratch_bytes is at least what the twin's run of ``pippenger.msm``
    allocates at its peak (numpy's arrays, traced), besides the table and the scalars."""
    rng = np.random.default_rng(n)
    ex = twin.TwinExecutor()
    table = _table(group, n, rng)
    pts = _twin_points(twin, table)
    if plan is not None and plan.shifts > 1:
        pts = pippenger.precompute(ex, group, pts, plan)
    vals = fr.to_ints(fr.random(n, rng))
    if kind == "small":
        vals = [int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)]
    elif kind == "equal":
        vals = [vals[0]] * n
    s = fr.from_ints(vals)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        got = pippenger.msm(ex, group, pts, s, plan, piece, balanced=True)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert got == points.msm(table, s)
    assert 0 < peak <= pippenger.scratch_bytes(CURVE, group, n, plan, piece)


def test_scratch_bytes_at_large_sizes():
    """Per point at 2^24 (plain, c = 16): 64 bytes of digits and ~53 of G1 pieces' sums and
    merges (~100 for G2); the bound grows with the plan's digits and buckets."""
    n = 1 << 24
    assert 110 * n < pippenger.scratch_bytes(CURVE, "g1", n) < 125 * n
    assert 155 * n < pippenger.scratch_bytes(CURVE, "g2", n) < 175 * n
    assert pippenger.scratch_bytes(CURVE, "g1", n, pippenger.Plan(20, 13)) < pippenger.scratch_bytes(CURVE, "g1", n)


def test_resources_add_up_the_overlapped_msms(monkeypatch):
    s = resources.Shape(1 << 22, 1 << 22, 2, CURVE)
    machine = resources.Machine(key=UNKNOWN, shared=UNKNOWN, cache=UNKNOWN, key_on_disk=True, cs_cached=True,
                                host_available=None, staging_budget=1 << 40)
    config = RunConfig("mimc", 22, 1, "gpu", MemoryKind.PINNED)
    monkeypatch.delenv("PROOFFLOW_MSM_OVERLAP", raising=False)
    assert not settings.current().msm_overlap and resources.msm_overlap_bytes(s) == 0
    sequential = resources.estimate(config, machine, s).device
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "1")
    n = s.n
    g1, g2 = pippenger.scratch_bytes(CURVE, "g1", n), pippenger.scratch_bytes(CURVE, "g2", n)
    # beside the costliest (B_G2), the others: A, B_G1 and L split by value (their classes, a
    # byte a point, and their scalars gathered at their tables' kept rows, 32; L has the
    # instance's 2 points less), H dense over n - 1 points
    witness = 1 + resources.FR_BYTES
    others = (2 * (g1 + witness * n) + pippenger.scratch_bytes(CURVE, "g1", n - 2) + witness * (n - 2)
              + pippenger.scratch_bytes(CURVE, "g1", n - 1))
    assert resources.msm_overlap_bytes(s) == others
    assert resources.estimate(config, machine, s).device == sequential + others
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "maybe")
    with pytest.raises(ValueError, match="PROOFFLOW_MSM_OVERLAP"):
        settings.current().msm_overlap
    assert g2 > g1
