"""The backend a name asks for (``spec.BACKENDS``): ``auto`` picks the GPU when CuPy is
installed and sees a device, else the CPU; ``device_options`` gives the GPU code its
settings, and the CPU backend gets its thread count (``PROOFFLOW_CPU_THREADS``) here."""
from __future__ import annotations

from proofflow import settings, spec
from proofflow.prover import device
from proofflow.prover.backend.base import Backend
from proofflow.prover.device.options import DeviceOptions


class BackendUnavailable(RuntimeError):
    """The backend asked for cannot run here (e.g. ``gpu`` without a visible GPU)."""


def device_options(s: settings.Settings) -> DeviceOptions:
    """The GPU code's options, as settings ``s`` give them."""
    return DeviceOptions(kernel_dir=s.kernel_dir, curve_variant=s.curve_variant, msm_balanced=s.msm_balanced,
                         msm_overlap=s.msm_overlap, msm_precompute=s.msm_precompute, cuda_archs=s.cuda_archs)


def resolve(name: str = "auto") -> str:
    """"cpu" or "gpu": where backend ``name`` computes here (without creating it)."""
    if name not in spec.BACKENDS:
        raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(spec.BACKENDS)}")
    try:
        return spec.resolve_backend(name, device.available)
    except spec.InvalidParams as exc:
        raise BackendUnavailable(str(exc)) from None


def get_backend(name: str = "auto", options: DeviceOptions | None = None) -> Backend:
    """Backend ``name``; a GPU one with ``options`` (default: this process's settings'), a
    CPU one with this process's ``cpu_threads``."""
    if resolve(name) == "gpu":
        from proofflow.prover.device.backend import GpuBackend
        return GpuBackend(options or device_options(settings.current()))
    from proofflow.prover.backend.cpu import CpuBackend
    return CpuBackend(settings.current().cpu_threads)
