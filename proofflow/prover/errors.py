"""The engine's errors that callers sort on, and the registry of the names they cross a
socket under (the prover service's replies, the staging receiver's). Free of imports of the
engine, so an Airflow task can tell them apart without importing the prover."""
from __future__ import annotations

from enum import StrEnum


class InputError(ValueError):
    """A partition's inputs are unusable (missing, truncated, of another shape or key):
    proving them again cannot help. ``detail``: what is wrong without naming the input,
    where a run's failure names the input apart (``spec.RunFailure``)."""

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = detail


class KeyFormatError(ValueError):
    """A key or proof file is missing, truncated, corrupted or of another format (a table's
    point that is not on the curve among them)."""


class ProofCheckFailed(ValueError):
    """A fresh proof that does not verify; the message says why (the witness, the a/b/c
    vectors, or the key and backend)."""


class StagingTimeout(TimeoutError):
    """No room in the staging budget within the timeout."""


class CallerGone(RuntimeError):
    """The job's caller closed its connection (it was killed) before the job's device turn."""


class RunCancelled(RuntimeError):
    """The job's run was cancelled (``proofflow cancel``, or marked failed and cleaned up)
    before the job's device turn: proving it again cannot help."""


class ProtocolError(RuntimeError):
    """A peer sent something that is not a message of the protocol."""


class ErrorType(StrEnum):
    """What went wrong, as a reply names it. A name outside this registry is read as INTERNAL."""
    INPUT = "InputError"  # the job's inputs: no retry helps
    PROOF_CHECK = "ProofCheckFailed"  # a proof that does not verify: no retry helps
    REFUSED = "ValueError"  # a malformed or oversized request (a segment's header, size, owner)
    OUT_OF_MEMORY = "MemoryError"  # the device ran out; the service gave its caches back, a retry can succeed
    STAGING_TIMEOUT = "StagingTimeout"  # no room in the staging budget in time
    CALLER_GONE = "CallerGone"
    CANCELLED = "RunCancelled"  # the job's run was cancelled: no retry
    PROTOCOL = "ProtocolError"
    UNAVAILABLE = "Unavailable"  # nothing answers at the address
    INTERNAL = "InternalError"

    @classmethod
    def of(cls, exc: BaseException) -> "ErrorType":
        """The registered type of ``exc`` (the most specific one its class derives from)."""
        for kind, base in _CLASSES:
            if isinstance(exc, base):
                return kind
        return cls.INTERNAL

    @classmethod
    def named(cls, name) -> "ErrorType":
        """The type a reply names; anything else is INTERNAL."""
        try:
            return cls(name)
        except ValueError:
            return cls.INTERNAL

    @property
    def retryable(self) -> bool:
        """Whether proving the same inputs again can help."""
        return self not in (ErrorType.INPUT, ErrorType.PROOF_CHECK, ErrorType.CANCELLED)


# most specific first: InputError and ProofCheckFailed are ValueErrors too
_CLASSES = ((ErrorType.INPUT, InputError), (ErrorType.PROOF_CHECK, ProofCheckFailed),
            (ErrorType.STAGING_TIMEOUT, StagingTimeout), (ErrorType.CALLER_GONE, CallerGone),
            (ErrorType.CANCELLED, RunCancelled),
            (ErrorType.PROTOCOL, ProtocolError), (ErrorType.OUT_OF_MEMORY, MemoryError),
            (ErrorType.REFUSED, ValueError))


def error_reply(exc: BaseException) -> dict:
    """A failed request's reply: its message and registered type."""
    return {"ok": False, "error": str(exc), "error_type": ErrorType.of(exc).value}
