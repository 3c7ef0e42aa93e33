"""Compressed key tables decompressed on the GPU as they are uploaded (decompress.cu,
device/decompress.py) against the CPU's decompression (native/compressed.c, its twin), bit
for bit at 2^10..2^16 points, canonical and as the MSMs hold them (Montgomery: what
to_montgomery makes of the xy rows); a bad point refused naming its file and row; a
compressed key's proof on the GPU backend verifying; for every registered curve (each its
library's encoding: zcash's for BLS12-381, arkworks's for BN254). Skipped where no CuPy or
no GPU."""
from __future__ import annotations

import numpy as np
import pytest

import kernel_twin as twin
from compressed_rows import bad_rows
from gpu_options import options
from proofflow.prover import points
from proofflow.prover.curves import registry
from proofflow.prover.device import available as gpu_available
from proofflow.prover.errors import KeyFormatError
from proofflow.prover.native import compressed

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.device import decompress, msm as gpu_msm  # noqa: E402  (needs CuPy)

pytestmark = pytest.mark.gpu


@pytest.fixture(params=list(registry.CURVES.values()), ids=registry.NAMES)
def curve(request):
    return request.param


def _tables(curve, group: str, log2: int):
    """2^log2 points (512 distinct ones, with infinity, a repeat, a point and its negation,
    tiled): as xy rows and as compressed rows."""
    xy = twin.tiled_edge_table(group, 1 << log2, 40 + log2, curve=curve).xy
    rows = compressed.compress(curve, group, xy)
    return points.PointTable(curve, group, xy), points.PointTable.of_compressed(curve, group, rows, origin="t.npy")


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("log2", [10, 12, 14, 16])
def test_the_gpu_decompresses_as_the_cpu(curve, group, log2):
    plain, packed = _tables(curve, group, log2)
    cpu = compressed.decompress(curve, group, packed.compressed)
    assert np.array_equal(cpu, plain.xy)
    chunk = (1 << log2) // 3 + 1  # three chunks: both staging buffers, one reused
    canonical = cp.asnumpy(decompress.upload(packed, options(), mont=False, chunk=chunk))
    assert np.array_equal(canonical.view(np.uint8).reshape(cpu.shape), cpu)
    spans: dict = {}
    mont = decompress.upload(packed, options(), chunk=chunk, spans=spans)
    assert spans["decompress_ms"] > 0
    assert bool(cp.all(mont == gpu_msm.device_points(plain, options())))  # the xy table's resident form
    assert bool(cp.all(gpu_msm.device_points(packed, options()) == gpu_msm.device_points(plain, options())))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_gpu_refuses_a_bad_point_with_its_row(curve, group):
    _, packed = _tables(curve, group, 12)
    for reason, refused in bad_rows(group, curve).items():
        rows = np.array(packed.compressed)
        rows[3001], rows[1234] = refused[-1][0], refused[0][0]
        table = points.PointTable.of_compressed(curve, group, rows, origin="b_g2_query.npy")
        with pytest.raises(KeyFormatError) as gpu:
            decompress.upload(table, options(), chunk=1000)  # the least row wins, across chunks
        with pytest.raises(KeyFormatError) as cpu:
            compressed.decompress(curve, group, rows, origin="b_g2_query.npy")
        assert str(gpu.value) == str(cpu.value) == (
            f"b_g2_query.npy: row 1234 is not a compressed {curve.label} {group.upper()} point: "
            f"{compressed.REASONS[reason]}")


def test_a_compressed_key_proves_on_the_gpu(tmp_path, monkeypatch):
    from proofflow.prover.backend.by_name import get_backend
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import prover, verifier
    from proofflow.prover.groth16.data_structures import PK_TABLES, ProvingKey
    from proofflow.prover.keys import ensure_key
    monkeypatch.setenv("PROOFFLOW_KEY_TABLES", "compressed")  # auto compresses from 2^24 only
    ensure_key(tmp_path / "key", "mimc", 10, 2, backend="cpu")
    pk = ProvingKey.load(tmp_path / "key")
    assert {getattr(pk, name).encoding for name in PK_TABLES} == {"compressed"}
    circuit = get_circuit("mimc", 10)
    inst = circuit.instance(2, 0)
    backend = get_backend("gpu")
    backend.prepare(pk)
    proof = prover.prove(pk, circuit.constraint_system, inst.witness, backend)
    assert verifier.verify(pk.vk, inst.public_inputs, proof)
