"""The service's wire format: one JSON object a line, both ways, over a Unix stream socket.

Requests: ``{"op": "prove", "job": ProveJob}``, ``{"op": "stage", "job": StageJob}`` (map and
pin a segment ahead of its proof), ``{"op": "cancel", "run": CancelRun}`` (drop a run's jobs
not yet on the device), ``{"op": "status"}``, ``{"op": "stop"}``.
Replies: ``{"ok": true, ...}`` (a prove's is a ``ProveReply``, a cancel's a ``CancelReply``) or ``{"ok": false, "error":
MESSAGE, "error_type": errors.ErrorType}``. A job names a shared staging segment, never
carries data: the caller and the service share the host (the segment is in its shared memory).
Each side builds and reads messages through the dataclasses here, which refuse a malformed
one with an ``InputError`` naming the field.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from enum import StrEnum

from proofflow.prover.errors import InputError, ProtocolError
from proofflow.phases import Phase
from proofflow.prover.timing import Span
from proofflow.spec import CURVES, MemoryKind, Priority

MAX_LINE = 1 << 20  # no message is near this; a longer line means a confused peer


def send(f, obj: dict) -> None:
    f.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    f.flush()


def recv(f) -> dict:
    line = f.readline(MAX_LINE + 1)
    if not line:
        raise ProtocolError("the peer closed the connection")
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise ProtocolError("message too long or cut off")
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    return obj


def _fields(cls, obj, required: dict) -> dict:
    """``obj``'s fields for ``cls``: a JSON object with no unknown field and each required one
    of its type (bool is no int)."""
    if not isinstance(obj, dict):
        raise InputError("the job must be a JSON object")
    unknown = sorted(set(obj) - {f.name for f in fields(cls)})
    if unknown:
        raise InputError(f"unknown job field(s) {', '.join(map(repr, unknown))}")
    for name, kind in required.items():
        value = obj.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InputError(f"job field {name!r} must be a {kind.__name__}, got {value!r}")
    return obj


def _memory_kind(value) -> MemoryKind:
    try:
        return MemoryKind(value)
    except ValueError:
        raise InputError(f"staging must be one of {', '.join(MemoryKind.choices())}, got {value!r}") from None


def _holder(value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InputError(f"holder must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class StageJob:
    """Map (and page-lock, for PINNED) a segment ahead of its proof."""
    segment: str
    staging: MemoryKind
    holder: str | None = None

    @classmethod
    def from_wire(cls, obj) -> "StageJob":
        obj = _fields(cls, obj, {"segment": str})
        return cls(obj["segment"], _memory_kind(obj.get("staging")), _holder(obj.get("holder")))

    def to_wire(self) -> dict:
        return asdict(self)


class KeySource(StrEnum):
    """What a job's ``params_dir`` holds."""
    CIRCUIT = "circuit"  # a (circuit, log2) key (keys.ensure_key), proved with the circuit's constraint system
    ZKEY = "zkey"  # a snarkjs zkey's key cache entry (circom.zkey_cache): circuit and log2 name its key


@dataclass(frozen=True)
class ProveJob:
    """One partition's proof: the key's directory, circuit and curve, the segment holding its
    a/b/c and witness (``n`` points a vector), the memory they are in; ``key_source``: the
    kind of key directory; ``priority``: its run's, which orders the service's queue."""
    params_dir: str
    circuit: str
    log2: int
    curve: str  # a registered curve's name (the key must be over it)
    segment: str
    n: int
    staging: MemoryKind
    holder: str | None = None
    standin_s: float | None = None  # stretch the device phase to this (a calibrated stand-in)
    job_id: str | None = None
    key_source: KeySource = KeySource.CIRCUIT
    priority: Priority = Priority.NORMAL

    @classmethod
    def from_wire(cls, obj) -> "ProveJob":
        obj = _fields(cls, obj, {"params_dir": str, "circuit": str, "log2": int, "curve": str, "segment": str,
                                 "n": int})
        if obj["curve"] not in CURVES:
            raise InputError(f"curve must be one of {', '.join(CURVES)}, got {obj['curve']!r}")
        n = obj["n"]
        if n <= 0 or n & (n - 1):
            raise InputError(f"n must be a power of two, got {n}")
        standin = obj.get("standin_s")
        if standin is not None and (not isinstance(standin, (int, float)) or isinstance(standin, bool)
                                    or not 0 < standin < math.inf):
            raise InputError(f"standin_s must be a positive number, got {standin!r}")
        job_id = obj.get("job_id")
        if job_id is not None and not isinstance(job_id, str):
            raise InputError(f"job_id must be a string, got {job_id!r}")
        try:
            source = KeySource(obj.get("key_source", KeySource.CIRCUIT))
        except ValueError:
            raise InputError(f"key_source must be one of {', '.join(KeySource)}, got {obj['key_source']!r}") from None
        try:
            priority = Priority(obj.get("priority", Priority.NORMAL))
        except ValueError:
            raise InputError(f"priority must be one of {', '.join(Priority)}, got {obj['priority']!r}") from None
        return cls(obj["params_dir"], obj["circuit"], obj["log2"], obj["curve"], obj["segment"], n,
                   _memory_kind(obj.get("staging")), _holder(obj.get("holder")), standin, job_id, source, priority)

    def to_wire(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CancelRun:
    """Drop the jobs of one run that are not on the device yet: those whose holder starts with
    ``owner``, the run's prefix in the shared staging (``layout.run_owner``: ``dag/run/``)."""
    owner: str

    def __post_init__(self):
        parts = self.owner.split("/")  # one run's, never a whole DAG's: dag, run and nothing after
        if len(parts) != 3 or not all(parts[:2]) or parts[2]:
            raise InputError(f"owner must be a run's prefix (dag/run/), got {self.owner!r}")

    @classmethod
    def from_wire(cls, obj) -> "CancelRun":
        return cls(_fields(cls, obj, {"owner": str})["owner"])

    def to_wire(self) -> dict:
        return asdict(self)

    def holds(self, holder: str | None) -> bool:
        return holder is not None and holder.startswith(self.owner)


@dataclass(frozen=True)
class CancelReply:
    """What a cancel did on one device: ``dropped`` jobs of the run that were waiting (their
    callers answered ``RunCancelled``, their staging segments released); ``on_device``: the
    run's jobs whose kernels were already running, left to finish."""
    device: str
    dropped: int
    on_device: int

    def to_wire(self) -> dict:
        return {"ok": True, **asdict(self)}

    @classmethod
    def from_wire(cls, obj: dict) -> "CancelReply":
        try:
            return cls(str(obj["device"]), int(obj["dropped"]), int(obj["on_device"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"a malformed cancel reply: {exc!r}") from None


@dataclass(frozen=True)
class TransferRecord:
    """A timed copy, as the reply reports it (``backend.base.Transfer``'s fields, without the
    backend's imports: the light tasks that talk to the service import no numpy)."""
    nbytes: int
    ms: float
    kind: MemoryKind


@dataclass(frozen=True)
class ProveReply:
    proof: bytes
    device: str  # cuda:N, or cpu
    pid: int
    spans: tuple[Span, ...]
    transfers: dict  # direction (h2d, h2d_witness) -> TransferRecord
    evicted_keys: tuple[str, ...] = ()

    def to_wire(self) -> dict:
        return {"ok": True, "proof": self.proof.hex(), "device": self.device, "pid": self.pid,
                "spans": [[s.phase.value, s.start, s.end] for s in self.spans],
                "transfers": {k: [t.nbytes, t.ms, t.kind.value] for k, t in self.transfers.items()},
                "evicted_keys": list(self.evicted_keys)}

    @classmethod
    def from_wire(cls, obj: dict) -> "ProveReply":
        try:
            return cls(bytes.fromhex(obj["proof"]), str(obj["device"]), int(obj["pid"]),
                       tuple(Span(Phase(p), float(s), float(e)) for p, s, e in obj["spans"]),
                       {str(k): TransferRecord(int(b), float(ms), MemoryKind(kind))
                        for k, (b, ms, kind) in obj["transfers"].items()},
                       tuple(map(str, obj.get("evicted_keys") or ())))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"a malformed prove reply: {exc!r}") from None
