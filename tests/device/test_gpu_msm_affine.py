"""Batch-affine rounds of the G1 and G2 MSMs on the GPU (msm_affine.cuh, pippenger's
``affine_rounds``): a round's sums bit for bit against the CPU twin of the same kernels
(with the default Montgomery's trick and a deep one), and whole MSMs against arkworks under
several plans with precomputed copies and round counts, over skewed scalars. Skipped where
no CuPy or no GPU."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.device import available as gpu_available
from proofflow.prover.device import pippenger
from proofflow.prover.device.pippenger import AFFINE_ALL, Plan
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
SIGN = 0x80000000
EDGE = twin.msm_edge_scalars()


_table = twin.tiled_edge_table


def _buckets(entries: int, rows: int, rng):
    """A round's input over a table of ``rows`` rows: random buckets (empty, lone, small and
    large) of random signed entries, the first ones a doubling, a point and its negation by
    the sign bit, one by the table (rows 4, 5), and infinity (row 1) on either side."""
    lens = rng.choice([0, 1, 2, 3, 7, 40, 300], size=entries // 20, p=[.1, .1, .3, .2, .15, .1, .05])
    lens = lens[np.cumsum(lens) <= entries - 10]
    special = [[3, 3], [3, 3 | SIGN], [4, 5], [1, 6], [7, 1]]
    lens = np.concatenate([[len(b) for b in special], lens]).astype(np.uint32)
    rest = int(lens.sum()) - 10
    picked = rng.integers(0, rows, rest, dtype=np.uint32) | (rng.integers(0, 2, rest, dtype=np.uint32) << 31)
    flat = np.concatenate([[e for b in special for e in b], picked]).astype(np.uint32)
    return flat, (np.cumsum(lens) - lens).astype(np.uint32), lens


@pytest.fixture(params=[False, True], ids=["trick", "deep-trick"])
def trick(request, monkeypatch):
    """The default Montgomery's trick, or one of 3-pair leaves and 2-value levels."""
    if request.param:
        monkeypatch.setattr(pippenger, "AFFINE_LEAF", 3)
        monkeypatch.setattr(pippenger, "AFFINE_FAN", 2)
        monkeypatch.setattr(pippenger, "AFFINE_INVERT", 1)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_round_matches_the_twin(group, trick):
    """A round of 2^17 entries (a 4096-thread leaf: a level above it with the default
    trick) gives the twin's sums bit for bit."""
    twin = pytest.importorskip("kernel_twin")
    if twin.compiler() is None:
        pytest.skip("no C++ compiler for the kernel twin")
    table = _table(group, 512, 1)
    pts = gpu_msm.device_points(table, options())
    entries, start, lens = _buckets(1 << 17, 512, np.random.default_rng(2))
    dev = pippenger._affine_round(gpu_msm.executor(CURVE, group, options()), group, pts,
                                  *map(cp.asarray, (entries, start, lens)))
    cpu = pippenger._affine_round(twin.TwinExecutor(), group, cp.asnumpy(pts), entries, start, lens)
    for d, c in zip(dev, cpu):
        assert np.array_equal(cp.asnumpy(d), c)


PLANS = [Plan(4, 64), Plan(8, 3), Plan(13, 4), Plan(16, 16), Plan(20, 5)]


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("plan", PLANS, ids=str)
def test_msm_matches_arkworks(group, plan):
    n = 1024
    table = _table(group, n, plan.c)
    s = fr.from_ints((EDGE + fr.to_ints(fr.random(n, np.random.default_rng(plan.shifts))))[:n])
    want = points.msm(table, s)
    for rounds in (2, AFFINE_ALL):
        assert gpu_msm.msm(table, s, options(), plan=plan, affine_rounds=rounds) == want, rounds


@pytest.mark.parametrize("group, log_n", [("g1", 16), ("g2", 14)])
def test_skewed_scalars(group, log_n, trick):
    """Zeros, ones, all equal (every window's entries in one bucket: ~log2(n K) rounds),
    all r - 1, and 90% ones and twos, under the plan a table of this size gets with room to
    spare; all rounds, and 3 rounds before the accumulation."""
    n = 1 << log_n
    table = _table(group, n, 3)
    plan, = pippenger.key_plans(CURVE, ((group, n),), 1 << 40)
    rng = np.random.default_rng(4)
    vals = fr.to_ints(fr.random(n, rng))
    cases = {"zeros": [0] * n, "ones": [1] * n, "equal": [vals[0]] * n, "max": [P - 1] * n,
             "small": [int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)]}
    for name, ints in cases.items():
        s = fr.from_ints(ints)
        want = points.msm(table, s)
        for rounds in (3, AFFINE_ALL):
            assert gpu_msm.msm(table, s, options(), plan=plan, affine_rounds=rounds) == want, (name, rounds)


def test_spans_time_each_round():
    n = 1 << 12
    table = _table("g1", n, 5)
    s = fr.from_ints([7] * n)  # one bucket of 2^12 entries a window: 12 rounds
    spans = {}
    assert gpu_msm.msm(table, s, options(), c=8, spans=spans, affine_rounds=AFFINE_ALL) == points.msm(table, s)
    assert [k for k in spans if k.startswith("affine")] == [f"affine {r}" for r in range(12)]
    assert {"sort", "accumulate", "merge", "reduce", "combine"} <= spans.keys()
