"""The drop-in's proof through the device's warm prover service (``proofflow.prover.service``).

A call in its own process would pay the CUDA context, the kernels' load and the key's upload
each time; the service keeps them between calls and goes away after PROOFFLOW_SERVICE_IDLE_S
idle. The caller writes a/b/c (by the zkey's matrices, c = a·b) and the witness straight
into a shared staging segment, sends a job naming the zkey's cache entry (the service loads
its key once: ``KeyCache.get_zkey``), releases the segment whatever happens, and checks the
returned proof against the zkey's verifying key itself.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from proofflow import settings
from proofflow.phases import Phase
from proofflow.prover import pipeline
from proofflow.prover.circom.prover import check, zkey_abc
from proofflow.prover.circom.zkey import ZKey
from proofflow.prover.errors import InputError
from proofflow.prover.groth16.data_structures import Proof
from proofflow.prover.service.client import ServiceClient, ServiceError, least_busy
from proofflow.prover.service.protocol import KeySource, ProveJob
from proofflow.prover.staging.shared import SharedStaging
from proofflow.spec import MemoryKind


@dataclass(frozen=True)
class ServiceUse:
    """The service that proved: its pid, device and socket, the seconds this call spent
    starting it (None: it was running), and whether it loaded the key for this proof."""
    pid: int
    device: str
    socket: Path
    started_s: float | None
    key_loaded: bool


def prove(zkey: ZKey, entry: Path, witness: np.ndarray, backend: str) -> tuple[Proof, ServiceUse]:
    """A proof of ``witness`` (the zkey's size) with the zkey whose cache entry is ``entry``,
    by ``backend``'s ("cpu" or "gpu") service, started if none runs. A job the service
    refuses for its inputs (a witness that does not satisfy the circuit) is an InputError."""
    config = settings.current()
    device = least_busy(backend, list(config.gpu_devices)) if backend == "gpu" else 0
    client = ServiceClient(backend, device)
    started = client.ensure_running()
    staging = SharedStaging.from_settings(config)
    holder = f"groth16/{socket.gethostname()}/{os.getpid()}"

    def fill(abc: tuple, w: np.ndarray) -> None:
        zkey_abc(zkey, witness, out=abc)
        np.copyto(w, witness)
    # bound: a call killed while it waits for the proof leaves no lease behind
    segment = pipeline.write_shared(staging, holder, zkey.domain_size, zkey.n_vars, fill, bound=True)
    try:
        reply = client.prove(ProveJob(str(entry), zkey.pk.circuit, zkey.pk.log2, zkey.curve.name, segment,
                                      zkey.domain_size, MemoryKind.PINNED, holder, key_source=KeySource.ZKEY))
    except ServiceError as exc:
        if not exc.error_type.retryable:
            raise InputError(str(exc)) from None
        raise
    finally:
        staging.release(segment)
    proof = Proof.from_bytes(zkey.curve, reply.proof)
    check(zkey.vk, zkey.n_public, witness, proof)
    return proof, ServiceUse(reply.pid, reply.device, client.path, started,
                             any(s.phase is Phase.KEY_LOAD for s in reply.spans))
