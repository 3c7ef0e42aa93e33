"""Batch-affine rounds of the MSM's bucket accumulation (msm_affine.cuh, pippenger's
``affine_rounds``) on the CPU twin of the kernels: the grid-wide Montgomery's trick against
Python integers, one round's sums with every special case (doubling, a point and its
negation, infinity on either side, lone points, negated entries) against the library, and
whole MSMs of G1 and G2 with several window widths, plans with precomputed copies and
round counts, over skewed scalars and tables with infinity, repeated and opposite points,
against the curve's multiexp; for every registered curve (BN254: small cases). The trick's
constants are shrunk in places so that small inputs still build several levels. No GPU
needed; skipped without a C++ compiler."""
from __future__ import annotations

import math

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.device import pippenger
from proofflow.prover.device.pippenger import AFFINE_ALL, Plan
from proofflow.prover.field.fr import Fr
import kernel_twin as twin
from kernel_twin import per_curve

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

table = twin.edge_table


def device_points(t):
    return twin.points(twin.TwinExecutor(t.curve), t)


SIGN = 0x80000000


@pytest.fixture
def deep_trick(monkeypatch):
    """Leaf threads of 3 pairs, levels folding 2 values, one value left to invert: every
    round of a small MSM goes through several levels of the trick."""
    monkeypatch.setattr(pippenger, "AFFINE_LEAF", 3)
    monkeypatch.setattr(pippenger, "AFFINE_FAN", 2)
    monkeypatch.setattr(pippenger, "AFFINE_INVERT", 1)


def decode(curve, group: str, rows: np.ndarray) -> list:
    """Affine Montgomery rows as the library's points (on-curve checked), (0, 0) as infinity."""
    xy = twin.field_op("fq", "from_mont", rows.reshape(-1, curve.fq.limbs), curve=curve).reshape(rows.shape[0], -1)
    cls = curve.point_class(group)
    return [cls.from_xy_bytes_le(r.tobytes()) if r.any() else cls.identity() for r in xy]


def msm(t: points.PointTable, s: np.ndarray, plan: Plan | None = None, rounds: int = AFFINE_ALL, piece=None,
        balanced=False):
    ex = twin.TwinExecutor(t.curve)
    pts = device_points(t)
    if plan is not None and plan.shifts > 1:
        pts = pippenger.precompute(ex, t.group, pts, plan)
    return pippenger.msm(ex, t.group, pts, s, plan, piece or pippenger.PIECE, affine_rounds=rounds,
                         balanced=balanced)


# ---- the grid's Montgomery's trick ----

@pytest.mark.parametrize("field, group", [("fq", "g1"), ("fq2", "g2")])
@per_curve("count, fan, top", [(1, 32, 1024), (5, 2, 1), (100, 3, 4), (1000, 32, 7)], small=[(100, 3, 4)])
def test_invert_matches_python_ints(monkeypatch, curve, field, group, count, fan, top):
    monkeypatch.setattr(pippenger, "AFFINE_FAN", fan)
    monkeypatch.setattr(pippenger, "AFFINE_INVERT", top)
    rng = np.random.default_rng(count)
    Q, k = curve.fq.modulus, curve.fq.limbs
    w = pippenger.coordinate_limbs(curve, group)
    raw = [1 + int.from_bytes(rng.bytes(64), "little") % (Q - 1) for _ in range(count * w // k)]
    vals = np.frombuffer(b"".join(v.to_bytes(8 * k, "little") for v in raw), dtype=np.uint64).copy()
    mont = twin.field_op(field, "to_mont", vals.reshape(count, w), curve=curve)
    inv = mont.copy().reshape(-1)
    pippenger._invert(twin.TwinExecutor(curve), group, inv, count)
    assert np.array_equal(inv.reshape(count, w), twin.field_op(field, "inv", mont, curve=curve))


# ---- one round ----

def round_case(curve, group: str, rng):
    """Buckets of entries (row, negated) over a table [a, b, infinity, -a, c, d], each
    with the sum its round must leave (two points) or the points it carries (fewer), and
    one bucket of three."""
    fr = Fr.of(curve)
    g = curve.point_class(group)()
    a, b, c, d = (g * curve.scalar(int(x)) for x in fr.to_ints(fr.random(4, rng)))
    inf = curve.point_class(group).identity()
    t = points.PointTable.from_points(curve, group, [a, b, inf, -a, c, d])
    buckets = [[(0, 0), (1, 0)],  # a + b
               [(0, 0), (0, 0)],  # doubling
               [(0, 0), (0, 1)],  # a + (-a) by the sign bit
               [(0, 0), (3, 0)],  # a + (-a) by the table
               [(3, 1), (0, 0)],  # -(-a) + a: doubling
               [(2, 0), (1, 0)],  # infinity + b
               [(1, 1), (2, 1)],  # -b + infinity
               [(2, 0), (2, 0)],  # infinity + infinity
               [],
               [(4, 1)],  # lone -c
               [(1, 1), (1, 1)],  # doubling of a negated entry
               [(4, 0), (5, 0), (1, 0)]]  # three points: two sums
    return t, buckets


@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("deep", [False, True], small=[True])
def test_round_sums_every_special_case(curve, group, deep, request):
    if deep:
        request.getfixturevalue("deep_trick")
    t, buckets = round_case(curve, group, np.random.default_rng(5))
    pts = t.points()
    entries = np.array([r | (SIGN if neg else 0) for bucket in buckets for r, neg in bucket], dtype=np.uint32)
    lens = np.array([len(b) for b in buckets], dtype=np.uint32)
    start = (np.cumsum(lens) - lens).astype(np.uint32)
    out, first, counts = pippenger._affine_round(twin.TwinExecutor(curve), group, device_points(t), entries, start,
                                                 lens)
    assert counts.tolist() == [-(-len(b) // 2) for b in buckets]
    sums = decode(curve, group, out)
    ident = curve.point_class(group).identity()
    for s, bucket in enumerate(buckets):
        got = sums[first[s]:first[s] + counts[s]]
        want = [-pts[r] if neg else pts[r] for r, neg in bucket]
        if len(bucket) == 2:
            assert got == [want[0] + want[1]], s
        elif len(bucket) == 1:
            assert got == want, s
        else:
            assert sum(got, ident) == sum(want, ident) and len(got) == math.ceil(len(bucket) / 2), s


# ---- whole MSMs ----

@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("n", [1, 2, 9, 100, 300], small=[9, 100])
def test_msm_matches_the_library(curve, group, n):
    rng = np.random.default_rng(50 + n)
    t, s = table(group, n, rng, curve), Fr.of(curve).random(n, rng)
    want = points.msm(t, s)
    for rounds in (1, 2, AFFINE_ALL):
        assert msm(t, s, rounds=rounds) == want, rounds


@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("c", [4, 7, 13], small=[7])
def test_msm_edge_scalars_every_window_width(curve, group, c):
    fr = Fr.of(curve)
    P = fr.MODULUS
    ints = [0, 1, P - 1, 2, P - 2, (P - 1) // 2, 1 << (P.bit_length() - 1), (1 << c) - 1, 1 << (c - 1)] * 2
    t = table(group, len(ints), np.random.default_rng(c), curve)
    s = fr.from_ints(ints)
    same = points.PointTable(curve, group, np.repeat(t.xy[:1], len(ints), axis=0))  # doublings at every round
    for tab in (t, same):
        assert msm(tab, s, Plan(c)) == points.msm(tab, s)


PLANS = [Plan(4, 64), Plan(5, 7), Plan(7, 2), Plan(10, 26)]


@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("plan", PLANS, small=[Plan(7, 2)])
def test_precomputed_msm_matches_the_library(curve, group, plan):
    n = 256
    rng = np.random.default_rng(plan.c * 10 + plan.shifts)
    fr = Fr.of(curve)
    P = fr.MODULUS
    t = table(group, n, rng, curve)
    s = fr.from_ints([0, 1, 2, P - 1, P - 2] + [P - 1] * 8 + fr.to_ints(fr.random(n - 13, rng)))
    want = points.msm(t, s)
    assert msm(t, s, plan) == want
    assert msm(t, s, plan, rounds=2, piece=4) == want  # rounds, then pieces and merges of the rest
    assert msm(t, s, plan, rounds=2, piece=4, balanced=True) == want  # or spans across the rounds' sums


@per_curve("group", ["g1", "g2"], small=["g1"])
def test_skewed_scalars(curve, group, deep_trick):
    """All scalars equal (one bucket a window holds every point), zeros, ones, all r - 1,
    90% ones and twos; a table of one point, and one of a point and its negation (whose
    digits cancel in every bucket), under a plan with copies and deep trees."""
    n, plan = 128, Plan(6, 8)
    rng = np.random.default_rng(60)
    fr = Fr.of(curve)
    P = fr.MODULUS
    t = table(group, n, rng, curve)
    g = curve.point_class(group)() * curve.scalar(12345)
    one = points.PointTable.from_points(curve, group, [g] * n)
    opposite = points.PointTable.from_points(curve, group, [g, -g] * (n // 2))
    vals = fr.to_ints(fr.random(n, rng))
    cases = {"equal": [vals[0]] * n, "zeros": [0] * n, "ones": [1] * n, "max": [P - 1] * n,
             "small": [int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)]}
    for name, ints in cases.items():
        s = fr.from_ints(ints)
        for tab in (t, one, opposite):
            want = points.msm(tab, s)
            assert msm(tab, s, plan) == want, name
            assert msm(tab, s, plan, rounds=3, piece=8) == want, name
            assert msm(tab, s, plan, rounds=3, piece=8, balanced=True) == want, name


def test_rounds_stop_at_one_point_a_bucket():
    """All scalars equal: every window's n entries in one bucket, so ceil(log2 n) rounds
    and no more however many are allowed; none at all by default. The spans name each
    round before the accumulation."""
    n = 100
    fr = Fr.of(twin.CURVE)
    t, s = table("g1", n, np.random.default_rng(61)), fr.from_ints([fr.MODULUS - 1] * n)
    want = points.msm(t, s)
    for rounds, expect in ((0, 0), (3, 3), (AFFINE_ALL, math.ceil(math.log2(n)))):
        spy, marks = twin.LaunchSpy(), []
        assert pippenger.msm(spy, "g1", device_points(t), s, Plan(8), mark=marks.append, affine_rounds=rounds,
                             balanced=True) == want
        assert spy.launched.count("msm_affine_up_g1") == expect == spy.launched.count("msm_affine_down_g1")
        assert marks[:expect + 2] == ["sort"] + [f"affine {r}" for r in range(expect)] + ["accumulate"]
