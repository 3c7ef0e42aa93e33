"""The balanced accumulation of the G1 and G2 MSMs on the GPU (pippenger's ``balanced``:
spans of equal length across buckets, msm.cu's msm_accumulate_spans): the partial sums
bit for bit against the CPU twin of the same kernel, and whole MSMs against arkworks under
plain and precomputed plans, after batch-affine rounds, over skewed scalars and in the
``wide`` and ``call`` product variants. Skipped where no CuPy or no GPU."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.device import available as gpu_available
from proofflow.prover.device import pippenger
from proofflow.prover.device.pippenger import Plan
from proofflow.prover.field.fr import Fr
import kernel_twin as twin
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import msm as gpu_msm  # noqa: E402  (needs CuPy)

fr = Fr.of(CURVE)

pytestmark = pytest.mark.gpu
P = fr.MODULUS
_table = twin.tiled_edge_table


def _sorted_buckets(entries: int, rows: int, rng):
    """Sorted bucket entries over a table of ``rows`` rows: empty, lone, small and large
    buckets of random signed rows (infinity, row 1, among them), back to back."""
    lens = rng.choice([0, 1, 2, 5, 40, 130, 700], size=entries // 30, p=[.15, .1, .2, .2, .15, .15, .05])
    lens = lens[np.cumsum(lens) <= entries].astype(np.uint32)
    total = int(lens.sum())
    flat = rng.integers(0, rows, total, dtype=np.uint32) | (rng.integers(0, 2, total, dtype=np.uint32) << 31)
    return flat, (np.cumsum(lens) - lens).astype(np.uint32), lens


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("piece", [7, 128])
def test_spans_match_the_twin(group, piece):
    if twin.compiler() is None:
        pytest.skip("no C++ compiler for the kernel twin")
    table = _table(group, 512, 1)
    pts = gpu_msm.device_points(table, options())
    entries, offsets, counts = _sorted_buckets(1 << 15, 512, np.random.default_rng(piece))
    dev = pippenger.accumulate(gpu_msm.executor(CURVE, group, options()), group, pts,
                               *map(cp.asarray, (entries, offsets, counts)), piece, True)
    cpu = pippenger.accumulate(twin.TwinExecutor(), group, cp.asnumpy(pts), entries, offsets, counts, piece, True)
    for d, c in zip(dev, cpu):
        assert np.array_equal(cp.asnumpy(d), c)


PLANS = [Plan(8), Plan(16), Plan(8, 3), Plan(16, 16), Plan(20, 5)]


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("plan", PLANS, ids=str)
def test_msm_matches_arkworks(group, plan):
    n = 1 << 12
    table = _table(group, n, plan.c)
    edge = twin.msm_edge_scalars()
    s = fr.from_ints((edge + fr.to_ints(fr.random(n, np.random.default_rng(plan.shifts))))[:n])
    want = points.msm(table, s)
    assert gpu_msm.msm(table, s, options(), plan=plan, balanced=True) == want
    assert gpu_msm.msm(table, s, options(), plan=plan, balanced=True, affine_rounds=2) == want


@pytest.mark.parametrize("group, log_n", [("g1", 16), ("g2", 14)])
def test_skewed_scalars(group, log_n):
    """Zeros, ones, all equal (every window's entries in one bucket: many spans, one
    bucket), all r - 1, 90% ones and twos, and 90% zeros (a span meets many buckets)."""
    n = 1 << log_n
    table = _table(group, n, 3)
    rng = np.random.default_rng(4)
    vals = fr.to_ints(fr.random(n, rng))
    cases = {"zeros": [0] * n, "ones": [1] * n, "equal": [vals[0]] * n, "max": [P - 1] * n,
             "small": [int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)],
             "sparse": [0 if m else v for m, v in zip(rng.random(n) < 0.9, vals)]}
    for name, ints in cases.items():
        s = fr.from_ints(ints)
        assert gpu_msm.msm(table, s, options(), balanced=True) == points.msm(table, s), name


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("variant", ["wide", "call"])
def test_other_product_variants(group, variant):
    n = 1 << 12
    table = _table(group, n, 5)
    s = fr.random(n, np.random.default_rng(6))
    ex = gpu_msm.CupyExecutor(CURVE, "msm.cu", group, options(), variant)
    got = pippenger.msm(ex, group, gpu_msm.device_points(table, options()), cp.asarray(s), balanced=True)
    assert got == points.msm(table, s)
