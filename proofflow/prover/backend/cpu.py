"""The CPU backend: C field kernels for the NTTs, the curve's point library (arkworks) for the
MSMs, on ``threads`` threads (``cpu_threads``: a proof's MSMs at once, large ones split)."""
from __future__ import annotations

import time

import numpy as np

from proofflow.prover import points
from proofflow.prover.backend import cpu_threads
from proofflow.prover.backend.base import Backend, MsmJob, Transfer
from proofflow.prover.polynomial.domain import Radix2Domain


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, threads: int = 1):
        if threads < 1:
            raise ValueError(f"the CPU backend needs at least one thread, got {threads}")
        self.threads = threads

    def ntt(self, domain, x, inverse=False):
        x = x.copy()
        return domain.intt(x) if inverse else domain.ntt(x)

    def coset_ntt(self, domain, x, inverse=False):
        x = x.copy()
        return domain.coset_intt(x) if inverse else domain.coset_ntt(x)

    def compute_h(self, domain: Radix2Domain, a, b, c):
        # Over the coset g*D, Z = g^n - 1 is a non-zero constant, so the division is exact
        # pointwise there; on D itself Z vanishes.
        ab = []
        for v in (a, b, c):
            v = domain.intt(v.copy())
            ab.append(domain.coset_ntt(v))
        ea, eb, ec = ab
        fr = domain.fr
        fr.mul(ea, eb, out=ea)
        fr.sub(ea, ec, out=ea)
        fr.mul(ea, fr.constant(pow(domain.vanishing_on_coset(), -1, fr.MODULUS)), out=ea)
        return domain.coset_intt(ea)

    def upload(self, host, kind=None):
        # The CPU computes in host memory: its "upload" is the copy into working arrays that
        # the GPU path's DMA stands for (and what `proofflow calibrate` times on a CPU). Timed
        # by this thread's CPU clock, as CUDA events time the DMA itself: waits for the GIL or
        # a core (other threads of the prover service, other processes) are not the copy's.
        t0 = time.thread_time()
        out = np.array(host, copy=True)
        return out, Transfer(out.nbytes, (time.thread_time() - t0) * 1e3, kind or "pageable")

    def msm_g1(self, table, scalars: np.ndarray):
        return self.msms([MsmJob(table, scalars, witness=False)])[0]

    def msm_g2(self, table, scalars: np.ndarray):
        return self.msms([MsmJob(table, scalars, witness=False)])[0]

    def msm_witness(self, table, scalars: np.ndarray):
        return self.msms([MsmJob(table, scalars)])[0]

    def msm_job(self, job: MsmJob):
        return (points.msm_split if job.witness else points.msm)(job.table, job.scalars)

    def msms(self, jobs: list[MsmJob]) -> list:
        if self.threads == 1:
            return [self.msm_job(job) for job in jobs]
        return cpu_threads.msms(jobs, self.threads)
