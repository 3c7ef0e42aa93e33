"""snarkjs keys on the GPU: a test-only zkey written by the GPU's fixed-base kernels is the
CPU's byte for byte, and the GPU backend's proofs with it verify. (The snarkjs toolchain
checks the same keys and proofs in tests/circom and bench/snarkjs.py.)"""
from __future__ import annotations

import pytest

from proofflow.prover.device import available as gpu_available
from gpu_options import options

pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    from bench.snarkjs import write_chain_r1cs, write_chain_wtns
    d = tmp_path_factory.mktemp("chain")
    write_chain_r1cs(d / "chain.r1cs", 10)
    write_chain_wtns(d / "chain.wtns", 10, x=3, c=11)
    return d


def test_gpu_written_zkey_equals_the_cpus_and_its_gpu_proofs_verify(chain, tmp_path):
    from proofflow.prover import pipeline
    from proofflow.prover.keys import Key
    from proofflow.prover.staging.pool import staging_pool
    from proofflow.prover.staging.segment import abc_bytes
    from proofflow.prover.staging.staged import Staged
    from proofflow.prover.backend.cpu import CpuBackend
    from proofflow.prover.circom import prove, read_r1cs, read_wtns, read_zkey, setup, verify
    from proofflow.prover.device.backend import GpuBackend
    from proofflow.prover.groth16 import r1cs_to_qap
    r1cs = read_r1cs(chain / "chain.r1cs")
    fr = r1cs.cs.fr
    gpu = GpuBackend(options())
    setup.write_test_zkey(r1cs, 5, tmp_path / "gpu.zkey", gpu)
    setup.write_test_zkey(r1cs, 5, tmp_path / "cpu.zkey", CpuBackend())
    assert (tmp_path / "gpu.zkey").read_bytes() == (tmp_path / "cpu.zkey").read_bytes()
    zkey, witness = read_zkey(tmp_path / "gpu.zkey"), read_wtns(chain / "chain.wtns", r1cs.cs.curve)
    public = fr.to_ints(witness[1:zkey.n_public + 1])
    for backend in (gpu, GpuBackend(options(), g2_on_gpu=False)):  # the G2 MSM on the device, and on the host
        assert verify(zkey.vk, public, prove(zkey, witness, backend, r1cs=r1cs))
    # through the pipeline, from pinned staging memory, as the prover service proves
    key = Key(zkey.pk, r1cs.cs)
    n = r1cs_to_qap.domain_for(r1cs.cs).size
    with staging_pool(pinned=True).acquire(abc_bytes(n)) as buf:
        block = buf.view("uint64", (3, n, 4))
        abc = r1cs_to_qap.witness_map(r1cs.cs, witness, out=(block[0], block[1], block[2]))
        transfers = {}
        proof = pipeline.prove(key, Staged(abc, witness, buf), gpu, transfers=transfers)
    assert transfers["h2d"].kind == "pinned" and verify(zkey.vk, public, proof)


def test_a_registered_circuit_through_the_prover_service_on_the_gpu(chain, tmp_path, monkeypatch):
    """A registered circom circuit's partition, synthesized into shared staging and pinned
    in place as proof_run stages it, proved by the GPU's prover service; snarkjs's verifying
    key accepts the proof."""
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circom import read_r1cs, read_verification_key, registry, setup, verify
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.device.backend import GpuBackend
    from proofflow.prover.groth16.data_structures import Proof
    from proofflow.prover.service.client import ServiceClient
    from proofflow.prover.service.protocol import ProveJob, StageJob
    from proofflow.spec import MemoryKind
    for var, sub in (("PROOFFLOW_HOME", "home"), ("PROOFFLOW_RUNTIME", "rt")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(chain))  # where its witness lies
    setup.write_test_zkey(read_r1cs(chain / "chain.r1cs"), 9, tmp_path / "chain.zkey", GpuBackend(options()))
    info = registry.add("chain", chain / "chain.r1cs", tmp_path / "chain.zkey")
    circuit = get_circuit("chain", info["log2"])
    out = pipeline.synthesize_shared(circuit, 0, 0, SharedStaging.from_settings(), "t/r/p0000",
                                     input=str(chain / "chain.wtns"))
    client = ServiceClient("gpu", 0, idle_s=60)
    try:
        client.ensure_running()
        assert client.stage(StageJob(out["segment"], MemoryKind.PINNED))["pinned"]
        reply = client.prove(ProveJob(str(registry.key_dir("chain")), "chain", info["log2"], info["curve"], out["segment"], out["n"],
                                      MemoryKind.PINNED))
    finally:
        client.stop()
    vk = read_verification_key(registry.circuit_dir("chain") / "verification_key.json")
    public = [int(x, 16) for x in out["public_inputs"]]
    assert reply.transfers["h2d"].kind == "pinned" and reply.device == "cuda:0"
    assert verify(vk, public, Proof.from_bytes(vk.curve, reply.proof))
