"""snarkjs keys on the GPU, for each registered curve (circom's bls12381 and bn128 primes): a
test-only zkey written by the GPU's fixed-base kernels is the CPU's byte for byte, and the
GPU backend's proofs with it verify, through snarkjs's JSON files as `snarkjs groth16
verify` reads them. (The snarkjs toolchain checks the same keys and proofs in tests/circom,
tests/ethereum and bench/snarkjs.py.)"""
from __future__ import annotations

import pytest

from proofflow.prover.curves import registry
from proofflow.prover.device import available as gpu_available
from gpu_options import options

pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", params=list(registry.CURVES.values()), ids=registry.NAMES)
def chain(request, tmp_path_factory):
    """The chain circuit's r1cs and a witness over the curve's scalar field, as circom -p
    (bls12381, bn128) and its witness generator write them."""
    from bench.snarkjs import write_chain_r1cs, write_chain_wtns
    d = tmp_path_factory.mktemp(f"chain-{request.param.name}")
    write_chain_r1cs(d / "chain.r1cs", 10, request.param)
    write_chain_wtns(d / "chain.wtns", 10, x=3, c=11, curve=request.param)
    return d


def test_gpu_written_zkey_equals_the_cpus_and_its_gpu_proofs_verify(chain, tmp_path):
    from proofflow.prover import pipeline
    from proofflow.prover.keys import Key
    from proofflow.prover.staging.pool import staging_pool
    from proofflow.prover.staging.segment import abc_bytes
    from proofflow.prover.staging.staged import Staged
    from proofflow.prover.backend.cpu import CpuBackend
    from proofflow.prover.circom import (prove, read_r1cs, read_wtns, read_zkey, setup, verify, verify_files,
                                         write_proof, write_public)
    from proofflow.prover.circom.snarkjs_json import write_verification_key
    from proofflow.prover.device.backend import GpuBackend
    from proofflow.prover.groth16 import r1cs_to_qap
    r1cs = read_r1cs(chain / "chain.r1cs")
    fr = r1cs.cs.fr
    gpu = GpuBackend(options())
    setup.write_test_zkey(r1cs, 5, tmp_path / "gpu.zkey", gpu)
    setup.write_test_zkey(r1cs, 5, tmp_path / "cpu.zkey", CpuBackend())
    assert (tmp_path / "gpu.zkey").read_bytes() == (tmp_path / "cpu.zkey").read_bytes()
    zkey, witness = read_zkey(tmp_path / "gpu.zkey"), read_wtns(chain / "chain.wtns", r1cs.cs.curve)
    assert zkey.vk.curve.name == r1cs.cs.curve.name
    public = fr.to_ints(witness[1:zkey.n_public + 1])
    write_verification_key(tmp_path / "verification_key.json", zkey.vk)
    write_public(tmp_path / "public.json", public)
    for backend in (gpu, GpuBackend(options(), g2_on_gpu=False)):  # the G2 MSM on the device, and on the host
        proof = prove(zkey, witness, backend, r1cs=r1cs)
        write_proof(tmp_path / "proof.json", proof)
        assert verify(zkey.vk, public, proof)
        assert verify_files(tmp_path / "verification_key.json", tmp_path / "public.json", tmp_path / "proof.json")
        assert not verify(zkey.vk, [(public[0] + 1) % fr.MODULUS, *public[1:]], proof)
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
    in place as proof_run stages it, proved by the GPU's prover service (a circuit over a
    curve other than the default: its modules warmed with its key); snarkjs's verifying key
    accepts the proof."""
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circom import read_r1cs, read_verification_key, registry as circuits, setup, verify
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.device.backend import GpuBackend
    from proofflow.prover.groth16.data_structures import Proof
    from proofflow.prover.service.client import ServiceClient
    from proofflow.prover.service.protocol import ProveJob, StageJob
    from proofflow.spec import MemoryKind
    for var, sub in (("PROOFFLOW_HOME", "home"), ("PROOFFLOW_RUNTIME", "rt")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(chain))  # where its witness lies
    r1cs = read_r1cs(chain / "chain.r1cs")
    setup.write_test_zkey(r1cs, 9, tmp_path / "chain.zkey", GpuBackend(options()))
    info = circuits.add("chain", chain / "chain.r1cs", tmp_path / "chain.zkey")
    assert info["curve"] == r1cs.cs.curve.name
    circuit = get_circuit("chain", info["log2"], info["curve"])
    out = pipeline.synthesize_shared(circuit, 0, 0, SharedStaging.from_settings(), "t/r/p0000",
                                     input=str(chain / "chain.wtns"))
    client = ServiceClient("gpu", 0, idle_s=60)
    try:
        client.ensure_running()
        assert client.stage(StageJob(out["segment"], MemoryKind.PINNED))["pinned"]
        reply = client.prove(ProveJob(str(circuits.key_dir("chain")), "chain", info["log2"], info["curve"],
                                      out["segment"], out["n"], MemoryKind.PINNED))
    finally:
        client.stop()
    vk = read_verification_key(circuits.circuit_dir("chain") / "verification_key.json")
    public = [int(x, 16) for x in out["public_inputs"]]
    assert reply.transfers["h2d"].kind == "pinned" and reply.device == "cuda:0"
    assert vk.curve.name == info["curve"] and verify(vk, public, Proof.from_bytes(vk.curve, reply.proof))
