"""A proof's MSMs at once on the GPU (``GpuBackend(overlap=True)``, each in a lane: a thread
and a stream of its own) against the CPU backend and the sequential GPU path, bit for bit:
the MSMs alone (witness and dense, G1 and G2, over precomputed copies), lanes that start
while the caller's stream is still computing their scalars, a failing lane, whole proofs
(G2 on the device and on the host) and the prover service with PROOFFLOW_MSM_OVERLAP.
Skipped where no CuPy or no GPU; the logic without a GPU: tests/device/test_overlap.py."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.backend.base import MsmJob
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.device import available as gpu_available
from proofflow.prover.device import pippenger
from proofflow.prover.field.fr import Fr
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import msm as gpu_msm  # noqa: E402  (needs CuPy)
from proofflow.prover.device.backend import GpuBackend  # noqa: E402

fr = Fr.of(CURVE)

pytestmark = pytest.mark.gpu
N = 4096


def _table(group: str, n: int, seed: int) -> points.PointTable:
    g = CURVE.point_class(group)()
    scalars = fr.to_ints(fr.random(n, np.random.default_rng(seed)))
    return points.PointTable.from_points(CURVE, group, [g * CURVE.scalar(int(x)) for x in scalars])


def _bits(n: int, rng) -> np.ndarray:
    """A bit circuit's witness: mostly 0 and 1, every 37th a field element (the split path)."""
    vals = [int(rng.integers(0, 2)) for _ in range(n)]
    vals[::37] = fr.to_ints(fr.random(len(vals[::37]), rng))
    return fr.from_ints(vals)


@pytest.fixture(scope="module")
def tables():
    """A proof's five tables (A, B_G1, L, H in G1; B_G2), H's with resident precomputed copies."""
    t = {"a": _table("g1", N, 1), "b1": _table("g1", N, 2), "l": _table("g1", N - 3, 3), "h": _table("g1", N, 4),
         "b2": _table("g2", N, 5)}
    gpu_msm.device_points(t["h"], options(), pippenger.Plan(13, 4))
    return t


def _jobs(tables, w, h, to=np.asarray):
    """The prover's jobs (A, B_G1, L, H, B_G2) over scalars moved by ``to``."""
    w, h = to(w), to(h)
    return [MsmJob(tables["a"], w), MsmJob(tables["b1"], w), MsmJob(tables["l"], w[3:]),
            MsmJob(tables["h"], h, witness=False), MsmJob(tables["b2"], w)]


@pytest.mark.parametrize("witness", ["bits", "dense"])
def test_overlapped_msms_are_the_cpus_and_the_sequential_ones(tables, witness):
    rng = np.random.default_rng(10)
    w = _bits(N, rng) if witness == "bits" else fr.random(N, rng)
    h = fr.random(N, rng)
    want = CpuBackend().msms(_jobs(tables, w, h))
    assert GpuBackend(options(), overlap=False).msms(_jobs(tables, w, h, cp.asarray)) == want
    for _ in range(2):  # the second time over the lanes' cached blocks
        assert GpuBackend(options(), overlap=True).msms(_jobs(tables, w, h, cp.asarray)) == want
    # host scalars, uploaded in the lanes
    assert GpuBackend(options(), overlap=True).msms(_jobs(tables, w, h)) == want


def test_an_empty_msm_beside_others():
    empty, g1 = points.PointTable(CURVE, "g1", np.zeros((0, 96), dtype=np.uint8)), _table("g1", 64, 6)
    s = fr.random(64, np.random.default_rng(11))
    got = GpuBackend(options(), overlap=True).msms([MsmJob(empty, cp.zeros((0, 4), dtype=cp.uint64), witness=False),
                                         MsmJob(g1, cp.asarray(s))])
    assert got == [CURVE.point_class("g1").identity(), points.msm(g1, s)]


@pytest.mark.parametrize("caller", ["null", "non_blocking"])
def test_lanes_wait_for_the_callers_kernels(tables, caller):
    """The scalars are still being computed on the caller's stream (a long chain of
    squarings, not synchronized) when the lanes start: they wait for it."""
    gpu = GpuBackend(options(), overlap=True)
    stream = cp.cuda.Stream.null if caller == "null" else cp.cuda.Stream(non_blocking=True)
    x = cp.asarray(fr.random(N, np.random.default_rng(12)))
    cp.cuda.Device().synchronize()
    with stream:
        gpu.square_chain_device(CURVE, x, 20000)  # in place: x <- x^(2^20000), milliseconds of dependent products
        got = gpu.msms(_jobs(tables, x, x, cp.asarray))
        stream.synchronize()
    assert got == CpuBackend().msms(_jobs(tables, cp.asnumpy(x), cp.asnumpy(x)))


def test_a_failing_lane_fails_the_call_after_the_others_end(tables):
    gpu = GpuBackend(options(), overlap=True)
    s = cp.asarray(fr.random(N, np.random.default_rng(13)))
    jobs = _jobs(tables, s, s, cp.asarray)
    jobs[3] = MsmJob(tables["h"], s[:10], witness=False)  # 10 scalars for N points
    with pytest.raises(ValueError, match="scalars"):
        gpu.msms(jobs)
    assert gpu.msms(_jobs(tables, s, s, cp.asarray)) == CpuBackend().msms(_jobs(tables, cp.asnumpy(s), cp.asnumpy(s)))


def test_overlapped_proofs_are_the_sequential_ones(pk10, mimc10):
    """The same proof bytes (r and s from the same seed) from the CPU, the sequential GPU
    path and the overlapped one, with the G2 MSM on the device and on the host."""
    from proofflow.prover.groth16 import prover, verifier
    inst = mimc10.instance(11, 0)
    cs = mimc10.constraint_system

    def prove(backend):
        return prover.prove(pk10, cs, inst.witness, backend, rng=np.random.default_rng(3)).to_bytes()

    want = prove(CpuBackend())
    for backend in (GpuBackend(options()), GpuBackend(options(), overlap=True),
                    GpuBackend(options(), g2_on_gpu=False, overlap=True)):
        assert prove(backend) == want, (backend.overlap, backend.g2_on_host)
    from proofflow.prover.groth16.data_structures import Proof
    assert verifier.verify(pk10.vk, inst.public_inputs, Proof.from_bytes(pk10.curve, want))


def test_the_setting_turns_overlap_on(monkeypatch, pk10, mimc10):
    from proofflow.prover.backend.by_name import get_backend
    from proofflow.prover.groth16 import prover, verifier
    from proofflow.prover.timing import PhaseTimer
    monkeypatch.delenv("PROOFFLOW_MSM_OVERLAP", raising=False)
    assert not get_backend("gpu").overlap
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "1")
    backend = get_backend("gpu")
    assert backend.overlap
    backend.warm_up()
    inst, timer = mimc10.instance(12, 0), PhaseTimer()
    proof = prover.prove(pk10, mimc10.constraint_system, inst.witness, backend, timer=timer)
    assert verifier.verify(pk10.vk, inst.public_inputs, proof)
    assert {"h2d", "ntt", "msm", "assemble"} <= set(timer.totals())


def test_the_service_proves_with_overlapped_msms(tmp_path, monkeypatch):
    """The prover service's device thread hands its MSMs to the lanes (threads of its
    process, on its device)."""
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator, verifier
    from proofflow.prover.groth16.data_structures import Proof
    from proofflow.prover.service.client import ServiceClient
    from proofflow.prover.service.protocol import ProveJob, StageJob
    from proofflow.spec import MemoryKind
    log2 = 10
    key_dir = tmp_path / f"mimc-{log2}"
    circuit = get_circuit("mimc", log2)
    pk = generator.setup(circuit, seed=4, backend="gpu")
    pk.save(key_dir)
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "1")
    staging = SharedStaging.from_settings()
    client = ServiceClient("gpu", 0, idle_s=60)
    try:
        assert client.ensure_running() is not None
        for i in range(2):
            holder = f"t/r/p{i:04d}"
            out = pipeline.synthesize_shared(circuit, 5, i, staging, holder)
            client.stage(StageJob(out["segment"], MemoryKind.PINNED, holder))
            reply = client.prove(ProveJob(str(key_dir), "mimc", log2, "bls12_381", out["segment"], out["n"], MemoryKind.PINNED,
                                          holder))
            public = [int(x, 16) for x in out["public_inputs"]]
            assert verifier.verify(pk.vk, public, Proof.from_bytes(pk.curve, reply.proof))
            assert "msm" in {s.phase for s in reply.spans}
            staging.release(out["segment"])
    finally:
        client.stop()
