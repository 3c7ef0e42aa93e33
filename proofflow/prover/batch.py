"""Prove many partitions of one circuit into a proof bundle: the work the CLI's ``prove``
and ``demo`` do in one process, and each proof-run partition does in its Airflow tasks."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow.prover import bundle
from proofflow.prover.backend.base import Backend
from proofflow.prover.circuits import Circuit
from proofflow.prover.groth16 import prover as groth16_prover
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.groth16.data_structures import ProvingKey
from proofflow.prover.staging import StagingPool
from proofflow.prover.timing import PhaseTimer

STAGING_TIMEOUT_S = 600.0


@dataclass
class PartitionReport:
    partition: int
    public_inputs: list[int]
    timer: PhaseTimer = field(default_factory=PhaseTimer)


def abc_bytes(circuit: Circuit) -> int:
    """Bytes of one partition's a/b/c vectors (three domain-sized Fr vectors)."""
    return 3 * r1cs_to_qap.domain_for(circuit.constraint_system).size * 32


def prove_partition(pk: ProvingKey, circuit: Circuit, seed: int, partition: int, backend: Backend,
                    pool: StagingPool | None = None) -> tuple:
    """Synthesize and prove one partition; returns (proof, report). With a staging pool,
    synthesis writes a/b/c straight into one of its (pinned) buffers: no extra host copy
    stands between synthesis and the upload."""
    report_timer = PhaseTimer()
    n = r1cs_to_qap.domain_for(circuit.constraint_system).size
    with contextlib.ExitStack() as stack:
        out = None
        if pool is not None:
            with report_timer.phase("staging_wait"):
                buf = stack.enter_context(pool.acquire(abc_bytes(circuit), timeout=STAGING_TIMEOUT_S))
            block = buf.view(np.uint64, (3, n, 4))
            out = (block[0], block[1], block[2])
        with report_timer.phase("synthesis"):
            inst = circuit.instance(seed, partition)
            abc = r1cs_to_qap.witness_map(circuit.constraint_system, inst.witness, out=out)
        proof = groth16_prover.prove(pk, circuit.constraint_system, inst.witness, backend, abc=abc,
                                     timer=report_timer)
    return proof, PartitionReport(partition, inst.public_inputs, report_timer)


def prove_to_bundle(pk: ProvingKey, circuit: Circuit, partitions: int, seed: int, out_dir, backend: Backend,
                    progress: Callable[[PartitionReport], None] | None = None,
                    pool: StagingPool | None = None) -> list[PartitionReport]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    reports = []
    for i in range(partitions):
        proof, report = prove_partition(pk, circuit, seed, i, backend, pool)
        bundle.write_proof(out_dir, i, proof)
        reports.append(report)
        if progress:
            progress(report)
    bundle.write_manifest(out_dir, circuit.name, circuit.log2, pk.vk, [(r.partition, r.public_inputs) for r in reports])
    return reports
