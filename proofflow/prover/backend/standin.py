"""A calibrated stand-in for a GPU phase, for measuring orchestration on machines without one.

``StandinBackend(inner, phase_s)`` computes everything on ``inner`` (the proofs stay real and
verify) and stretches each proof's device phase (``Backend.device_phase``: the uploads through
the last MSM) to ``phase_s`` seconds by sleeping until its deadline. Sleeping, not spinning:
a real GPU phase leaves the host's cores to synthesis, and so does this. The pipeline
benchmark then sees the timing of a GPU phase of a known length on any machine.
"""
from __future__ import annotations

import contextlib
import time

from proofflow.prover.backend.base import Backend


class StandinBackend(Backend):
    def __init__(self, inner: Backend, phase_s: float):
        if not phase_s > 0:
            raise ValueError(f"the stand-in phase must be positive, got {phase_s!r}")
        self.inner, self.phase_s = inner, float(phase_s)
        self.name = f"{inner.name}+standin"
        self.g2_on_host = inner.g2_on_host
        self.overruns = 0  # phases whose real work took longer than phase_s

    @contextlib.contextmanager
    def device_phase(self):
        deadline = time.perf_counter() + self.phase_s
        with self.inner.device_phase():
            yield
        left = deadline - time.perf_counter()
        if left > 0:
            time.sleep(left)
        else:
            self.overruns += 1

    def ntt(self, domain, x, inverse=False):
        return self.inner.ntt(domain, x, inverse)

    def coset_ntt(self, domain, x, inverse=False):
        return self.inner.coset_ntt(domain, x, inverse)

    def compute_h(self, domain, a, b, c):
        return self.inner.compute_h(domain, a, b, c)

    def compute_h_odd_coset(self, domain, a, b, c):
        return self.inner.compute_h_odd_coset(domain, a, b, c)

    def compute_h_resident(self, domain, a, b, c, basis="monomial"):
        return self.inner.compute_h_resident(domain, a, b, c, basis)

    def upload(self, host, kind=None):
        return self.inner.upload(host, kind)

    def msm_g1(self, table, scalars):
        return self.inner.msm_g1(table, scalars)

    def msm_g2(self, table, scalars):
        return self.inner.msm_g2(table, scalars)

    def msm_witness(self, table, scalars):
        return self.inner.msm_witness(table, scalars)

    def msms(self, jobs):
        return self.inner.msms(jobs)
