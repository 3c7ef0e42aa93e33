"""The "wide" product variant on the GPU (mont.cuh's mul_wide: each 32 x 32 product one
IMAD.WIDE.U32.X): its Fq products, squares and the benchmark's chains against Python integers
in every variant, and the curve kernels compiled with it (G1 and G2 MSMs, plain and over
copies built by its msm_shift, and fixed-base; inlined, and called from the curve formulas
in the "call" variant) against arkworks, on points the default variant put in Montgomery
form: a drop-in, bit for bit. Its NTT: test_gpu_backend.py's
``gpu`` fixture. Skipped where no CuPy or no GPU."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.device import available as gpu_available
from proofflow.prover.device import pippenger
from proofflow.prover.device.pippenger import Plan
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator
import kernel_twin as twin
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import cache, fixed_base, msm as gpu_msm  # noqa: E402  (needs CuPy)

fr = Fr.of(CURVE)

pytestmark = pytest.mark.gpu
Q = CURVE.fq.modulus
R = (1 << 384) % Q
R_INV = pow(1 << 384, -1, Q)
P = fr.MODULUS
VARIANTS = ("mul32", "wide")  # mul64 differs from mul32 in Fr's products only
# Elements are fully reduced (mont.cuh): the extremes of [0, q), R and R^2 mod q, and words
# of all ones or zeros.
EDGE = [0, 1, 2, Q - 1, Q - 2, (Q - 1) // 2, R, R_INV, R * R % Q, Q - R, 1 << 380, (1 << 352) - 1,
        Q - (1 << 352), (1 << 32) - 1, 1 << 32]


def limbs(values: list[int]) -> np.ndarray:
    return np.frombuffer(b"".join(v.to_bytes(48, "little") for v in values), dtype=np.uint64).reshape(-1, 6).copy()


def ints(rows) -> list[int]:
    return [int.from_bytes(r.tobytes(), "little") for r in cp.asnumpy(rows).reshape(-1, 6)]


def field(variant: str, kernel: str, *args) -> None:
    """One of field.cu's kernels over the rows of args[0], compiled with ``variant``."""
    n = args[0].shape[0]
    fn = cache.load(CURVE, variant, "field.cu", kernel_dir=options().kernel_dir).get_function(kernel)
    fn((max(1, -(-n // 128)),), (128,), args)


@pytest.mark.parametrize("variant", VARIANTS)
def test_fq_products_and_squares_match_python_ints(variant):
    rng = np.random.default_rng(11)
    rand = [int.from_bytes(rng.bytes(64), "little") % Q for _ in range(4096)]
    a = [x for x in EDGE for _ in EDGE] + rand
    b = [y for _ in EDGE for y in EDGE] + rand[::-1]
    da, db = cp.asarray(limbs(a)), cp.asarray(limbs(b))
    out = cp.empty_like(da)
    field(variant, "fq_mul_vec", da, db, out, np.uint64(len(a)))
    assert ints(out) == [x * y * R_INV % Q for x, y in zip(a, b)]
    field(variant, "fq_sqr_vec", da, out, np.uint64(len(a)))
    assert ints(out) == [x * x * R_INV % Q for x in a]


@pytest.mark.parametrize("variant", VARIANTS)
def test_fq_chains_match_python_ints(variant):
    """The product-rate benchmark's dependent chains: x * y^k and x^(2^k), Montgomery form."""
    rng = np.random.default_rng(12)
    x = EDGE + [int.from_bytes(rng.bytes(64), "little") % Q for _ in range(1000)]
    y = x[::-1]
    iters = 37
    dx = cp.asarray(limbs(x))
    field(variant, "fq_mul_chain", dx, cp.asarray(limbs(y)), np.uint64(len(x)), np.int32(iters))
    assert ints(dx) == [v * pow(w * R_INV, iters, Q) % Q for v, w in zip(x, y)]
    want = x
    for _ in range(iters):
        want = [v * v * R_INV % Q for v in want]
    dx = cp.asarray(limbs(x))
    field(variant, "fq_sqr_chain", dx, np.uint64(len(x)), np.int32(iters))
    assert ints(dx) == want


def _table(group: str, n: int, seed: int) -> points.PointTable:
    return twin.tiled_edge_table(group, n, seed, distinct=256)


@pytest.fixture(params=["wide", "call"])
def curve_variant(request):
    """The wide products inlined, or called from the curve formulas."""
    return request.param


def _wide_msm(table: points.PointTable, s: np.ndarray, plan: Plan | None = None, variant: str = "wide"):
    """The MSM run by msm.cu compiled with the wide products (``variant``), its copies (if
    any) built by that variant's msm_shift from the plain points the default one converted."""
    ex = gpu_msm.CupyExecutor(CURVE, "msm.cu", table.group, options(), variant)
    pts = gpu_msm.device_points(table, options())
    if plan is not None and plan.shifts > 1:
        pts = pippenger.precompute(ex, table.group, pts, plan)
    return pippenger.msm(ex, table.group, pts, cp.asarray(s), plan, balanced=True)


@pytest.mark.parametrize("group, log_n", [("g1", 0), ("g1", 4), ("g1", 10), ("g1", 13), ("g2", 0), ("g2", 9)])
def test_msm_matches_arkworks(group, log_n, curve_variant):
    n = 1 << log_n
    table = _table(group, n, 20 + log_n)
    s = fr.random(n, np.random.default_rng(log_n))
    assert _wide_msm(table, s, variant=curve_variant) == points.msm(table, s)


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("c", [7, 13])
def test_msm_edge_scalars_and_doublings(group, c, curve_variant):
    ints_ = [0, 1, P - 1, 2, P - 2, (P - 1) // 2, 1 << 254, (1 << c) - 1, 1 << (c - 1)] * 3
    s = fr.from_ints(ints_)
    table = _table(group, len(ints_), 30)
    assert _wide_msm(table, s, Plan(c), curve_variant) == points.msm(table, s)
    # the same point under every scalar: doublings and cancellations inside buckets
    same = points.PointTable(CURVE, group, np.repeat(table.xy[:1], len(ints_), axis=0))
    assert _wide_msm(same, s, Plan(c), curve_variant) == points.msm(same, s)


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("plan", [Plan(5, 7), Plan(16, 16)], ids=str)
def test_precomputed_msm_matches_arkworks(group, plan, curve_variant):
    n = 1024
    table = _table(group, n, plan.c)
    s = fr.from_ints([0, 1, P - 1] + fr.to_ints(fr.random(n - 3, np.random.default_rng(plan.shifts))))
    assert _wide_msm(table, s, plan, curve_variant) == points.msm(table, s)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_matches_arkworks(group, curve_variant):
    s = fr.from_ints([0, 1, 2, P - 1] + fr.to_ints(fr.random(508, np.random.default_rng(40))))
    ex = gpu_msm.CupyExecutor(CURVE, "fixed_base.cu", group, options(), curve_variant)
    got = fixed_base.multiples(ex, group, cp.asarray(fixed_base.window_table(CURVE, group)), s)
    assert np.array_equal(points.PointTable(CURVE, group, got).xy, generator.fixed_base(CURVE, group, s).xy)
