"""The witness MSMs' split by scalar value on the GPU (proofflow/prover/device/sparse.py,
bitsum.cu) against arkworks, and a bits proof on the GPU backend. Skipped where no CuPy or
no GPU; the same kernels run on the CPU twin in tests/device/test_sparse_twin.py."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import available as gpu_available
from proofflow.prover.field.fr import Fr
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.device import msm as gpu_msm, sparse  # noqa: E402  (needs CuPy)
from proofflow.prover.device.backend import GpuBackend, _bitsum_executor  # noqa: E402

fr = Fr.of(CURVE)

pytestmark = pytest.mark.gpu
P = fr.MODULUS
SIZES = {"g1": 1 << 12, "g2": 1 << 10}


@pytest.fixture(scope="module", params=["g1", "g2"])
def table(request):
    """Random points of a group with infinity, a repeated point and a point and its negation."""
    group, n = request.param, SIZES[request.param]
    rng = np.random.default_rng(3)
    g = CURVE.point_class(group)()
    pts = [g * CURVE.scalar(int(x)) for x in fr.to_ints(fr.random(n - 3, rng))]
    pts += [CURVE.point_class(group).identity(), pts[5], -pts[6]]
    return points.PointTable.from_points(CURVE, group, pts)


def witness_like(kind: str, n: int, rng) -> np.ndarray:
    other = fr.to_ints(fr.random(n, rng))
    if kind == "zero":
        return fr.zeros(n)
    if kind == "one":
        return fr.ones(n)
    if kind == "no_one":
        return fr.from_ints([v if rng.random() < 0.2 else 0 for v in other])
    if kind == "mixed":  # ~90% bits, then small words and field elements
        return fr.from_ints([int(rng.integers(0, 2)) if r < 0.9 else (int(rng.integers(2, 1 << 32)) if r < 0.95 else v)
                             for r, v in zip(rng.random(n), other)])
    return fr.from_ints(other)


def test_classes_are_the_canonical_values():
    vals = [0, 1, 2, 3, P - 1, (1 << 256) % P, 1 << 64, (1 << 64) + 1, 1 << 192, 1 << 254]
    ex = _bitsum_executor(cp.cuda.runtime.getDevice(), CURVE, "g1", options())
    got = sparse.classify(ex, cp.asarray(fr.from_ints(vals)))
    assert cp.asnumpy(got).tolist() == [0, 1, 2, 2, 2, 2, 2, 2, 2, 2]


@pytest.mark.parametrize("kind", ["zero", "one", "no_one", "mixed", "dense"])
def test_msm_witness_matches_arkworks(table, kind):
    s = witness_like(kind, len(table), np.random.default_rng(len(kind)))
    want = points.msm(table, s)
    assert GpuBackend(options()).msm_witness(table, s) == want
    assert GpuBackend(options()).msm_witness(table, cp.asarray(s)) == want  # resident scalars, as the prover has them
    opts = options()
    ex = _bitsum_executor(cp.cuda.runtime.getDevice(), CURVE, table.group, opts)
    msm_ex, pts = gpu_msm.executor(CURVE, table.group, opts), gpu_msm.device_points(table, opts)
    forced = sparse.msm(ex, msm_ex, table.group, pts, cp.asarray(s), dense_share=1.0,
                        balanced=opts.msm_balanced)  # split whatever the share
    assert forced == want
    for rounds in (1, 3, 32):  # the ones paired up by batch-affine rounds first
        assert sparse.msm(ex, msm_ex, table.group, pts, cp.asarray(s), dense_share=1.0, ones_rounds=rounds,
                          balanced=opts.msm_balanced) == want, rounds


@pytest.mark.parametrize("per_thread,max_threads", [(1, 1 << 16), (16, 37), (4096, 1 << 16)])
def test_point_sum_over_many_folds(table, per_thread, max_threads, monkeypatch):
    monkeypatch.setattr(sparse, "POINTS_PER_THREAD", per_thread)
    monkeypatch.setattr(sparse, "MAX_THREADS", max_threads)
    s = witness_like("mixed", len(table), np.random.default_rng(8))
    assert GpuBackend(options()).msm_witness(table, s) == points.msm(table, s)


def test_bit_heavy_msm_at_2_18():
    """A bits partition's shape at 2^18: ~99% bits over a table of repeated points."""
    from proofflow.prover.circuits.by_name import get_circuit
    w = get_circuit("bits", 18).instance(0, 0).witness
    g = CURVE.point_class("g1")()
    base = points.PointTable.from_points(CURVE, "g1", [g * CURVE.scalar(k + 1) for k in range(1024)])
    table = points.PointTable(CURVE, "g1", np.tile(base.xy, (-(-len(w) // 1024), 1))[:len(w)].copy())
    assert GpuBackend(options()).msm_witness(table, w) == points.msm(table, w)


@pytest.mark.parametrize("table", ["g2"], indirect=True)
def test_g2_on_the_host_splits_there_too(table):
    s = witness_like("mixed", len(table), np.random.default_rng(2))
    assert GpuBackend(options(), g2_on_gpu=False).msm_witness(table, s) == points.msm(table, s)


def test_bits_proof_verifies_on_the_gpu():
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator, prover, verifier
    c = get_circuit("bits", 10)
    pk = generator.setup(c, seed=3)
    for gpu in (GpuBackend(options()), GpuBackend(options(), g2_on_gpu=False)):
        inst = c.instance(5, 1)
        proof = prover.prove(pk, c.constraint_system, inst.witness, gpu, abc=c.witness_map(inst.witness))
        assert verifier.verify(pk.vk, inst.public_inputs, proof)
