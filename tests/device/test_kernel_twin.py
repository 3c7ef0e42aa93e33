"""The curve kernels' templates on the CPU (tests/kernel_twin.py), compiled for each registered
curve, against Python integers and the curve's point library (arkworks for BLS12-381, the
engine's C for BN254, with py-ecc as an independent reference): Fq and Fq2 arithmetic, XYZZ
sequences with their edge cases, the fixed-base routine, the whole Pippenger pipeline of
proofflow/prover/device/pippenger.py for G1 and G2 (plain, and over precomputed copies of the
table), and a setup whose key tables come from the twin. BN254 runs small cases of each.
No GPU needed; skipped without a C++ compiler."""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.curves.bls12_381 import BLS12_381
from proofflow.prover.curves.bn254 import BN254
from proofflow.prover.device import source as kernels
from proofflow.prover.device import fixed_base, pippenger
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator
import kernel_twin as twin
from kernel_twin import per_curve

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

_table = twin.edge_table


def _twin_points(t):
    return twin.points(twin.TwinExecutor(t.curve), t)


class Fields:
    """A curve's Fq and Fr as the tests write their values: Python integers, and rows of u64
    limbs (an Fq element's: 6 on BLS12-381, 4 on BN254)."""

    def __init__(self, curve):
        self.curve, self.fr = curve, Fr.of(curve)
        self.q, self.p, self.w = curve.fq.modulus, self.fr.MODULUS, curve.fq.limbs
        self.r = curve.fq.montgomery_r

    def limbs(self, values: list[int]) -> np.ndarray:
        return np.frombuffer(b"".join(v.to_bytes(8 * self.w, "little") for v in values),
                             dtype=np.uint64).reshape(-1, self.w).copy()

    def ints(self, rows: np.ndarray) -> list[int]:
        return [int.from_bytes(r.tobytes(), "little") for r in rows.reshape(-1, self.w)]

    def fq_values(self, rng, n: int) -> list[int]:
        q, r = self.q, self.r
        edge = [0, 1, 2, q - 1, q - 2, (q - 1) // 2, r, pow(r, -1, q), (1 << (q.bit_length() - 2)) + 12345]
        return edge + [int.from_bytes(rng.bytes(64), "little") % q for _ in range(n)]


# ---- Fq and Fq2 against Python integers ----

@per_curve()
def test_fq_matches_python_ints(curve):
    f = Fields(curve)
    Q, R = f.q, f.r
    rng = np.random.default_rng(1)
    a = f.fq_values(rng, 64)
    b = list(reversed(a))
    mont = lambda xs: f.limbs([x * R % Q for x in xs])  # noqa: E731
    got = lambda op, *args: f.ints(twin.field_op("fq", op, *args, curve=curve))  # noqa: E731
    assert got("mul", mont(a), mont(b)) == [x * y * R % Q for x, y in zip(a, b)]
    assert got("sqr", mont(a)) == [x * x * R % Q for x in a]
    assert got("add", mont(a), mont(b)) == [(x + y) * R % Q for x, y in zip(a, b)]
    assert got("sub", mont(a), mont(b)) == [(x - y) * R % Q for x, y in zip(a, b)]
    assert got("neg", mont(a)) == [-x * R % Q for x in a]
    assert got("inv", mont(a)) == [pow(x, -1, Q) * R % Q if x else 0 for x in a]
    assert got("to_mont", f.limbs(a)) == [x * R % Q for x in a]
    assert got("from_mont", mont(a)) == a


@per_curve()
def test_wide_products_match_python_ints(curve):
    """mont.cuh's mul_wide, the products and squares of the "wide" variant, on the twin's
    portable carry chains: every pair of edge values, random pairs and squares, Fq and Fr."""
    f = Fields(curve)
    rng = np.random.default_rng(5)
    for mod, words in ((f.q, f.w), (f.p, 4)):
        r = (1 << (64 * words)) % mod
        edge = [0, 1, 2, mod - 1, mod - 2, (mod - 1) // 2, r, pow(r, -1, mod), r * r % mod, 1 << (mod.bit_length() - 2)]
        rand = [int.from_bytes(rng.bytes(64), "little") % mod for _ in range(200)]
        pairs = [(x, y) for x in edge for y in edge] + list(zip(rand, reversed(rand))) + [(x, x) for x in rand]
        raw = lambda xs: np.frombuffer(b"".join(v.to_bytes(8 * words, "little") for v in xs),  # noqa: E731
                                       dtype=np.uint64).reshape(-1, words)
        out = twin.mul_wide("fq" if mod == f.q else "fr", raw([x for x, _ in pairs]), raw([y for _, y in pairs]),
                            curve=curve)
        got = [int.from_bytes(row.tobytes(), "little") for row in out]
        assert got == [x * y * pow(r, -1, mod) % mod for x, y in pairs]


def _fq2_mul(a, b, Q):
    return (a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q


def _fq2_inv(a, Q):
    if a == (0, 0):
        return 0, 0
    t = pow(a[0] ** 2 + a[1] ** 2, -1, Q)
    return a[0] * t % Q, -a[1] * t % Q


@per_curve()
def test_fq2_matches_python_ints(curve):
    f = Fields(curve)
    Q, R = f.q, f.r
    rng = np.random.default_rng(2)
    vals = f.fq_values(rng, 40)
    a = list(zip(vals, reversed(vals))) + [(0, 0), (1, 0), (0, 1), (Q - 1, Q - 1), (0, Q - 1)]
    b = a[7:] + a[:7]
    mont = lambda xs: f.limbs([v * R % Q for x in xs for v in x]).reshape(-1, 2 * f.w)  # noqa: E731

    def got(op, *args):
        out = f.ints(twin.field_op("fq2", op, *args, curve=curve))
        return [(x * pow(R, -1, Q) % Q, y * pow(R, -1, Q) % Q) for x, y in zip(out[::2], out[1::2])]

    assert got("mul", mont(a), mont(b)) == [_fq2_mul(x, y, Q) for x, y in zip(a, b)]
    assert got("sqr", mont(a)) == [_fq2_mul(x, x, Q) for x in a]
    assert got("add", mont(a), mont(b)) == [((x[0] + y[0]) % Q, (x[1] + y[1]) % Q) for x, y in zip(a, b)]
    assert got("sub", mont(a), mont(b)) == [((x[0] - y[0]) % Q, (x[1] - y[1]) % Q) for x, y in zip(a, b)]
    assert got("neg", mont(a)) == [(-x[0] % Q, -x[1] % Q) for x in a]
    assert got("inv", mont(a)) == [_fq2_inv(x, Q) for x in a]
    nonzero = [x for x in a if x != (0, 0)]
    assert [_fq2_mul(x, y, Q) for x, y in zip(nonzero, got("inv", mont(nonzero)))] == [(1, 0)] * len(nonzero)


@per_curve()
def test_canonical_scalars(curve):
    fr = Fr.of(curve)
    P = fr.MODULUS
    rand = fr.to_ints(fr.random(20, np.random.default_rng(3)))
    s = fr.from_ints([0, 1, P - 1, 1 << (P.bit_length() - 1), 12345] + rand)
    out = np.empty((len(s), 4), dtype=np.uint64)
    twin.call("twin_canonical_scalars", s, np.uint64(len(s)), out, curve=curve)
    assert np.array_equal(out.view(np.uint8).reshape(-1, 32), np.frombuffer(fr.to_bytes_le(s), np.uint8).reshape(-1, 32))


# ---- XYZZ arithmetic against the curve's point library ----

class Points:
    """XYZZ points of one group on the twin, checked through their affine encoding."""

    def __init__(self, curve, group: str):
        self.curve, self.group, self.cls = curve, group, curve.point_class(group)
        self.w = pippenger.coordinate_limbs(curve, group)

    def affine_mont(self, point) -> np.ndarray:
        raw = np.frombuffer(point.to_xy_bytes_le(), dtype=np.uint64).copy()
        twin.TwinExecutor(self.curve).launch(f"to_montgomery_{self.group}", 1, raw, np.uint64(1))
        return raw

    def inf(self) -> np.ndarray:
        return np.zeros(4 * self.w, dtype=np.uint64)

    def op(self, name, a, b=None):
        return twin.xyzz_op(self.group, name, a, b, curve=self.curve)

    def madd(self, acc, point):
        return self.op("madd", acc, self.affine_mont(point))

    def add(self, a, b):
        return self.op("add", a, b)

    def dbl(self, a):
        return self.op("dbl", a)

    def point(self, xyzz):
        """The library's point of an XYZZ point, through the kernels' own affine conversion."""
        xy = self.op("affine", xyzz).tobytes()
        return self.cls.identity() if not any(xy) else self.cls.from_xy_bytes_le(xy)  # on-curve checked

    def is_inf(self, xyzz) -> bool:
        return not xyzz[2 * self.w:3 * self.w].any()


@per_curve()
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_xyzz_edge_cases(curve, group):
    pt = Points(curve, group)
    P = curve.fr.modulus
    g = pt.cls()
    p, q = g * curve.scalar(1234567), g * curve.scalar(P - 98765)
    inf = pt.inf()
    assert pt.is_inf(pt.dbl(inf)) and pt.op("affine", inf).tobytes() == bytes(curve.xy_bytes(group))
    a = pt.madd(inf, p)  # from infinity: the point itself, zz = zzz = 1
    assert pt.point(a) == p
    b = pt.madd(a, q)
    assert pt.point(b) == p + q
    d = pt.dbl(b)
    assert pt.point(d) == (p + q) * curve.scalar(2)
    t = pt.add(d, b)  # 3(p + q), different zz on each side
    assert pt.point(t) == (p + q) * curve.scalar(3)
    six = (p + q) * curve.scalar(6)
    assert pt.point(pt.madd(t, (p + q) * curve.scalar(3))) == six  # madd of the same point: doubling
    assert pt.is_inf(pt.madd(t, -((p + q) * curve.scalar(3))))  # P + (-P)
    assert pt.point(pt.add(t, t)) == six  # add of the same point: doubling
    assert pt.point(pt.add(t, pt.madd(inf, (p + q) * curve.scalar(3)))) == six  # same point, other zz
    assert pt.is_inf(pt.add(t, pt.madd(inf, -((p + q) * curve.scalar(3)))))
    assert pt.point(pt.add(inf, t)) == pt.point(t) and pt.point(pt.add(t, inf)) == pt.point(t)
    assert pt.point(pt.madd(inf, -p)) == -p
    assert pt.point(pt.madd(pt.madd(inf, g), g)) == g * curve.scalar(2)


@per_curve()
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_xyzz_random_sequences(curve, group):
    pt = Points(curve, group)
    rng = np.random.default_rng(10)
    g = pt.cls()
    acc, ref = pt.inf(), pt.cls.identity()
    for step in range(60):
        op = rng.integers(0, 3)
        if op == 0:
            k = curve.scalar(int(rng.integers(1, 1 << 62)))
            acc, ref = pt.madd(acc, g * k), ref + g * k
        elif op == 1:
            other = pt.madd(pt.madd(pt.inf(), g * curve.scalar(step + 1)), g)
            acc, ref = pt.add(acc, other), ref + g * curve.scalar(step + 2)
        else:
            acc, ref = pt.dbl(acc), ref * curve.scalar(2)
        assert pt.point(acc) == ref


@pytest.fixture(scope="module")
def py_ecc():
    """py-ecc's BN254 (the Ethereum Foundation's pure Python), restoring the recursion limit
    its import raises for the whole session (tests/prover/test_bn254.py says why)."""
    limit = sys.getrecursionlimit()
    from py_ecc import optimized_bn128
    sys.setrecursionlimit(limit)
    return optimized_bn128


def _py_ecc_xy(ref, point) -> bytes:
    """A py-ecc point as xy-LE bytes (G2's coordinates c0 then c1), zeros at infinity."""
    if ref.is_inf(point):
        return bytes(64 if isinstance(point[0], ref.FQ) else 128)
    coords = [c for v in ref.normalize(point) for c in (v.coeffs if hasattr(v, "coeffs") else (v,))]
    return b"".join(int(c).to_bytes(32, "little") for c in coords)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_bn254_twin_against_py_ecc(py_ecc, group):
    """BN254's XYZZ formulas and Pippenger against py-ecc, a reference independent of the
    engine's C: a chain of mixed additions, additions and doublings of multiples of the
    generator (P + P, P + (-P) among them), and an MSM with the window edges' scalars."""
    ref, pt = py_ecc, Points(BN254, group)
    gen, zero = (ref.G1, ref.Z1) if group == "g1" else (ref.G2, ref.Z2)
    acc, want = pt.inf(), zero
    for k in (5, 5, 7, -17, 123456789):  # the second 5: a doubling; -17 cancels 5 + 5 + 7
        p = pt.cls() * BN254.scalar(k)
        acc, want = pt.madd(acc, p), ref.add(want, ref.multiply(gen, k % BN254.fr.modulus))
        assert pt.op("affine", acc).tobytes() == _py_ecc_xy(ref, want), k
    acc, want = pt.dbl(pt.add(acc, acc)), ref.multiply(want, 4)
    assert pt.op("affine", acc).tobytes() == _py_ecc_xy(ref, want)
    fr = Fr.of(BN254)
    ks = twin.msm_edge_scalars(BN254)
    table = points.PointTable.from_points(BN254, group, [pt.cls() * BN254.scalar(3 * i + 1) for i in range(len(ks))])
    got = pippenger.msm(twin.TwinExecutor(BN254), group, _twin_points(table), fr.from_ints(ks), pippenger.Plan(7),
                        balanced=True)
    assert got.to_xy_bytes_le() == _py_ecc_xy(ref, ref.multiply(gen, sum(k * (3 * i + 1) for i, k in enumerate(ks))
                                                             % BN254.fr.modulus))


# ---- the kernels' bodies on the twin: fixed-base and Pippenger ----

def edge_scalars(curve) -> list[int]:
    P = curve.fr.modulus
    return [0, 1, 2, P - 1, P - 2, (P - 1) // 2, 255, 256, 257, 1 << 8, (1 << 248) - 1, 1 << (P.bit_length() - 1),
            int("73" + "00" * 31, 16) % P, int("ff" * 31, 16)]


@per_curve("chunk,batch", [(17, 32), (1 << 22, 32), (1 << 22, 5), (40, 1)], small=[(17, 32), (40, 1)])
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_matches_the_library(curve, group, chunk, batch, monkeypatch):
    """Launches of one partial batch, of whole batches, of batches with a remainder (0 * G,
    infinity, inside one), and a point a batch: each thread's batch shares an inversion."""
    monkeypatch.setattr(fixed_base, "BATCH", batch)
    fr = Fr.of(curve)
    s = fr.from_ints(edge_scalars(curve) + fr.to_ints(fr.random(50, np.random.default_rng(20))))
    s[[20, 33]] = fr.zeros(2)
    got = fixed_base.multiples(twin.TwinExecutor(curve), group, fixed_base.window_table(curve, group), s, chunk=chunk)
    want = generator.fixed_base(curve, group, s).xy
    assert got.shape == want.shape and np.array_equal(got, want)
    assert not got[0].any() and not got[20].any()  # 0 * G: infinity, all zero bytes


def test_fixed_base_rejects_non_fr_vectors():
    with pytest.raises(ValueError, match="Fr vector"):
        fixed_base.multiples(twin.TwinExecutor(), "g1", fixed_base.window_table(BLS12_381, "g1"),
                             np.zeros((3, 2), dtype=np.uint64))


def _twin_msm(table: points.PointTable, s: np.ndarray, c=None, piece=pippenger.PIECE, plan=None, balanced=False):
    plan = plan or (pippenger.Plan(c) if c else None)
    ex = twin.TwinExecutor(table.curve)
    pts = _twin_points(table)
    if plan is not None and plan.shifts > 1:
        pts = pippenger.precompute(ex, table.group, pts, plan)
    return pippenger.msm(ex, table.group, pts, s, plan, piece, balanced=balanced)


ACCUMULATIONS = pytest.mark.parametrize("balanced", [False, True], ids=["pieces", "spans"])


@per_curve("n", [1, 2, 9, 100, 300], small=[9, 100])
@pytest.mark.parametrize("group", ["g1", "g2"])
@ACCUMULATIONS
def test_msm_matches_the_library(curve, group, n, balanced):
    rng = np.random.default_rng(30 + n)
    fr = Fr.of(curve)
    table = _table(group, n, rng, curve)
    s = fr.random(n, rng)
    assert _twin_msm(table, s, balanced=balanced) == points.msm(table, s)


@per_curve("c", [4, 7, 13, 16], small=[4, 13])
@pytest.mark.parametrize("group", ["g1", "g2"])
@ACCUMULATIONS
def test_msm_edge_scalars_every_window_width(curve, group, c, balanced):
    fr = Fr.of(curve)
    P = fr.MODULUS
    ints_ = [0, 1, P - 1, 2, P - 2, (P - 1) // 2, 1 << (P.bit_length() - 1), (1 << c) - 1, 1 << (c - 1)] * 2
    table = _table(group, len(ints_), np.random.default_rng(c), curve)
    s = fr.from_ints(ints_)
    assert _twin_msm(table, s, c=c, balanced=balanced) == points.msm(table, s)
    same = points.PointTable(curve, group, np.repeat(table.xy[:1], len(ints_), axis=0))  # doublings, cancellations
    assert _twin_msm(same, s, c=c, balanced=balanced) == points.msm(same, s)


@per_curve("group", ["g1", "g2"], small=["g1"])
@ACCUMULATIONS
def test_msm_skewed_scalars_split_and_merge(curve, group, balanced):
    """Mostly ones and twos with pieces (or spans) of 4 entries: the big buckets are cut
    into many, merged GROUP at a time over several rounds; spans also cross many small
    buckets."""
    rng = np.random.default_rng(40)
    fr = Fr.of(curve)
    n = 256
    table = _table(group, n, rng, curve)
    vals = fr.to_ints(fr.random(n, rng))
    s = fr.from_ints([int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)])
    assert _twin_msm(table, s, piece=4, balanced=balanced) == points.msm(table, s)
    equal = fr.from_ints([vals[0]] * n)
    assert _twin_msm(table, equal, piece=4, balanced=balanced) == points.msm(table, equal)
    zero = fr.zeros(n)
    assert _twin_msm(table, zero, balanced=balanced) == curve.point_class(group).identity()


@per_curve("piece", [1, 3, 5, 64], small=[3])
def test_balanced_spans_any_length(curve, piece):
    """Spans of 1 entry (a slot a digit), of lengths prime to the buckets', and longer
    than most buckets (a span meets many), random and sparse scalars."""
    rng = np.random.default_rng(41 + piece)
    fr = Fr.of(curve)
    n = 120
    table = _table("g1", n, rng, curve)
    sparse = fr.from_ints([v if rng.random() < 0.2 else 0 for v in fr.to_ints(fr.random(n, rng))])
    for s in (fr.random(n, rng), sparse):
        assert _twin_msm(table, s, c=6, piece=piece, balanced=True) == points.msm(table, s)


def test_spans_cut_sorted_entries_into_equal_runs():
    """Buckets of 0, 5, 0, 0, 2, 7, 0 entries in spans of 3: every span but the last takes 3,
    whichever buckets they cross; bucket s gets one slot a span it meets, in span order."""
    counts = np.array([0, 5, 0, 0, 2, 7, 0], dtype=np.uint32)
    offsets = (np.cumsum(counts) - counts).astype(np.uint32)
    span_seg, first, met, nspans, total, slots = pippenger._spans(np, offsets, counts, 3)
    assert (nspans, total) == (5, 14)
    assert span_seg.tolist() == [1, 1, 4, 5, 5]  # the bucket holding entries 0, 3, 6, 9, 12
    assert met.tolist() == [0, 2, 0, 0, 2, 3, 0]  # bucket 1: entries 0-4, spans 0-1; bucket 4: 5-6, spans 1-2
    assert first.tolist() == [0, 0, 2, 2, 2, 4, 7] and slots == 7


# ---- precomputed multiples: the copies, and MSMs over them against the library and the plain path ----

def canonical_rows(curve, table: np.ndarray) -> np.ndarray:
    """Affine Montgomery rows as the xy-LE bytes of prover/points.py, one row a point."""
    out = twin.field_op("fq", "from_mont", table.reshape(-1, curve.fq.limbs), curve=curve)
    return out.view(np.uint8).reshape(table.shape[0], -1)


@per_curve()
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_precompute_copies_are_the_shifted_points(curve, group):
    """Copy k row i is 2^(c k) * P_i (infinity stays (0, 0)), over several launches and a
    last batch shorter than SHIFT_BATCH."""
    n, plan = 70, pippenger.Plan(5, 4)
    table = _table(group, n, np.random.default_rng(70), curve)
    copies = pippenger.precompute(twin.TwinExecutor(curve), group, _twin_points(table), plan, chunk=40)
    assert copies.shape == (plan.shifts * n, pippenger.affine_limbs(curve, group))
    got = canonical_rows(curve, copies)
    pts = table.points()
    for k in range(plan.shifts):
        want = [(p * curve.scalar(1 << (plan.c * k))).to_xy_bytes_le() for p in pts]
        assert [bytes(r) for r in got[k * n:(k + 1) * n]] == want, k
    assert not got[n + 1].any()  # infinity, shifted


PLANS = [pippenger.Plan(4, 64),  # every window in one bucket set
         pippenger.Plan(5, 7),   # 52 windows in 8 groups, the last of 3
         pippenger.Plan(7, 2),   # 37 windows in 19 groups, the last of 1
         pippenger.Plan(10, 26)]  # 26 windows in one group


@per_curve("plan", PLANS, small=[pippenger.Plan(5, 7)])
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_precomputed_msm_matches_the_library_and_the_plain_path(curve, group, plan):
    n = 256
    rng = np.random.default_rng(plan.c * 100 + plan.shifts)
    fr = Fr.of(curve)
    P = fr.MODULUS
    table = _table(group, n, rng, curve)
    edge = edge_scalars(curve)
    ints_ = edge + [P - 1] * 8 + [0] * 8 + fr.to_ints(fr.random(n - len(edge) - 16, rng))
    s = fr.from_ints(ints_)
    want = points.msm(table, s)
    assert _twin_msm(table, s, plan=plan) == want
    assert _twin_msm(table, s, plan=plan, balanced=True) == want
    assert _twin_msm(table, s, plan=pippenger.Plan(plan.c)) == want


def test_precomputed_msm_at_1024_points():
    rng = np.random.default_rng(71)
    fr = Fr.of(BLS12_381)
    table = _table("g1", 1024, rng)
    s = fr.random(1024, rng)
    assert _twin_msm(table, s, plan=pippenger.Plan(8, 5)) == points.msm(table, s)


@per_curve("group", ["g1", "g2"], small=["g1"])
def test_precomputed_msm_skewed_scalars(curve, group):
    """Zeros, ones, all equal, all r - 1, and 90% ones and twos in pieces of 4 entries: a
    group's bucket then takes the entries of its K windows from K copies."""
    n, plan = 256, pippenger.Plan(6, 8)
    rng = np.random.default_rng(72)
    fr = Fr.of(curve)
    table = _table(group, n, rng, curve)
    vals = fr.to_ints(fr.random(n, rng))
    cases = {"zeros": [0] * n, "ones": [1] * n, "equal": [vals[0]] * n, "max": [fr.MODULUS - 1] * n,
             "small": [int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)]}
    for name, ints_ in cases.items():
        s = fr.from_ints(ints_)
        assert _twin_msm(table, s, plan=plan, piece=4) == points.msm(table, s), name
        assert _twin_msm(table, s, plan=plan, piece=4, balanced=True) == points.msm(table, s), name


def test_msm_rejects_a_table_of_another_plan():
    table = _table("g1", 16, np.random.default_rng(73))
    s = Fr.of(BLS12_381).random(16, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rows"):
        pippenger.msm(twin.TwinExecutor(), "g1", _twin_points(table), s, pippenger.Plan(4, 2), balanced=True)


def test_a_table_of_another_curve_is_refused():
    with pytest.raises(ValueError, match="bn254 table on the bls12_381 twin"):
        twin.points(twin.TwinExecutor(BLS12_381), _table("g1", 4, np.random.default_rng(74), BN254))


# ---- setup with the twin's fixed-base: the same key bytes as the CPU path ----

class TwinBackend(CpuBackend):
    """The CPU backend with the twin's fixed-base kernels, as GpuBackend has the GPU's."""

    def fixed_base(self, curve, group, scalars, progress=None):
        table = fixed_base.window_table(curve, group)
        return points.PointTable(curve, group, fixed_base.multiples(twin.TwinExecutor(curve), group, table, scalars,
                                                                    progress))


@per_curve()
def test_setup_with_kernel_fixed_base_writes_the_cpu_key(curve, tmp_path):
    from proofflow.prover.circuits.by_name import get_circuit
    circuit = get_circuit("mimc", 8, curve.name)
    seen = []
    generator.setup(circuit, 5, progress=lambda stage, done, total: seen.append((stage, done, total)),
                    backend=TwinBackend()).save(tmp_path / "twin")
    generator.setup(circuit, 5).save(tmp_path / "cpu")
    names = sorted(p.name for p in (tmp_path / "cpu").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "twin").iterdir()) and "b_g2_query.npy" in names
    for name in names:
        assert (tmp_path / "twin" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name
    assert seen[-1][1] == seen[-1][2]  # progress reached the total


# ---- the sources NVRTC compiles ----

@per_curve()
@pytest.mark.parametrize("name", ["ntt.cu", "msm.cu", "fixed_base.cu"])
def test_kernel_sources_are_self_contained(curve, name):
    """NVRTC has no host headers and CuPy's cache keys on the text: every include inlined, once."""
    text = kernels.source(name, curve)
    assert not re.search(r"^\s*#\s*include", text, re.MULTILINE)
    assert text.count("#define PROOFFLOW_COMMON_CUH") == 1 and text.count("#define PROOFFLOW_FR_CUH") == 1
    if name != "ntt.cu":
        assert text.count("#define PROOFFLOW_CURVE_CUH") == 1
    assert text.startswith(kernels.curve_header(curve)) and f"#define PF_FQ_WORDS {2 * curve.fq.limbs}" in text


def test_kernel_options():
    assert kernels.options("mul32", "g2") == ("-std=c++17", "-DPF_GROUP_G2")
    assert kernels.options("mul64") == ("-std=c++17", "-DFR_MUL64")
    with pytest.raises(ValueError, match="group"):
        kernels.options("mul32", "g3")
    with pytest.raises(ValueError, match="variant"):
        kernels.options("mul16")
