"""Key-side density on the GPU (proofflow/prover/device/density.py): a table with a third of
its rows at infinity is kept on the device without them, the rows kept are the twin's, and
its MSMs (plain, over precomputed copies, the witness split, and a proof's at once) equal
arkworks over the whole table. Skipped where no CuPy or no GPU; the same steps run on the CPU
twin in tests/device/test_density_twin.py."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.backend.base import MsmJob
from proofflow.prover.device import available as gpu_available
from proofflow.prover.device import density, pippenger
from proofflow.prover.field.fr import Fr
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
SIZES = {"g1": 1 << 12, "g2": 1 << 10}


def _table(group: str) -> points.PointTable:
    """An edge table tiled to size, every third row the point at infinity (a MiMC key's B)."""
    xy = twin.tiled_edge_table(group, SIZES[group], 11).xy.copy()
    xy[2::3] = 0
    return points.PointTable(CURVE, group, xy)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_device_keeps_the_finite_rows(group):
    t = _table(group)
    rows = gpu_msm.kept_rows(t, options())
    want = density.kept_rows(np, t.xy)
    assert rows is not None and cp.asnumpy(rows).tolist() == want.tolist()
    assert gpu_msm.device_points(t, options()).shape == (len(want), pippenger.affine_limbs(CURVE, group))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msms_over_the_kept_rows_equal_arkworks(group):
    t, n = _table(group), SIZES[group]
    rng = np.random.default_rng(12)
    dense = fr.from_ints((twin.msm_edge_scalars() + fr.to_ints(fr.random(n, rng)))[:n])
    bits = [int(rng.integers(0, 2)) for _ in range(n)]
    bits[::37] = fr.to_ints(fr.random(len(bits[::37]), rng))
    bits = fr.from_ints(bits)
    want = {"dense": points.msm(t, dense), "bits": points.msm(t, bits)}
    backend = GpuBackend(options())
    assert gpu_msm.msm(t, dense, options()) == want["dense"]
    assert gpu_msm.msm(t, cp.asarray(dense), options(), c=8) == want["dense"]
    assert backend.msm_witness(t, dense) == want["dense"] and backend.msm_witness(t, bits) == want["bits"]
    plan = pippenger.Plan(8, 4)
    assert gpu_msm.device_points(t, options(), plan).shape[0] == 4 * len(gpu_msm.kept_rows(t, options()))
    assert gpu_msm.msm(t, dense, options(), plan=plan) == want["dense"]
    assert backend.msm_witness(t, dense) == want["dense"]
    lanes = GpuBackend(options(), overlap=True).msms([MsmJob(t, cp.asarray(s)) for s in (dense, bits, dense)])
    assert lanes == [want["dense"], want["bits"], want["dense"]]
