"""What the GPU code is told by its callers, who build it from their settings
(``proofflow.prover.backend.device_options``): this package reads no settings itself."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DeviceOptions:
    kernel_dir: Path  # where the compiled kernels (cubins) are kept (cache.py)
    curve_variant: str | None  # the curve kernels' product variant (source.CURVE_VARIANTS); None: each group's best
    msm_balanced: bool  # MSM buckets accumulated in balanced spans, else in pieces (pippenger.msm)
    msm_overlap: bool  # a proof's MSMs at once, each in a lane of its own (overlap.py)
    msm_precompute: int | None  # bytes of precomputed copies a key may add; None: auto (pippenger.copies_budget)
    cuda_archs: tuple[str, ...]  # compute capabilities to build for; empty: the visible device's
