"""A proving key and partitions' inputs as proof_run leaves them for the prover service
(raw a/b/c block, witness .npy), and the jobs naming them: shared by the service tests."""
from __future__ import annotations

from pathlib import Path

import numpy as np

LOG2 = 8


def make_key(d: Path, log2: int = LOG2, seed: int = 5) -> Path:
    from proofflow.prover.circuits import get_circuit
    from proofflow.prover.groth16 import generator
    generator.setup(get_circuit("mimc", log2), seed=seed).save(d)
    return d


def partition(tmp_path: Path, partition: int, log2: int = LOG2, seed: int = 11):
    """(directory, n, public inputs) of one partition's inputs."""
    from proofflow.prover.circuits import get_circuit
    from proofflow.prover.groth16 import r1cs_to_qap
    circuit = get_circuit("mimc", log2)
    inst = circuit.instance(seed, partition)
    abc = np.stack(r1cs_to_qap.witness_map(circuit.constraint_system, inst.witness))
    d = Path(tmp_path) / f"p{partition}"
    d.mkdir()
    abc.tofile(d / "abc.staged")
    np.save(d / "witness.npy", inst.witness)
    return d, abc.shape[1], inst.public_inputs


def job(key_dir: Path, d: Path, n: int, log2: int = LOG2, **extra) -> dict:
    return {"params_dir": str(key_dir), "circuit": "mimc", "log2": log2, "abc_path": str(d / "abc.staged"), "n": n,
            "witness_path": str(d / "witness.npy"), "staging": "pinned", **extra}


def job_bytes(n: int, log2: int = LOG2) -> int:
    """The staging budget one job takes (a/b/c and the witness, in one block)."""
    from proofflow.prover.circuits import get_circuit
    from proofflow.prover.staging import StagingPool
    return StagingPool.block_size(3 * n * 32 + get_circuit("mimc", log2).constraint_system.num_variables * 32)


def verifies(key_dir: Path, reply: dict, public) -> bool:
    from proofflow.prover.groth16 import verifier
    from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
    vk = VerifyingKey.load(Path(key_dir) / "vk.json")
    return verifier.verify(vk, public, Proof.from_bytes(bytes.fromhex(reply["proof"])))
