"""Compute backends: one interface, a CPU and a GPU implementation.

``get_backend("auto")`` picks the GPU when CuPy is installed and sees a device, else the
CPU. Importing this package never imports CuPy.
"""
from __future__ import annotations

from proofflow.prover.backend.base import Backend

BACKENDS = ("auto", "cpu", "gpu")


class BackendUnavailable(RuntimeError):
    """The backend asked for cannot run here (e.g. ``gpu`` without a visible GPU)."""


def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, or no device: all mean "no GPU"
        return False


def get_backend(name: str = "auto") -> Backend:
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    if name == "gpu" or (name == "auto" and gpu_available()):
        if not gpu_available():
            raise BackendUnavailable("backend 'gpu' asked for, but no GPU is visible (is CuPy installed and a device present?)")
        from proofflow.prover.device.backend import GpuBackend
        return GpuBackend()
    from proofflow.prover.backend.cpu import CpuBackend
    return CpuBackend()
