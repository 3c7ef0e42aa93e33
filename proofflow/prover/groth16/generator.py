"""Groth16 setup, deterministic from a seed.

The toxic waste (tau, alpha, beta, gamma, delta) is derived from the seed, so these keys
are for tests and benchmarks only: whoever knows the seed can forge proofs. The key files
carry that warning. The fixed-base multiplications (one per key point) dominate; they run
on the backend where it has a kernel for them (the GPU's), else through arkworks in a pool
of worker processes. Both give the same bytes, so a seed gives the same key files either way.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Callable

import numpy as np

from proofflow import settings
from proofflow.prover import curve
from proofflow.prover.backend import get_backend
from proofflow.prover.backend.base import Backend
from proofflow.prover.circuits import Circuit
from proofflow.prover.circuits.base import derive
from proofflow.prover.curve import PointTable
from proofflow.prover.field import fr
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.groth16.data_structures import ProvingKey, VerifyingKey

_CHUNK = 2048
_SERIAL_BELOW = 4096


def _generator_multiples(job: tuple[str, bytes]) -> bytes:
    """xy-LE encodings of s * G for each 32-byte little-endian scalar s (a worker's job)."""
    group, raw = job
    g = curve.point_class(group)()
    Scalar = curve.Scalar
    return b"".join((g * Scalar.from_le_bytes(raw[i:i + 32])).to_xy_bytes_le() for i in range(0, len(raw), 32))


def fixed_base(group: str, scalars: np.ndarray, progress: Callable[[int], None] | None = None,
               workers: int | None = None) -> PointTable:
    """[s * G for s in scalars] for the group's generator G."""
    raw = fr.to_bytes_le(scalars)
    step = 32 * _CHUNK
    jobs = [(group, raw[i:i + step]) for i in range(0, len(raw), step)]
    workers = workers or settings.setup_workers()
    parts = []
    if len(scalars) < _SERIAL_BELOW or workers <= 1:
        results = map(_generator_multiples, jobs)
        pool = None
    else:
        # forkserver, not fork: a process that holds a CUDA context (the GPU worker's, the
        # prover service's) must not fork workers, whose copies of it can hang
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("forkserver"))
        results = pool.map(_generator_multiples, jobs)
    try:
        for part in results:
            parts.append(part)
            if progress:
                progress(len(part) // curve.XY_BYTES[group])
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    width = curve.XY_BYTES[group]
    return PointTable(group, np.frombuffer(b"".join(parts), dtype=np.uint8).reshape(-1, width).copy())


def toxic_waste(seed: int) -> dict[str, int]:
    return {name: derive("proofflow/groth16/toxic-waste", seed, name) or 1
            for name in ("tau", "alpha", "beta", "gamma", "delta")}


def setup(circuit: Circuit, seed: int, progress: Callable[[str, int, int], None] | None = None,
          backend: Backend | str | None = None) -> ProvingKey:
    """Proving key (with its verifying key) for ``circuit``; ``progress(stage, done, total)``.
    ``backend`` (a Backend or a name for ``proofflow.prover.backend.get_backend``) computes the key
    tables where it can (``Backend.fixed_base``); None: arkworks on the CPU."""
    if isinstance(backend, str):
        backend = get_backend(backend)

    def multiples(group: str, scalars: np.ndarray, on_points=None) -> PointTable:
        table = backend.fixed_base(group, scalars, on_points) if backend is not None else None
        return table if table is not None else fixed_base(group, scalars, on_points)

    cs = circuit.constraint_system
    tw = toxic_waste(seed)
    p = fr.MODULUS
    tau, alpha, beta, gamma, delta = (tw[k] for k in ("tau", "alpha", "beta", "gamma", "delta"))
    domain, u, v, w = r1cs_to_qap.evaluate_at(cs, tau)
    n, k = domain.size, cs.num_instance

    # (beta*u_i + alpha*v_i + w_i), divided by gamma for the public part, by delta for the rest.
    mixed = fr.add(fr.add(fr.mul(u, fr.constant(beta)), fr.mul(v, fr.constant(alpha))), w)
    gamma_abc = fr.mul(mixed[:k], fr.constant(pow(gamma, -1, p)))
    l_scalars = fr.mul(np.ascontiguousarray(mixed[k:]), fr.constant(pow(delta, -1, p)))
    z_over_delta = domain.evaluate_vanishing(tau) * pow(delta, -1, p) % p
    h_scalars = fr.powers(fr.constant(tau), n - 1, start=fr.constant(z_over_delta))

    jobs = [("a_query", "g1", u), ("b_g1_query", "g1", v), ("b_g2_query", "g2", v),
            ("h_query", "g1", h_scalars), ("l_query", "g1", l_scalars)]
    total = sum(len(s) for _, _, s in jobs)
    done = 0

    def tick(count: int, stage: str):
        nonlocal done
        done += count
        if progress:
            progress(stage, done, total)

    tables = {name: multiples(group, s, lambda c, name=name: tick(c, name)) for name, group, s in jobs}
    g1, g2 = curve.point_class("g1")(), curve.point_class("g2")()
    sc = curve.scalar
    vk = VerifyingKey(g1 * sc(alpha), g2 * sc(beta), g2 * sc(gamma), g2 * sc(delta),
                      multiples("g1", gamma_abc).points())
    return ProvingKey(circuit.name, circuit.log2, vk, g1 * sc(beta), g1 * sc(delta), **tables)
