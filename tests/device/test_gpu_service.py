"""On a GPU: the prover service proves through the device (a/b/c and the witness uploaded
from their shared segment, page-locked in place or not as the job asks, timed on the
device), and a whole proof_run with backend gpu goes through it (dag.test()); every proof
verifies. Each over every registered curve (a service starts with the default curve's
kernels warm and warms another's with its first key)."""
import pytest

from proofflow.prover.curves import registry

pytestmark = pytest.mark.gpu

LOG2 = 12


@pytest.fixture(scope="module")
def gpu():
    from proofflow.prover.device import available as gpu_available
    if not gpu_available():
        pytest.skip("no GPU")


@pytest.fixture(scope="module", params=registry.NAMES)
def key_dir(gpu, tmp_path_factory, request):
    """A MiMC key over the curve the parameter names, made by the GPU's setup."""
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator
    d = tmp_path_factory.mktemp("gpukey") / f"mimc-{LOG2}-{request.param}"
    generator.setup(get_circuit("mimc", LOG2, request.param), seed=3, backend="gpu").save(d)
    return d


def test_service_on_the_gpu_uploads_from_the_staging_asked_for(key_dir, tmp_path, monkeypatch):
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import verifier
    from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
    from proofflow.prover.service.client import ServiceClient
    from proofflow.prover.service.protocol import ProveJob, StageJob
    from proofflow.spec import MemoryKind
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    vk = VerifyingKey.load(key_dir / "vk.json")
    circuit = get_circuit("mimc", LOG2, vk.curve.name)
    staging = SharedStaging.from_settings()
    client = ServiceClient("gpu", 0, idle_s=60)
    try:
        assert client.ensure_running() is not None
        for i, kind in enumerate(("pinned", "pageable", "pinned", "pinned")):
            holder = f"t/r/p{i:04d}"
            out = pipeline.synthesize_shared(circuit, 5, i, staging, holder)
            staged = client.stage(StageJob(out["segment"], MemoryKind(kind), holder))
            assert staged["pinned"] == (kind == "pinned")
            # released segments are leased again in place: the third pinned partition's was pinned before
            assert staged["cached"] == (i == 3), (i, staged)
            reply = client.prove(ProveJob(str(key_dir), "mimc", LOG2, vk.curve.name, out["segment"], out["n"],
                                          MemoryKind(kind), holder))
            public = [int(x, 16) for x in out["public_inputs"]]
            assert verifier.verify(vk, public, Proof.from_bytes(vk.curve, reply.proof))
            assert reply.device == "cuda:0"
            for direction in ("h2d", "h2d_witness"):
                t = reply.transfers[direction]
                assert t.kind == kind and t.ms > 0, (direction, reply.transfers)
            phases = {s.phase for s in reply.spans}
            assert {"prefetch", "mutex_wait", "h2d", "ntt", "msm", "assemble"} <= phases
            assert ("key_upload" in phases) == (i == 0), "the key's tables go to the device once"
            if i != 1:
                staging.release(out["segment"])  # the pageable one stays leased: the next pinned one is new
        st = client.status()
        assert st["jobs_done"] == 4 and st["queued"] == 0
        assert st["segments"]["pinned"]["pinned"] is True and st["segments"]["pinned"]["mapped"] == 2
    finally:
        client.stop()


@pytest.mark.parametrize("curve", registry.NAMES)
def test_proof_run_on_the_gpu_through_the_service(gpu, proof_run_dag, monkeypatch, tmp_path, curve):
    from proofflow.timing import TimingStore
    from proofflow.prover.bundle import verify_bundle
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": 3, "backend": "gpu", "staging": "pinned",
                                      "curve": curve})
    store = TimingStore(url)
    run = store.run("proof_run", dr.run_id)
    assert (run["backend"], run["curve"], run["proofs_verified"]) == ("gpu", curve, 3)
    assert all(r.ok for r in verify_bundle(run["bundle_dir"]))
    prove_rows = [r for r in store.timings("proof_run", dr.run_id, "partition.prove_gpu")]
    assert {r["device"] for r in prove_rows} == {"cuda:0"}
    h2d = [t for t in store.transfers("proof_run", dr.run_id) if t["direction"] == "h2d"]
    assert len(h2d) == 3 and {t["memory_kind"] for t in h2d} == {"pinned"}
