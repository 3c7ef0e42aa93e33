"""The G1 and G2 MSMs over precomputed multiples of their tables on the GPU (msm.cu's
msm_shift and the grouped windows, pippenger's plans) against arkworks and the plain path;
the copies' residency in ``PointTable.device_cache``; the split witness MSMs over them; a
key prepared with copies, counted in its resident bytes, and a proof with it. Skipped where
no CuPy or no GPU."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.keys import key_bytes
from proofflow.prover.device import available as gpu_available
from proofflow.prover.device import density, pippenger
from proofflow.prover.device.pippenger import Plan
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16.data_structures import PK_TABLES
import kernel_twin as twin
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import msm as gpu_msm  # noqa: E402  (needs CuPy)
from proofflow.prover.device.backend import GpuBackend  # noqa: E402

fr = Fr.of(CURVE)

pytestmark = pytest.mark.gpu
P = fr.MODULUS
Q = CURVE.fq.modulus
R_INV = pow(1 << 384, -1, Q)
EDGE = twin.msm_edge_scalars()


_table = twin.tiled_edge_table


def _scalars(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return fr.from_ints((EDGE + fr.to_ints(fr.random(n, rng)))[:n])


def _canonical(rows: np.ndarray) -> list[bytes]:
    """Affine Montgomery rows (u64 limbs) as xy-LE bytes, one a point."""
    out = []
    for row in rows:
        raw = row.tobytes()
        out.append(b"".join((int.from_bytes(raw[k:k + 48], "little") * R_INV % Q).to_bytes(48, "little")
                            for k in range(0, len(raw), 48)))
    return out


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_device_copies_are_the_shifted_points(group):
    n, plan = 600, Plan(5, 4)
    table = _table(group, n, 1)
    copies = gpu_msm.device_points(table, options(), plan)
    got = _canonical(copies.get())
    points = table.points()
    for k in range(plan.shifts):
        assert got[k * n:(k + 1) * n] == [(p * CURVE.scalar(1 << (plan.c * k))).to_xy_bytes_le() for p in points], k
    # in launches of 70 points, the last batch of each shorter than SHIFT_BATCH: the same rows
    again = pippenger.precompute(gpu_msm.executor(CURVE, group, options()), group, copies[:n], plan, chunk=70)
    assert bool(cp.array_equal(again, copies))


PLANS = [Plan(4, 64), Plan(5, 7), Plan(8, 3), Plan(13, 4), Plan(16, 16), Plan(20, 5), Plan(22, 12)]


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("plan", PLANS, ids=str)
def test_precomputed_msm_matches_arkworks_and_the_plain_path(group, plan):
    n = 1024
    table = _table(group, n, plan.c)
    s = _scalars(n, plan.shifts)
    want = points.msm(table, s)
    assert gpu_msm.msm(table, s, options(), plan=plan) == want
    assert gpu_msm.msm(table, s, options(), plan=Plan(plan.c)) == want


@pytest.mark.parametrize("group, log_n", [("g1", 16), ("g2", 14)])
def test_precomputed_msm_skewed_scalars(group, log_n):
    """Zeros, ones, all equal (every window's entries in one bucket), all r - 1, and 90%
    ones and twos, under the plan a table of this size gets with room to spare."""
    n = 1 << log_n
    table = _table(group, n, 2)
    plan, = pippenger.key_plans(CURVE, ((group, n),), 1 << 40)
    assert plan.shifts > 1
    rng = np.random.default_rng(3)
    vals = fr.to_ints(fr.random(n, rng))
    cases = {"zeros": [0] * n, "ones": [1] * n, "equal": [vals[0]] * n, "max": [P - 1] * n,
             "small": [int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), vals)]}
    for name, ints in cases.items():
        s = fr.from_ints(ints)
        assert gpu_msm.msm(table, s, options(), plan=plan) == points.msm(table, s), name


def test_copies_stand_in_for_the_plain_points():
    """The copies' first n rows are the plain points (one allocation); an MSM without a
    plan runs under the resident one; another plan's copies replace them."""
    n = 1000
    table, s = _table("g1", n, 4), _scalars(n, 5)
    want = points.msm(table, s)
    plain_key = ("g1-affine-mont", cp.cuda.runtime.getDevice())
    assert gpu_msm.resident_plan(table) == pippenger.plain(n)
    copies = gpu_msm.device_points(table, options(), Plan(8, 4))
    view = table.device_cache[plain_key]
    assert view.shape == (n, 12) and view.data.ptr == copies.data.ptr
    assert gpu_msm.resident_plan(table) == Plan(8, 4) and gpu_msm.msm_g1(table, s, options()) == want
    gpu_msm.device_points(table, options(), Plan(6, 2))
    assert [k[2] for k in table.device_cache if len(k) == 3] == [Plan(6, 2)]
    assert gpu_msm.msm_g1(table, s, options()) == want
    assert gpu_msm.msm_g1(table, s, options(), c=16) == want  # c: the plain path


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_witness_msms_over_copies(group):
    """The backend's split witness MSM on a table with resident copies: dense scalars under
    its plan, a bit-heavy vector's ones and rest over the plain rows."""
    n = 4096
    table = _table(group, n, 6)
    gpu_msm.device_points(table, options(), Plan(13, 4))
    rng = np.random.default_rng(7)
    bits = [int(rng.integers(0, 2)) for _ in range(n)]
    bits[::97] = fr.to_ints(fr.random(len(bits[::97]), rng))
    for s in (_scalars(n, 8), fr.from_ints(bits)):
        assert GpuBackend(options()).msm_witness(table, s) == points.msm(table, s)


@pytest.mark.parametrize("g2_on_gpu", [True, False])
def test_a_key_prepared_with_copies_proves(pk10, mimc10, g2_on_gpu):
    """Prepare builds each table's copies over the rows it keeps, the device holds less than
    ``key_bytes`` counts, and the proof verifies. The plans are given: at 2^10 the cost model
    chooses none (no copy saves its share of a plain MSM there)."""
    from proofflow.prover.groth16 import prover, verifier
    backend = GpuBackend(options(), g2_on_gpu=g2_on_gpu)
    assert all(p.shifts == 1 for p in pippenger.proving_key_plans(pk10, None, 64 << 20).values())
    plans = {name: Plan(4, 2) for name in PK_TABLES}
    try:
        backend.prepare(pk10, plans)
        held = 0
        for name, plan in plans.items():
            table = getattr(pk10, name)
            if name == "b_g2_query" and not g2_on_gpu:
                assert not table.device_cache
                continue
            assert gpu_msm.resident_plan(table) == plan
            rows = density.kept_rows(np, table.xy)  # the device drops the B tables' third at infinity
            copies = gpu_msm.device_points(table, options(), plan)
            assert copies.shape[0] == plan.shifts * (len(table) if rows is None else len(rows)), name
            held += copies.nbytes
        if g2_on_gpu:
            assert held < key_bytes(pk10, plans)
        inst = mimc10.instance(11, 0)
        proof = prover.prove(pk10, mimc10.constraint_system, inst.witness, backend)
        assert verifier.verify(pk10.vk, inst.public_inputs, proof)
    finally:
        for name in PK_TABLES:  # the session's key goes back to its plain state
            getattr(pk10, name).device_cache.clear()
