"""Groth16 setup, deterministic from a seed.

The toxic waste (tau, alpha, beta, gamma, delta) is derived from the seed, so these keys
are for tests and benchmarks only: whoever knows the seed can forge proofs. The key files
carry that warning. The fixed-base multiplications (one per key point) dominate; they run
on the backend where it has a kernel for them (the GPU's), else through the curve's point
library (arkworks) in a pool of worker processes (``process_pool``: they die with the
setup, however it ends). Both give the same bytes, so a seed gives the same key files
either way.
"""
from __future__ import annotations

from collections import deque
from typing import Callable

import numpy as np

from proofflow import settings
from proofflow.prover.backend.base import Backend
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circuits import Circuit
from proofflow.prover.circuits.base import derive
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.groth16.data_structures import KeyTables, ProvingKey, VerifyingKey, table_encoding
from proofflow.prover.points import PointTable
from proofflow.prover.process_pool import process_pool

_CHUNK = 2048  # scalars a worker's job on the CPU path
_SERIAL_BELOW = 4096
_IN_FLIGHT = 16  # CPU jobs queued per worker: enough to keep it busy, few results waiting
STREAM_CHUNK = 1 << 22  # scalars a call of the backend's fixed_base: bounds the host memory of a table's rows

Scalars = Callable[[int, int], np.ndarray]  # (lo, hi) -> the Fr scalars of points lo..hi-1
Rows = Callable[[np.ndarray], None]  # takes the next rows of a table (xy-LE, in order)


def _generator_multiples(job: tuple[str, str, bytes]) -> bytes:
    """xy-LE encodings of s * G for each little-endian scalar s of the curve named in the job
    (a worker's job)."""
    name, group, raw = job
    curve = registry.get_curve(name)
    cls = curve.point_class(group)
    if hasattr(cls, "multiples_xy_le"):  # the library's bulk path (BN254's C)
        return cls.multiples_xy_le(np.frombuffer(raw, dtype=np.uint64).reshape(-1, 4)).tobytes()
    g, Scalar, width = cls(), curve.library().Scalar, curve.fr.bytes
    return b"".join((g * Scalar.from_le_bytes(raw[i:i + width])).to_xy_bytes_le() for i in range(0, len(raw), width))


def _cpu_multiples(curve: Curve, group: str, count: int, scalars: Scalars, put: Rows,
                   progress: Callable[[int], None] | None = None, workers: int | None = None) -> None:
    """s * G through the point library for the ``count`` scalars, handed to ``put`` in order,
    a job of ``_CHUNK`` at a time: in a pool of worker processes (a bounded number of jobs in
    flight) unless the table is small or there is one worker."""
    width, fr = curve.xy_bytes(group), Fr.of(curve)
    workers = workers or settings.current().setup_workers
    spans = [(lo, min(count, lo + _CHUNK)) for lo in range(0, count, _CHUNK)]

    def job(lo: int, hi: int) -> tuple[str, str, bytes]:
        return curve.name, group, fr.to_bytes_le(np.ascontiguousarray(scalars(lo, hi)))

    def take(part: bytes) -> None:
        put(np.frombuffer(part, dtype=np.uint8).reshape(-1, width))
        if progress:
            progress(len(part) // width)

    if count < _SERIAL_BELOW or workers <= 1:
        for lo, hi in spans:
            take(_generator_multiples(job(lo, hi)))
        return
    with process_pool(workers) as pool:
        pending: deque = deque()
        for lo, hi in spans:
            pending.append(pool.submit(_generator_multiples, job(lo, hi)))
            if len(pending) >= _IN_FLIGHT * workers:
                take(pending.popleft().result())
        while pending:
            take(pending.popleft().result())


def fixed_base(curve: Curve, group: str, scalars: np.ndarray, progress: Callable[[int], None] | None = None,
               workers: int | None = None) -> PointTable:
    """[s * G for s in scalars] for the group's generator G, through the point library on the CPU."""
    tables = KeyTables(curve)
    with tables.table("points", group, len(scalars)) as put:
        _cpu_multiples(curve, group, len(scalars), lambda lo, hi: scalars[lo:hi], put, progress, workers)
    return tables.tables["points"]


def multiples_into(curve: Curve, group: str, count: int, scalars: Scalars, put: Rows, backend: Backend | None = None,
                   progress: Callable[[int], None] | None = None) -> None:
    """s * G for ``count`` scalars, handed to ``put`` in order, ``STREAM_CHUNK`` scalars at a
    time: on the backend where it has a kernel for it (``Backend.fixed_base``), else through
    the point library on the CPU. No more than a chunk of the scalars or of the points is held here."""
    lo = 0
    if backend is not None:
        while lo < count:
            hi = min(count, lo + STREAM_CHUNK)
            table = backend.fixed_base(curve, group, np.ascontiguousarray(scalars(lo, hi)), progress)
            if table is None:  # no kernel for it: the CPU from here on
                break
            put(table.xy)
            lo = hi
    if lo < count:
        _cpu_multiples(curve, group, count - lo, lambda a, b: scalars(lo + a, lo + b), put, progress)


def toxic_waste(seed: int, curve: Curve) -> dict[str, int]:
    return {name: derive(curve.fr.modulus, "proofflow/groth16/toxic-waste", seed, name) or 1
            for name in ("tau", "alpha", "beta", "gamma", "delta")}


def setup(circuit: Circuit, seed: int, progress: Callable[[str, int, int], None] | None = None,
          backend: Backend | str | None = None, directory=None) -> ProvingKey:
    """Proving key (with its verifying key) for ``circuit``; ``progress(stage, done, total)``.
    ``backend`` (a Backend or a name for ``backend.by_name.get_backend``) computes the key
    tables where it can (``Backend.fixed_base``); None: the point library on the CPU. The
    key is over the circuit's curve.

    ``directory``: each table is written straight into its memory-mapped ``.npy`` file there
    as its points are computed, a chunk at a time, so no table is ever whole in memory (a
    2^27 key's tables are 77 GB); the key returned holds them memory-mapped, and its
    ``save`` into the same directory writes only vk.json and params.json: the same files,
    byte for byte, as the in-memory key's ``save``. Without it the tables are built in memory."""
    if isinstance(backend, str):
        backend = get_backend(backend)
    curve, fr = circuit.curve, circuit.fr
    tables = KeyTables(curve, directory, table_encoding(circuit.log2))

    cs = circuit.constraint_system
    tw = toxic_waste(seed, curve)
    p = fr.MODULUS
    tau, alpha, beta, gamma, delta = (tw[k] for k in ("tau", "alpha", "beta", "gamma", "delta"))
    domain, u, v, w = r1cs_to_qap.evaluate_at(cs, tau)
    n, k = domain.size, cs.num_instance

    # (beta*u_i + alpha*v_i + w_i), divided by gamma for the public part, by delta for the rest.
    mixed = fr.add(fr.add(fr.mul(u, fr.constant(beta)), fr.mul(v, fr.constant(alpha))), w)
    del w
    gamma_abc = fr.mul(mixed[:k], fr.constant(pow(gamma, -1, p)))
    l_scalars = fr.mul(np.ascontiguousarray(mixed[k:]), fr.constant(pow(delta, -1, p)))
    del mixed
    # h_i = tau^i Z(tau) / delta for i < n - 1, a chunk at a time (never a whole vector of them)
    z_over_delta = domain.evaluate_vanishing(tau) * pow(delta, -1, p) % p
    tau_fr = fr.constant(tau)

    def h_scalars(lo: int, hi: int) -> np.ndarray:
        return fr.powers(tau_fr, hi - lo, start=fr.constant(z_over_delta * pow(tau, lo, p)))

    def rows_of(vector: np.ndarray) -> Scalars:
        return lambda lo, hi: vector[lo:hi]

    jobs = [("a_query", "g1", len(u), rows_of(u)), ("b_g1_query", "g1", len(v), rows_of(v)),
            ("b_g2_query", "g2", len(v), rows_of(v)), ("h_query", "g1", n - 1, h_scalars),
            ("l_query", "g1", len(l_scalars), rows_of(l_scalars))]
    total = sum(count for _, _, count, _ in jobs)
    done = 0

    def tick(count: int, stage: str):
        nonlocal done
        done += count
        if progress:
            progress(stage, done, total)

    for name, group, count, scalars in jobs:
        with tables.table(name, group, count) as put:
            multiples_into(curve, group, count, scalars, put, backend, lambda c, name=name: tick(c, name))
    g1, g2 = curve.point_class("g1")(), curve.point_class("g2")()
    sc = curve.scalar
    gamma_abc_g1 = KeyTables(curve)  # the verifying key's points: in memory, always few
    with gamma_abc_g1.table("gamma_abc_g1", "g1", k) as put:
        multiples_into(curve, "g1", k, rows_of(gamma_abc), put, backend)
    vk = VerifyingKey(curve, g1 * sc(alpha), g2 * sc(beta), g2 * sc(gamma), g2 * sc(delta),
                      gamma_abc_g1.tables["gamma_abc_g1"].points())
    return ProvingKey(circuit.name, circuit.log2, vk, g1 * sc(beta), g1 * sc(delta), **tables.tables,
                      written=tables.written)
