"""The prover service's operator requests, beside proving (``protocol``): what a farm's
operator asks a device's service and what it answers, typed on both sides.

Requests: ``{"op": "preload", "job": KeyJob}`` makes a proving key resident on the device
(loaded and uploaded as a proof's first use would, on the device thread between two proofs,
evicting the least recently used keys to fit it), so the first proof with it pays no
``key_upload``; ``{"op": "evict", "job": KeyJob}`` drops it from the device and the service's
memory. ``{"op": "status"}``'s reply is read as a ``ServiceStatus``: the job on the device,
the queue, the resident keys and the host's staging.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from proofflow.prover.errors import InputError, ProtocolError
from proofflow.prover.service.protocol import KeySource, _fields
from proofflow.spec import CURVES


@dataclass(frozen=True)
class KeyJob:
    """A proving key, as a prove job names it (``ProveJob``'s key fields)."""
    params_dir: str
    circuit: str
    log2: int
    curve: str
    key_source: KeySource = KeySource.CIRCUIT

    @classmethod
    def from_wire(cls, obj) -> "KeyJob":
        obj = _fields(cls, obj, {"params_dir": str, "circuit": str, "log2": int, "curve": str})
        if obj["curve"] not in CURVES:
            raise InputError(f"curve must be one of {', '.join(CURVES)}, got {obj['curve']!r}")
        try:
            source = KeySource(obj.get("key_source", KeySource.CIRCUIT))
        except ValueError:
            raise InputError(f"key_source must be one of {', '.join(KeySource)}, got {obj['key_source']!r}") from None
        return cls(obj["params_dir"], obj["circuit"], obj["log2"], obj["curve"], source)

    def to_wire(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class KeyLoaded:
    """A preload's answer: the key's directory and device bytes, the seconds its upload took
    (None: it was resident already) and the keys evicted to fit it."""
    device: str
    directory: str
    bytes: int
    upload_s: float | None
    evicted: tuple[str, ...] = ()

    def to_wire(self) -> dict:
        return {"ok": True, **asdict(self), "evicted": list(self.evicted)}

    @classmethod
    def from_wire(cls, obj: dict) -> "KeyLoaded":
        try:
            upload = obj["upload_s"]
            return cls(str(obj["device"]), str(obj["directory"]), int(obj["bytes"]),
                       None if upload is None else float(upload), tuple(map(str, obj["evicted"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"a malformed preload reply: {exc!r}") from None


@dataclass(frozen=True)
class JobState:
    """A prove job the service holds: queued (prefetched, waiting for the device) or on the
    device; ``since``: when it was queued, or reached the device (epoch seconds)."""
    job_id: str | None
    holder: str | None
    circuit: str
    log2: int
    since: float


@dataclass(frozen=True)
class ResidentKey:
    directory: str
    circuit: str
    log2: int
    curve: str
    bytes: int
    used_at: float  # its last proof's (or its preload's) end, epoch seconds


@dataclass(frozen=True)
class StagingState:
    """The host's shared staging as the service sees it: bytes leased to partitions, bytes of
    released segments kept for reuse, the budget, and the leases."""
    leased: int
    idle: int
    budget: int
    leases: int


@dataclass(frozen=True)
class ServiceStatus:
    device: str  # cuda:N, cpu or cpu:N
    backend: str
    pid: int
    started_at: float
    running: JobState | None
    queue: tuple[JobState, ...]  # in the order they reach the device
    jobs_done: int
    jobs_failed: int
    jobs_cancelled: int
    resident_keys: tuple[ResidentKey, ...]  # least recently used first
    key_budget_bytes: int
    key_evictions: int
    staging: StagingState
    last_error: str | None

    @classmethod
    def from_wire(cls, obj: dict) -> "ServiceStatus":
        try:
            running = obj["running"]
            return cls(str(obj["device"]), str(obj["backend"]), int(obj["pid"]), float(obj["started_at"]),
                       JobState(**running) if running else None, tuple(JobState(**j) for j in obj["queue"]),
                       int(obj["jobs_done"]), int(obj["jobs_failed"]), int(obj["jobs_cancelled"]),
                       tuple(ResidentKey(**{k: r[k] for k in ResidentKey.__dataclass_fields__})
                             for r in obj["resident_keys"]),
                       int(obj["key_budget_bytes"] or 0), int(obj["key_evictions"]),
                       StagingState(**{k: int(obj["staging"][k]) for k in StagingState.__dataclass_fields__}),
                       obj.get("last_error"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"a malformed status reply: {exc!r}") from None

    @property
    def resident_bytes(self) -> int:
        return sum(k.bytes for k in self.resident_keys)
