"""On a GPU: the prover service proves through the device (a/b/c and the witness uploaded
from pinned or pageable staging as the job asks, timed on the device), and a whole
proof_run with backend gpu goes through it (dag.test()); every proof verifies."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

LOG2 = 12


@pytest.fixture(scope="module")
def gpu():
    from proofflow.prover.device import available as gpu_available
    if not gpu_available():
        pytest.skip("no GPU")


@pytest.fixture(scope="module")
def key_dir(gpu, tmp_path_factory):
    from proofflow.prover.circuits import get_circuit
    from proofflow.prover.groth16 import generator
    d = tmp_path_factory.mktemp("gpukey") / f"mimc-{LOG2}"
    generator.setup(get_circuit("mimc", LOG2), seed=3, backend="gpu").save(d)
    return d


def test_service_on_the_gpu_uploads_from_the_staging_asked_for(key_dir, tmp_path, monkeypatch):
    from proofflow.prover.circuits import get_circuit
    from proofflow.prover.groth16 import r1cs_to_qap, verifier
    from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
    from proofflow.prover.service.client import ServiceClient
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    circuit = get_circuit("mimc", LOG2)
    vk = VerifyingKey.load(key_dir / "vk.json")
    client = ServiceClient("gpu", 0, idle_s=60)
    try:
        assert client.ensure_running() is not None
        for i, staging in enumerate(("pinned", "pageable", "pinned")):
            inst = circuit.instance(5, i)
            abc = np.stack(r1cs_to_qap.witness_map(circuit.constraint_system, inst.witness))
            d = tmp_path / f"p{i}"
            d.mkdir()
            abc.tofile(d / "abc.staged")
            np.save(d / "witness.npy", inst.witness)
            reply = client.prove({"params_dir": str(key_dir), "circuit": "mimc", "log2": LOG2,
                                  "abc_path": str(d / "abc.staged"), "n": abc.shape[1],
                                  "witness_path": str(d / "witness.npy"), "staging": staging})
            assert verifier.verify(vk, inst.public_inputs, Proof.from_bytes(bytes.fromhex(reply["proof"])))
            assert reply["device"] == "cuda:0"
            for direction in ("h2d", "h2d_witness"):
                nbytes, ms, kind = reply["transfers"][direction]
                assert kind == staging and ms > 0, (direction, reply["transfers"])
            phases = {p for p, _, _ in reply["spans"]}
            assert {"prefetch", "mutex_wait", "h2d", "ntt", "msm", "assemble"} <= phases
            assert ("key_upload" in phases) == (i == 0), "the key's tables go to the device once"
        st = client.status()
        assert st["jobs_done"] == 3 and st["staging"]["pinned"]["pinned"] is True
        assert st["staging"]["pinned"]["in_use"] == 0 and st["staging"]["pageable"]["in_use"] == 0
    finally:
        client.stop()


def test_proof_run_on_the_gpu_through_the_service(gpu, proof_run_dag, monkeypatch, tmp_path):
    from proofflow.timing import TimingStore
    from proofflow.prover.bundle import verify_bundle
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": 3, "backend": "gpu", "staging": "pinned"})
    store = TimingStore(url)
    run = store.run("proof_run", dr.run_id)
    assert run["backend"] == "gpu" and run["proofs_verified"] == 3
    assert all(r.ok for r in verify_bundle(run["bundle_dir"]))
    prove_rows = [r for r in store.timings("proof_run", dr.run_id, "partition.prove_gpu")]
    assert {r["device"] for r in prove_rows} == {"cuda:0"}
    h2d = [t for t in store.transfers("proof_run", dr.run_id) if t["direction"] == "h2d"]
    assert len(h2d) == 3 and {t["memory_kind"] for t in h2d} == {"pinned"}
