"""The backend a name asks for (``spec.BACKENDS``): ``auto`` picks the GPU when CuPy is
installed and sees a device, else the CPU."""
from __future__ import annotations

from proofflow import spec
from proofflow.prover import device
from proofflow.prover.backend.base import Backend


class BackendUnavailable(RuntimeError):
    """The backend asked for cannot run here (e.g. ``gpu`` without a visible GPU)."""


def get_backend(name: str = "auto") -> Backend:
    if name not in spec.BACKENDS:
        raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(spec.BACKENDS)}")
    try:
        resolved = spec.resolve_backend(name, device.available)
    except spec.InvalidParams as exc:
        raise BackendUnavailable(str(exc)) from None
    if resolved == "gpu":
        from proofflow.prover.device.backend import GpuBackend
        return GpuBackend()
    from proofflow.prover.backend.cpu import CpuBackend
    return CpuBackend()
