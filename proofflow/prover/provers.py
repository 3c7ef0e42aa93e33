"""A partition's device part behind one interface, whichever process does it: the device's
long-lived prover service (``ServiceProver``, the default) or the calling process itself
(``InProcessProver``, the naive design kept for comparison). A caller names the key, the
segment synthesis wrote and its holder; it gets the proof back with the spans and transfers
to record, and the errors it can sort on (``InputError``: no retry helps)."""
from __future__ import annotations

import abc
import time
from dataclasses import dataclass

from proofflow.phases import Phase
from proofflow.prover.errors import InputError
from proofflow.prover.service.protocol import TransferRecord
from proofflow.prover.timing import PhaseTimer, Span
from proofflow.spec import MemoryKind, RunConfig


@dataclass(frozen=True)
class Staged:
    """A segment readied for the device: when its pinning started and how long it took (0 for
    a segment pinned before), the memory it is in, and the spans besides the call's own."""
    start: float
    seconds: float
    memory_kind: MemoryKind
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Proved:
    proof: bytes
    device: str  # cuda:N, or cpu
    spans: tuple[Span, ...]  # where the time went, in the phase vocabulary
    transfers: dict  # direction (h2d, h2d_witness) -> TransferRecord
    evicted_keys: tuple[str, ...] = ()


class Prover(abc.ABC):
    def __init__(self, config: RunConfig, partition: int, standin_s: float | None = None):
        self.config, self.partition, self.standin_s = config, partition, standin_s

    @abc.abstractmethod
    def stage(self, segment: str, holder: str) -> Staged:
        """Ready ``segment`` for the device ahead of its proof."""

    @abc.abstractmethod
    def prove(self, key_dir: str, segment: str, holder: str, n: int, job_id: str) -> Proved:
        """The proof of the partition in ``segment`` with the key in ``key_dir``."""


class ServiceProver(Prover):
    """Through the prover service of the least busy of ``devices`` (started if none runs:
    its start is a ``service_start`` span)."""

    def __init__(self, config: RunConfig, partition: int, devices: list[int], standin_s: float | None = None):
        super().__init__(config, partition, standin_s)
        self.devices = devices

    def _call(self, request):
        from proofflow.prover.service.client import ServiceClient, ServiceError, least_busy
        devices, backend = self.devices, self.config.backend
        device = least_busy(backend, devices, prefer=self.partition) if len(devices) > 1 else devices[0]
        client = ServiceClient(backend, device)
        t0 = time.time()
        try:
            took = client.ensure_running()
            started = (Span(Phase.SERVICE_START, t0, t0 + took),) if took is not None else ()
            return started, request(client)
        except ServiceError as exc:
            if not exc.error_type.retryable:
                raise InputError(str(exc)) from None
            raise RuntimeError(f"partition {self.partition}: prover service: {exc}") from None

    def stage(self, segment: str, holder: str) -> Staged:
        from proofflow.prover.service.protocol import StageJob
        started, out = self._call(lambda c: c.stage(StageJob(segment, self.config.staging, holder)))
        return Staged(out["start"], out["seconds"], MemoryKind.PINNED if out["pinned"] else MemoryKind.PAGEABLE,
                      started)

    def prove(self, key_dir: str, segment: str, holder: str, n: int, job_id: str) -> Proved:
        from proofflow.prover.service.protocol import ProveJob
        c = self.config
        job = ProveJob(str(key_dir), c.circuit, c.log2, c.curve, segment, n, c.staging, holder, self.standin_s, job_id,
                       priority=c.priority)
        started, reply = self._call(lambda client: client.prove(job))
        return Proved(reply.proof, reply.device, started + reply.spans, reply.transfers, reply.evicted_keys)


class InProcessProver(Prover):
    """In this process: it loads the key (and uploads its tables), maps and pins the segment,
    for this one proof."""

    def stage(self, segment: str, holder: str) -> Staged:
        from proofflow.prover.staging.shared import SegmentError, SharedStaging
        t0 = time.time()
        try:
            SharedStaging.from_settings().lookup(segment, owner=holder)
        except SegmentError as exc:
            raise InputError(str(exc)) from None
        return Staged(t0, 0.0, self.config.staging, ())

    def prove(self, key_dir: str, segment: str, holder: str, n: int, job_id: str) -> Proved:
        from proofflow.prover import device, pipeline
        from proofflow.prover.keys import KeyCache
        from proofflow.prover.staging.mapped import MappedSegments
        from proofflow.prover.backend.by_name import get_backend
        from proofflow.prover.backend.standin import StandinBackend
        from proofflow.prover.staging.shared import SharedStaging
        c, timer, transfers = self.config, PhaseTimer(), {}
        key = KeyCache().get(key_dir, c.circuit, c.log2, timer, curve=c.curve)
        backend = get_backend(c.backend)
        label = f"cuda:{device.current()}" if backend.name == "gpu" else "cpu"
        if self.standin_s:
            backend = StandinBackend(backend, self.standin_s)
        pin = MemoryKind.effective(c.staging, backend.name) is MemoryKind.PINNED
        segments = MappedSegments(SharedStaging.from_settings(), pin=pin)
        try:
            with timer.phase(Phase.LOAD):
                staged = segments.get_for(key, segment, holder)
            with staged:
                proof = pipeline.prove(key, staged, backend, timer, transfers)
        finally:
            segments.close()
        return Proved(proof.to_bytes(), label, tuple(timer.spans),
                      {k: TransferRecord(t.nbytes, t.ms, t.kind) for k, t in transfers.items()})


def prover_for(config: RunConfig, partition: int, service: bool, devices: list[int],
               standin_s: float | None = None) -> Prover:
    """The prover a partition's task uses: the service's, unless ``service`` is off."""
    if service:
        return ServiceProver(config, partition, devices, standin_s)
    return InProcessProver(config, partition, standin_s)
