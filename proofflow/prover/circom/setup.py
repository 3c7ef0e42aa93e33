"""Test-only snarkjs Groth16 zkeys, from an r1cs (over a registered curve) and a seed.

A real key needs a powers-of-tau ceremony, whose preparation takes ~15 min at power 14 and
doubles per power. For tests and benchmarks this writes the key such a ceremony would give
for toxic waste (τ, α, β, γ, δ) derived from a seed, as proofflow's own test setup derives
it (``groth16.generator.toxic_waste``). Anyone who knows the seed can forge proofs, so the
key's one contribution (section 10, where snarkjs keeps the names it shows) is named
TEST_ONLY_LABEL.

With u_s, v_s, w_s the QAP polynomials of signal s over snarkjs's domain
(``groth16.odd_coset.lagrange_at``; A with snarkjs's extra row per public signal), the key holds, as
multiples of the generators:
- A, B1, B2 (sections 5-7): u_s(τ), v_s(τ), v_s(τ); the point at infinity where s has no entry;
- IC (3): (β·u_s + α·v_s + w_s)(τ)/γ for s ≤ nPublic; C (8): the same over δ for the
  others (snarkjs's own setup has γ = 1; the verifier works with any γ);
- H (9): ``odd_coset.h_basis_at(τ)``/δ;
- section 4: the coefficients of A and B, constraint by constraint, its A entries first.
Section 10 starts with the 64 bytes where snarkjs keeps its circuit hash: here the
BLAKE2b-512 of sections 1-9 (snarkjs hashes a δ = 1 key, which never exists here). Its one
contribution is δ·G1, a proof of knowledge left at infinity (no ceremony took place), a
zero transcript, type 0 and the name.
"""
from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow.prover import files
from proofflow.prover.backend.base import Backend
from proofflow.prover.circom import zkey as zkey_format
from proofflow.prover.circom.encoding import fr_to_zkey_coefficients, points_to_montgomery
from proofflow.prover.circom.r1cs import R1cs
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16 import generator, odd_coset, r1cs_to_qap
from proofflow.prover.groth16.data_structures import VerifyingKey
from proofflow.prover.points import PointTable
from proofflow.prover.r1cs import ConstraintSystem

# snarkjs cuts names to 64 characters when it rewrites section 10 (zkey contribute): this fits.
TEST_ONLY_LABEL = "TEST ONLY: from a seed; anyone knowing the seed can forge proofs"
CONTRIBUTIONS = 10
_NAME_PARAMETER = 1  # snarkjs's contribution parameter types: 1 name, 2 and 3 beacon data


def write_test_zkey(r1cs: R1cs, seed: int, out, backend: Backend | None = None,
                    progress: Callable[[str, int, int], None] | None = None) -> VerifyingKey:
    """Write a test-only zkey for ``r1cs`` to ``out`` (atomically) and return its verifying
    key (``snarkjs_json.write_verification_key`` writes it as snarkjs's JSON).
    ``backend.fixed_base`` makes the point tables where the backend has a kernel for it
    (the GPU's), else arkworks on the CPU does; the same seed gives the same bytes either
    way. ``progress(section, done, total)`` counts key points."""
    cs = r1cs.cs
    curve, fr = cs.curve, cs.fr
    tw = generator.toxic_waste(seed, curve)
    tau, alpha, beta, gamma, delta = (tw[k] for k in ("tau", "alpha", "beta", "gamma", "delta"))
    log_n = r1cs_to_qap.domain_for(cs).log_n
    u, v, w = _qap_at(cs, tau, log_n)
    mixed = fr.add(fr.add(fr.mul(u, fr.constant(beta)), fr.mul(v, fr.constant(alpha))), w)
    k = cs.num_instance
    over_delta = fr.constant(pow(delta, -1, fr.MODULUS))
    jobs = {zkey_format.IC: ("IC", "g1", fr.mul(mixed[:k], fr.constant(pow(gamma, -1, fr.MODULUS)))),
            zkey_format.A: ("A", "g1", u), zkey_format.B1: ("B1", "g1", v), zkey_format.B2: ("B2", "g2", v),
            zkey_format.C: ("C", "g1", fr.mul(np.ascontiguousarray(mixed[k:]), over_delta)),
            zkey_format.H: ("H", "g1", fr.mul(odd_coset.h_basis_at(curve, tau, log_n), over_delta))}
    total = sum(len(s) for _, _, s in jobs.values())
    done = 0

    def tick(stage: str, count: int) -> None:
        nonlocal done
        done += count
        if progress:
            progress(stage, done, total)

    tables = {sid: _multiples(curve, group, s, backend, lambda c, name=name: tick(name, c))
              for sid, (name, group, s) in jobs.items()}
    g1, g2 = curve.point_class("g1")(), curve.point_class("g2")()
    sc = curve.scalar
    singles = [("g1", g1 * sc(alpha)), ("g1", g1 * sc(beta)), ("g2", g2 * sc(beta)), ("g2", g2 * sc(gamma)),
               ("g1", g1 * sc(delta)), ("g2", g2 * sc(delta))]
    header = (struct.pack("<I", curve.fq.bytes) + curve.fq.modulus.to_bytes(curve.fq.bytes, "little")
              + struct.pack("<I", fr.BYTES) + fr.MODULUS.to_bytes(fr.BYTES, "little")
              + struct.pack("<III", r1cs.n_wires, r1cs.n_public, 1 << log_n)
              + b"".join(_encoded(curve, group, p) for group, p in singles))
    sections = [(zkey_format.PROTOCOL, [struct.pack("<I", zkey_format.GROTH16)]), (zkey_format.HEADER, [header]),
                (zkey_format.IC, [points_to_montgomery(tables[zkey_format.IC])]),
                (zkey_format.COEFFICIENTS, _coefficients(cs.with_input_constraints))]
    sections += [(sid, [points_to_montgomery(tables[sid])])
                 for sid in (zkey_format.A, zkey_format.B1, zkey_format.B2, zkey_format.C, zkey_format.H)]
    _write(curve, Path(out), sections, delta_g1=singles[4][1])
    return VerifyingKey(curve, singles[0][1], singles[2][1], singles[3][1], singles[5][1],
                        tables[zkey_format.IC].points())


def _qap_at(cs: ConstraintSystem, tau: int, log_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_s(τ), v_s(τ), w_s(τ) for every signal s, over snarkjs's domain."""
    ext = cs.with_input_constraints
    lag = np.ascontiguousarray(odd_coset.lagrange_at(cs.curve, tau, log_n)[:ext.num_constraints])
    return tuple(m.rmatvec(lag) for m in (ext.a, ext.b, ext.c))


def _multiples(curve: Curve, group: str, scalars: np.ndarray, backend: Backend | None,
               progress: Callable[[int], None]) -> PointTable:
    """s·G for every scalar s. A zero gives the point at infinity (all zeros) without a
    multiplication: most signals have no entry in B, many none in A."""
    xy = np.zeros((len(scalars), curve.xy_bytes(group)), dtype=np.uint8)
    nonzero = np.flatnonzero(scalars.any(axis=1))
    progress(len(scalars) - nonzero.size)
    if nonzero.size:
        picked = np.ascontiguousarray(scalars[nonzero])
        table = backend.fixed_base(curve, group, picked, progress) if backend is not None else None
        if table is None:
            table = generator.fixed_base(curve, group, picked, progress)
        xy[nonzero] = table.xy
    return PointTable(curve, group, xy)


def _encoded(curve: Curve, group: str, point) -> bytes:
    return points_to_montgomery(PointTable.from_points(curve, group, [point])).tobytes()


def _coefficients(ext: ConstraintSystem) -> list:
    """Section 4: a u32 count, then (matrix, constraint, signal, c·R²) per entry of A and B."""
    matrices = (ext.a, ext.b)
    matrix = np.concatenate([np.full(m.nnz, i, dtype=np.uint32) for i, m in enumerate(matrices)])
    row = np.concatenate([m.row_ids() for m in matrices])
    signal = np.concatenate([m.indices for m in matrices])
    values = np.concatenate([m.coeffs for m in matrices])
    order = np.lexsort((matrix, row))  # stable: each row's entries keep their order
    entries = np.empty(order.size, dtype=zkey_format.coefficient_dtype(ext.curve))
    entries["matrix"], entries["constraint"], entries["signal"] = matrix[order], row[order], signal[order]
    entries["value"] = fr_to_zkey_coefficients(ext.curve, np.ascontiguousarray(values[order]))
    return [struct.pack("<I", order.size), entries]


def _contributions(curve: Curve, cs_hash: bytes, delta_g1) -> bytes:
    name = TEST_ONLY_LABEL.encode()
    params = bytes([_NAME_PARAMETER, len(name)]) + name
    proof_of_knowledge = bytes(2 * curve.xy_bytes("g1") + curve.xy_bytes("g2"))
    transcript = bytes(64)
    return (cs_hash + struct.pack("<I", 1) + _encoded(curve, "g1", delta_g1) + proof_of_knowledge + transcript
            + struct.pack("<II", 0, len(params)) + params)


def _write(curve: Curve, path: Path, sections: list, delta_g1) -> None:
    """The container (magic, version 1, section count, then each section's type, size and
    bytes), streamed to a temporary file that replaces ``path`` once complete."""
    cs_hash = hashlib.blake2b(digest_size=64)
    with files.atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(struct.pack("<4sII", b"zkey", 1, len(sections) + 1))
        for sid, parts in sections:
            f.write(struct.pack("<IQ", sid, sum(memoryview(p).nbytes for p in parts)))
            for part in parts:
                f.write(part)
                cs_hash.update(part)
        last = _contributions(curve, cs_hash.digest(), delta_g1)
        f.write(struct.pack("<IQ", CONTRIBUTIONS, len(last)) + last)
