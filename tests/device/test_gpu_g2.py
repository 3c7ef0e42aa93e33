"""The GPU's G2 MSM and fixed-base kernels against arkworks, and GPU setups against the CPU
path: the same key bytes, and proofs that verify. Skipped where no CuPy or no GPU."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import available as gpu_available
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.device import fixed_base, msm as gpu_msm  # noqa: E402  (needs CuPy)
from proofflow.prover.device.backend import GpuBackend  # noqa: E402

fr = Fr.of(CURVE)

pytestmark = pytest.mark.gpu
P = fr.MODULUS


@pytest.fixture(scope="module")
def g2_table():
    """1024 random G2 points, with infinity, a repeated point and a point and its negation."""
    rng = np.random.default_rng(5)
    g = CURVE.point_class("g2")()
    pts = [g * CURVE.scalar(int(x)) for x in fr.to_ints(fr.random(1021, rng))]
    pts += [CURVE.point_class("g2").identity(), pts[5], -pts[6]]
    return points.PointTable.from_points(CURVE, "g2", pts)


def _tiled(table, n: int):
    return points.PointTable(CURVE, table.group, np.tile(table.xy, (-(-n // len(table)), 1))[:n].copy())


@pytest.mark.parametrize("log_n", [0, 1, 4, 8, 10, 12, 14, 16])
def test_msm_g2_matches_arkworks(g2_table, log_n):
    n = 1 << log_n
    table = points.PointTable(CURVE, "g2", g2_table.xy[-n:].copy()) if n <= len(g2_table) else _tiled(g2_table, n)
    s = fr.random(n, np.random.default_rng(60 + log_n))
    assert GpuBackend(options()).msm_g2(table, s) == points.msm(table, s)


def test_msm_g2_empty_and_zero(g2_table):
    empty = points.PointTable(CURVE, "g2", g2_table.xy[:0].copy())
    assert gpu_msm.msm_g2(empty, fr.zeros(0), options()) == CURVE.point_class("g2").identity()
    table = points.PointTable(CURVE, "g2", g2_table.xy[:300].copy())
    assert gpu_msm.msm_g2(table, fr.zeros(300), options()) == CURVE.point_class("g2").identity()


@pytest.mark.parametrize("c", [4, 7, 13, 16])
def test_msm_g2_edge_scalars_every_window_width(g2_table, c):
    ints = [0, 1, P - 1, 2, P - 2, (P - 1) // 2, 1 << 254, (1 << c) - 1, 1 << (c - 1)] * 3
    table = points.PointTable(CURVE, "g2", g2_table.xy[-len(ints):].copy())
    s = fr.from_ints(ints)
    assert gpu_msm.msm_g2(table, s, options(), c=c) == points.msm(table, s)
    same = points.PointTable(CURVE, "g2", np.repeat(g2_table.xy[:1], len(ints), axis=0))
    assert gpu_msm.msm_g2(same, s, options(), c=c) == points.msm(same, s)


@pytest.mark.parametrize("log_n", [12, 16])
def test_msm_g2_mostly_small_scalars(g2_table, log_n):
    rng = np.random.default_rng(70 + log_n)
    n = 1 << log_n
    table = _tiled(g2_table, n)
    ints = fr.to_ints(fr.random(n, rng))
    s = fr.from_ints([int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), ints)])
    assert gpu_msm.msm_g2(table, s, options()) == points.msm(table, s)


@pytest.mark.parametrize("value", [1, P - 1, None])
def test_msm_g2_all_equal_scalars(g2_table, value):
    n = 1 << 16
    table = _tiled(g2_table, n)
    v = fr.to_ints(fr.random(1, np.random.default_rng(8)))[0] if value is None else value
    s = fr.from_ints([v] * n)
    assert gpu_msm.msm_g2(table, s, options()) == points.msm(table, s)


def test_msm_rejects_the_wrong_group(g2_table):
    with pytest.raises(ValueError, match="G1 table"):
        gpu_msm.msm_g1(g2_table, fr.zeros(len(g2_table)), options())


EDGE_SCALARS = [0, 1, 2, P - 1, P - 2, (P - 1) // 2, 255, 256, 1 << 254, (1 << 248) - 1, int("73" + "00" * 31, 16)]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_matches_arkworks(group):
    s = fr.from_ints(EDGE_SCALARS + fr.to_ints(fr.random(5000, np.random.default_rng(80))))
    got = GpuBackend(options()).fixed_base(CURVE, group, s)
    assert got.group == group and np.array_equal(got.xy, generator.fixed_base(CURVE, group, s).xy)
    assert not got.xy[0].any()  # 0 * G is infinity: all zero bytes
    # several launches, and a non-contiguous input
    ex = gpu_msm.CupyExecutor(CURVE, "fixed_base.cu", group, options())
    table = cp.asarray(fixed_base.window_table(CURVE, group))
    counts = []
    part = fixed_base.multiples(ex, group, table, s[::2], progress=counts.append, chunk=999)
    assert np.array_equal(part, got.xy[::2]) and sum(counts) == len(s[::2]) and len(counts) > 1


@pytest.mark.parametrize("log2", [8, 9, 10])
def test_gpu_setup_writes_the_cpu_key(mimc10, log2, tmp_path):
    from proofflow.prover.circuits.by_name import get_circuit
    circuit = mimc10 if log2 == 10 else get_circuit("mimc", log2)
    generator.setup(circuit, 3, backend=GpuBackend(options())).save(tmp_path / "gpu")
    generator.setup(circuit, 3).save(tmp_path / "cpu")
    names = sorted(p.name for p in (tmp_path / "cpu").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "gpu").iterdir())
    for name in names:
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name


@pytest.mark.parametrize("g2_on_gpu", [True, False])
def test_gpu_setup_and_gpu_proof_verify(mimc10, g2_on_gpu):
    from proofflow.prover.groth16 import prover, verifier
    backend = GpuBackend(options(), g2_on_gpu=g2_on_gpu)
    assert backend.g2_on_host is not g2_on_gpu
    pk = generator.setup(mimc10, 12, backend=backend)
    inst = mimc10.instance(13, 0)
    proof = prover.prove(pk, mimc10.constraint_system, inst.witness, backend)
    assert verifier.verify(pk.vk, inst.public_inputs, proof)
    wrong = [inst.public_inputs[0], (inst.public_inputs[1] + 1) % P]
    assert not verifier.verify(pk.vk, wrong, proof)
