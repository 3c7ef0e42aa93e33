"""The witness MSMs' split by scalar value (proofflow/prover/device/sparse.py, bitsum.cu) on
the CPU twin of the kernels, against the curve's multiexp: the classes, the sum of the ones'
points through several folds, and whole split MSMs of G1 and G2 over all-zero, all-one,
no-one, mixed and dense scalars, with infinity, repeated and opposite points in the table;
and the CPU backend's split (points.msm_split) on the same cases. The classes, the ones' sum
and the split MSMs for every registered curve (BN254: small cases). No GPU needed; skipped
without a C++ compiler."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.device import pippenger, sparse
from proofflow.prover.field.fr import Fr
import kernel_twin as twin
from kernel_twin import CURVE, per_curve

fr = Fr.of(CURVE)

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

P = fr.MODULUS
EX = twin.TwinExecutor()
table = twin.edge_table


def device_points(t):
    return twin.points(twin.TwinExecutor(t.curve), t)


def split_msm(t: points.PointTable, s: np.ndarray, dense_share: float = sparse.DENSE_SHARE):
    ex = twin.TwinExecutor(t.curve)
    return sparse.msm(ex, ex, t.group, device_points(t), s, dense_share, balanced=True)


def scalars(kind: str, n: int, rng, curve=CURVE) -> np.ndarray:
    """A scalar vector of one shape: all 0, all 1, 0s and others (no one), mostly 0/1, dense."""
    fr = Fr.of(curve)
    other = fr.to_ints(fr.random(n, rng))
    if kind == "zero":
        vals = [0] * n
    elif kind == "one":
        vals = [1] * n
    elif kind == "no_one":
        vals = [v if rng.random() < 0.2 else 0 for v in other]
    elif kind == "mixed":  # a bit circuit's witness: ~90% bits, a few small words and field elements
        vals = [int(rng.integers(0, 2)) if r < 0.9 else (int(rng.integers(2, 1 << 32)) if r < 0.95 else v)
                for r, v in zip(rng.random(n), other)]
    else:
        vals = other
    return fr.from_ints(vals)


@per_curve()
def test_classes_are_the_canonical_values(curve):
    fr = Fr.of(curve)
    P = fr.MODULUS
    vals = [0, 1, 2, 3, P - 1, (1 << 256) % P, 1 << 64, (1 << 64) + 1, 1 << 192, 1 << (P.bit_length() - 1)]
    s = fr.from_ints(vals)
    ex = twin.TwinExecutor(curve)
    assert sparse.classify(ex, s).tolist() == [0, 1, 2, 2, 2, 2, 2, 2, 2, 2]
    assert sparse.classify(ex, fr.zeros(0)).shape == (0,)


@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("count,per_thread,max_threads,rounds", [(1, 16, 8, 0), (7, 2, 64, 0), (300, 1, 1 << 16, 0), (300, 4, 5, 0),
                                                   (1, 16, 8, 3), (7, 2, 64, 1), (300, 4, 5, 2), (300, 16, 64, 32)],
           small=[(7, 2, 64, 1), (300, 4, 5, 2)])
def test_point_sum_matches_the_library(curve, group, count, per_thread, max_threads, rounds, monkeypatch):
    """Threads of one point to many, and partial sums folded over one to several launches;
    after batch-affine rounds that pair the points up (each halving them, 32: to one)."""
    monkeypatch.setattr(sparse, "POINTS_PER_THREAD", per_thread)
    monkeypatch.setattr(sparse, "MAX_THREADS", max_threads)
    rng = np.random.default_rng(count)
    t = table(group, 320, rng, curve)
    idx = np.sort(rng.choice(320, size=count, replace=False)).astype(np.uint32)
    if count > 8:
        idx[:5] = [1, 2, 3, 4, 5]  # infinity, a point twice, a point and its negation
    want = curve.point_class(group).identity()
    for i in idx.tolist():
        want = want + t.points()[i]
    spy = twin.LaunchSpy(curve)
    assert sparse.point_sum(twin.TwinExecutor(curve), group, device_points(t), idx, spy, rounds) == want
    # a round halves the points until one is left or the rounds run out
    assert spy.launched.count(f"msm_affine_down_{group}") == min(rounds, (count - 1).bit_length())


@per_curve()
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_point_sum_of_nothing_and_of_cancelling_points(curve, group):
    ex = twin.TwinExecutor(curve)
    t = table(group, 16, np.random.default_rng(5), curve)
    pts = device_points(t)
    identity = curve.point_class(group).identity()
    assert sparse.point_sum(ex, group, pts, np.zeros(0, dtype=np.uint32)) == identity
    assert sparse.point_sum(ex, group, pts, np.array([1, 1, 1], dtype=np.uint32)) == identity  # infinity only
    assert sparse.point_sum(ex, group, pts, np.array([4, 5], dtype=np.uint32)) == identity  # P + (-P)
    assert sparse.point_sum(ex, group, pts, np.array([3, 2], dtype=np.uint32)) == t.points()[3] * curve.scalar(2)
    for rounds in (1, 32):  # the same through a batch-affine round: doubling, cancelling, infinity
        assert sparse.point_sum(ex, group, pts, np.array([1, 1, 1], dtype=np.uint32), ex, rounds) == identity
        assert sparse.point_sum(ex, group, pts, np.array([4, 5], dtype=np.uint32), ex, rounds) == identity
        assert sparse.point_sum(ex, group, pts, np.array([2, 3], dtype=np.uint32), ex, rounds) == \
            t.points()[3] * curve.scalar(2)


@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("kind", ["zero", "one", "no_one", "mixed", "dense"], small=["mixed"])
def test_split_msm_matches_the_library(curve, group, kind):
    n = (300 if group == "g1" else 120) if curve is CURVE else 100
    rng = np.random.default_rng(len(kind))
    t, s = table(group, n, rng, curve), scalars(kind, n, rng, curve)
    want = points.msm(t, s)
    assert split_msm(t, s) == want
    assert split_msm(t, s, dense_share=1.0) == want  # split whatever the share: dense and no-one cases too
    # the ones paired up first
    ex = twin.TwinExecutor(curve)
    assert sparse.msm(ex, ex, group, device_points(t), s, ones_rounds=3, balanced=True) == want
    assert points.msm_split(t, s) == want


@pytest.fixture
def pippenger_rows(monkeypatch) -> list:
    """The table rows of each Pippenger call from here on."""
    rows = []
    real = pippenger.msm

    def spy(ex, grp, points, s, *args, **kwargs):
        rows.append(points.shape[0])
        return real(ex, grp, points, s, *args, **kwargs)
    monkeypatch.setattr(pippenger, "msm", spy)
    return rows


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_split_takes_pippenger_whole_above_the_dense_share(group, pippenger_rows):
    """Dense scalars go to Pippenger untouched; a bit-heavy vector's rest goes compacted."""
    calls = pippenger_rows
    rng = np.random.default_rng(9)
    t = table(group, 64, rng)
    dense = scalars("dense", 64, rng)
    assert split_msm(t, dense) == points.msm(t, dense) and calls == [64]
    calls.clear()
    s = fr.from_ints([int(rng.integers(0, 2)) for _ in range(64)])
    s[[7, 20]] = fr.from_ints([5, P - 1])
    assert split_msm(t, s) == points.msm(t, s) and calls == [2]
    calls.clear()
    bits = fr.from_ints([int(rng.integers(0, 2)) for _ in range(64)])
    assert split_msm(t, bits) == points.msm(t, bits) and calls == []  # no other scalar: no Pippenger at all


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("kind", ["mixed", "dense"])
def test_split_msm_over_precomputed_copies(group, kind, pippenger_rows):
    """A table with precomputed copies: dense scalars take them (Pippenger under the plan),
    a bit-heavy vector's ones and compacted rest the plain points, their first rows."""
    rows = pippenger_rows
    n, plan = 120, pippenger.Plan(8, 4)
    rng = np.random.default_rng(11)
    t, s = table(group, n, rng), scalars(kind, n, rng)
    copies = pippenger.precompute(EX, group, device_points(t), plan)
    assert sparse.msm(EX, EX, group, copies, s, plan=plan, balanced=True) == points.msm(t, s)
    assert (rows == [plan.shifts * n]) if kind == "dense" else (len(rows) == 1 and 0 < rows[0] < n)


def test_split_msm_checks_shapes():
    t = table("g1", 4, np.random.default_rng(1))
    with pytest.raises(ValueError, match="4 points"):
        split_msm(t, fr.zeros(3))
    with pytest.raises(ValueError, match="4 points"):
        sparse.msm(EX, EX, "g1", device_points(t), fr.zeros(4), plan=pippenger.Plan(8, 2), balanced=True)
    with pytest.raises(ValueError, match="4 points but 3 scalars"):
        points.msm_split(t, fr.zeros(3))
    empty = points.PointTable(CURVE, "g1", np.zeros((0, 96), dtype=np.uint8))
    assert split_msm(empty, fr.zeros(0)) == points.msm_split(empty, fr.zeros(0)) == CURVE.point_class("g1").identity()


@per_curve()
def test_the_kernel_source_is_self_contained(curve):
    """NVRTC has no host headers: every include of bitsum.cu inlined, each header once."""
    import re
    from proofflow.prover.device import source
    text = source.source("bitsum.cu", curve)
    assert not re.search(r"^\s*#\s*include", text, re.MULTILINE)
    assert text.count("#define PROOFFLOW_FR_CUH") == 1 and text.count("#define PROOFFLOW_CURVE_CUH") == 1
