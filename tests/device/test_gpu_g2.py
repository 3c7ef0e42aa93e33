"""The GPU's G2 MSM and fixed-base kernels against the CPU (each registered curve's point
library: arkworks for BLS12-381, the engine's C for BN254), and GPU setups against the CPU
path: the same key bytes, and proofs that verify. Skipped where no CuPy or no GPU."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.curves import registry
from proofflow.prover.device import available as gpu_available
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.device import fixed_base, msm as gpu_msm  # noqa: E402  (needs CuPy)
from proofflow.prover.device.backend import GpuBackend  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(params=list(registry.CURVES.values()), ids=registry.NAMES)
def curve(request):
    return request.param


@lru_cache(maxsize=None)
def g2_table(curve):
    """1024 random G2 points of ``curve``, with infinity, a repeated point and a point and its negation."""
    rng = np.random.default_rng(5)
    fr = Fr.of(curve)
    g = curve.point_class("g2")()
    pts = [g * curve.scalar(int(x)) for x in fr.to_ints(fr.random(1021, rng))]
    pts += [curve.point_class("g2").identity(), pts[5], -pts[6]]
    return points.PointTable.from_points(curve, "g2", pts)


def _tiled(table, n: int):
    return points.PointTable(table.curve, table.group, np.tile(table.xy, (-(-n // len(table)), 1))[:n].copy())


@pytest.mark.parametrize("log_n", [0, 1, 4, 8, 10, 12, 14, 16])
def test_msm_g2_matches_the_cpu(curve, log_n):
    n, base = 1 << log_n, g2_table(curve)
    table = points.PointTable(curve, "g2", base.xy[-n:].copy()) if n <= len(base) else _tiled(base, n)
    s = Fr.of(curve).random(n, np.random.default_rng(60 + log_n))
    assert GpuBackend(options()).msm_g2(table, s) == points.msm(table, s)


def test_msm_g2_empty_and_zero(curve):
    fr, base = Fr.of(curve), g2_table(curve)
    empty = points.PointTable(curve, "g2", base.xy[:0].copy())
    assert gpu_msm.msm_g2(empty, fr.zeros(0), options()) == curve.point_class("g2").identity()
    table = points.PointTable(curve, "g2", base.xy[:300].copy())
    assert gpu_msm.msm_g2(table, fr.zeros(300), options()) == curve.point_class("g2").identity()


@pytest.mark.parametrize("c", [4, 7, 13, 16])
def test_msm_g2_edge_scalars_every_window_width(curve, c):
    fr, base = Fr.of(curve), g2_table(curve)
    P = fr.MODULUS
    ints = [0, 1, P - 1, 2, P - 2, (P - 1) // 2, 1 << (P.bit_length() - 1), (1 << c) - 1, 1 << (c - 1)] * 3
    table = points.PointTable(curve, "g2", base.xy[-len(ints):].copy())
    s = fr.from_ints(ints)
    assert gpu_msm.msm_g2(table, s, options(), c=c) == points.msm(table, s)
    same = points.PointTable(curve, "g2", np.repeat(base.xy[:1], len(ints), axis=0))
    assert gpu_msm.msm_g2(same, s, options(), c=c) == points.msm(same, s)


@pytest.mark.parametrize("log_n", [12, 16])
def test_msm_g2_mostly_small_scalars(curve, log_n):
    rng = np.random.default_rng(70 + log_n)
    n, fr = 1 << log_n, Fr.of(curve)
    table = _tiled(g2_table(curve), n)
    ints = fr.to_ints(fr.random(n, rng))
    s = fr.from_ints([int(k) if m else v for m, k, v in zip(rng.random(n) < 0.9, rng.integers(1, 3, n), ints)])
    assert gpu_msm.msm_g2(table, s, options()) == points.msm(table, s)


@pytest.mark.parametrize("value", [1, -1, None], ids=["1", "p-1", "random"])
def test_msm_g2_all_equal_scalars(curve, value):
    n, fr = 1 << 16, Fr.of(curve)
    table = _tiled(g2_table(curve), n)
    v = fr.to_ints(fr.random(1, np.random.default_rng(8)))[0] if value is None else value
    s = fr.from_ints([v] * n)
    assert gpu_msm.msm_g2(table, s, options()) == points.msm(table, s)


def test_msm_rejects_the_wrong_group():
    table = g2_table(registry.get_curve(registry.DEFAULT))
    with pytest.raises(ValueError, match="G1 table"):
        gpu_msm.msm_g1(table, Fr.of(table.curve).zeros(len(table)), options())


def edge_scalars(curve) -> list[int]:
    P = curve.fr.modulus
    return [0, 1, 2, P - 1, P - 2, (P - 1) // 2, 255, 256, 1 << (P.bit_length() - 1), (1 << 248) - 1,
            int("73" + "00" * 31, 16) % P]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_matches_the_cpu(curve, group):
    fr = Fr.of(curve)
    s = fr.from_ints(edge_scalars(curve) + fr.to_ints(fr.random(5000, np.random.default_rng(80))))
    got = GpuBackend(options()).fixed_base(curve, group, s)
    assert got.group == group and np.array_equal(got.xy, generator.fixed_base(curve, group, s).xy)
    assert not got.xy[0].any()  # 0 * G is infinity: all zero bytes
    # several launches, and a non-contiguous input
    ex = gpu_msm.CupyExecutor(curve, "fixed_base.cu", group, options())
    table = cp.asarray(fixed_base.window_table(curve, group))
    counts = []
    part = fixed_base.multiples(ex, group, table, s[::2], progress=counts.append, chunk=999)
    assert np.array_equal(part, got.xy[::2]) and sum(counts) == len(s[::2]) and len(counts) > 1


@pytest.mark.parametrize("log2", [8, 9, 10])
def test_gpu_setup_writes_the_cpu_key(curve, log2, tmp_path):
    from proofflow.prover.circuits.by_name import get_circuit
    circuit = get_circuit("mimc", log2, curve.name)
    generator.setup(circuit, 3, backend=GpuBackend(options())).save(tmp_path / "gpu")
    generator.setup(circuit, 3).save(tmp_path / "cpu")
    names = sorted(p.name for p in (tmp_path / "cpu").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "gpu").iterdir())
    for name in names:
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name


@pytest.mark.parametrize("g2_on_gpu", [True, False])
def test_gpu_setup_and_gpu_proof_verify(curve, g2_on_gpu):
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import prover, verifier
    backend = GpuBackend(options(), g2_on_gpu=g2_on_gpu)
    assert backend.g2_on_host is not g2_on_gpu
    circuit = get_circuit("mimc", 10, curve.name)
    pk = generator.setup(circuit, 12, backend=backend)
    assert pk.curve.name == curve.name
    inst = circuit.instance(13, 0)
    proof = prover.prove(pk, circuit.constraint_system, inst.witness, backend)
    assert verifier.verify(pk.vk, inst.public_inputs, proof)
    wrong = [inst.public_inputs[0], (inst.public_inputs[1] + 1) % curve.fr.modulus]
    assert not verifier.verify(pk.vk, wrong, proof)
