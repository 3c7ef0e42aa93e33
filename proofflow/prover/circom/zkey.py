"""snarkjs Groth16 proving keys (.zkey) on a registered curve, as the engine's ProvingKey.

Sections: 1 the protocol (1 = Groth16); 2 the header: n8q, q, n8r, r, nVars, nPublic
(outputs and public inputs), domainSize, then alpha1, beta1, beta2, gamma2, delta1,
delta2; 3 IC (nPublic+1 G1 points); 4 the coefficients of A and B (a u32 count, then
entries of u32 matrix (0 = A, 1 = B), u32 constraint, u32 signal, 32-byte value); 5, 6, 7
the A, B1 (G1) and B2 (G2) points, one per signal; 8 the C points, one per private
signal; 9 the H points, one per domain point; 10 the ceremony's contributions.

Section 4 carries snarkjs's extra A rows, one per public signal s (row nConstraints+s,
value 1): the same rows the engine's ``ConstraintSystem.with_input_constraints`` adds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from proofflow.prover import points as curve_points
from proofflow.prover.circom import binfile
from proofflow.prover.circom.encoding import fr_from_zkey_coefficients, points_from_montgomery
from proofflow.prover.circom.errors import CorruptFile, KeyMismatch, WrongField
from proofflow.prover.circom.r1cs import R1cs
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.groth16.data_structures import ProvingKey, VerifyingKey
from proofflow.prover.r1cs import SparseMatrix

PROTOCOL, HEADER, IC, COEFFICIENTS, A, B1, B2, C, H = range(1, 10)
GROTH16 = 1


def coefficient_dtype(curve: Curve) -> np.dtype:
    """One section 4 entry; ``value`` holds c·R² mod r (encoding.fr_to_zkey_coefficients)."""
    return np.dtype([("matrix", "<u4"), ("constraint", "<u4"), ("signal", "<u4"), ("value", "u1", curve.fr.bytes)])


@dataclass
class ZKey:
    path: Path
    n_vars: int
    n_public: int
    domain_size: int
    pk: ProvingKey  # h_query has domain_size points, in the odd-coset basis (see groth16/odd_coset.py)
    a: SparseMatrix  # section 4, domain_size rows by n_vars columns
    b: SparseMatrix

    @property
    def vk(self) -> VerifyingKey:
        return self.pk.vk

    @property
    def curve(self) -> Curve:
        return self.pk.curve

    def check_matches(self, r1cs: R1cs) -> None:
        """Raise KeyMismatch unless this key was set up for ``r1cs``, as far as the key
        tells: it stores A and B, but C only inside its C and IC points, so a circuit that
        differs in C alone passes here (its proofs then fail the prover's check)."""
        domain = r1cs_to_qap.domain_for(r1cs.cs).size
        if r1cs.cs.curve.name != self.curve.name:
            raise KeyMismatch("the curve", f"zkey {self.curve.name}, r1cs {r1cs.cs.curve.name}")
        for what, ours, theirs in (("nVars", self.n_vars, r1cs.n_wires), ("nPublic", self.n_public, r1cs.n_public),
                                   ("domain size", self.domain_size, domain)):
            if ours != theirs:
                raise KeyMismatch(what, f"zkey {ours}, r1cs {theirs}")
        ext = r1cs.cs.with_input_constraints
        for name, ours, theirs in (("A", self.a, ext.a), ("B", self.b, ext.b)):
            row = _first_different_row(ours, theirs)
            if row is not None:
                where = (f"constraint {row}" if row < r1cs.n_constraints
                         else f"the input row of public signal {row - r1cs.n_constraints}")
                raise KeyMismatch(f"matrix {name}", f"its coefficients, first at {where}")


def _first_different_row(ours: SparseMatrix, theirs: SparseMatrix) -> int | None:
    """The first row where the two matrices differ; ``ours`` may have extra empty rows."""
    k = theirs.rows
    if (np.array_equal(ours.indptr[:k + 1], theirs.indptr) and np.all(ours.indptr[k:] == theirs.nnz)
            and np.array_equal(ours.indices, theirs.indices) and np.array_equal(ours.coeffs, theirs.coeffs)):
        return None
    for row in range(ours.rows):
        mine = slice(ours.indptr[row], ours.indptr[row + 1])
        if row >= k:
            if mine.stop > mine.start:
                return row
            continue
        other = slice(theirs.indptr[row], theirs.indptr[row + 1])
        if not (np.array_equal(ours.indices[mine], theirs.indices[other])
                and np.array_equal(ours.coeffs[mine], theirs.coeffs[other])):
            return row
    return None


def read_zkey(path, decode_points: bool = True) -> ZKey:
    """Read a Groth16 zkey. ``decode_points`` checks every point on its curve now, naming
    the section of a bad one (the CPU backend decodes them anyway; a backend that uploads
    the raw tables may skip it)."""
    f = binfile.read(path, "zkey", max_version=1)
    proto = f.reader(PROTOCOL, "protocol")
    if (protocol := proto.u32()) != GROTH16:
        raise proto.fail(f"protocol {protocol} is not Groth16 ({GROTH16}): a PLONK or FFLONK key?")
    head = f.reader(HEADER, "Groth16 header")
    n8q = head.u32()
    q = head.integer(n8q)
    n8r = head.u32()
    r = head.integer(n8r)
    curve = registry.by_scalar_prime(r)
    if curve is None:
        raise WrongField(f.path, r)
    if q != curve.fq.modulus or n8q != curve.fq.bytes or n8r != curve.fr.bytes:
        raise WrongField(f.path, q, curve.fq.modulus)
    n_vars, n_public, domain_size = head.u32(), head.u32(), head.u32()
    if domain_size < 1 or domain_size & (domain_size - 1):
        raise head.fail(f"domain size {domain_size} is not a power of two")
    if n_vars < n_public + 1:
        raise head.fail(f"{n_vars} signals cannot hold the one and {n_public} public signals")
    singles = {}
    for name, group in (("alpha1", "g1"), ("beta1", "g1"), ("beta2", "g2"), ("gamma2", "g2"), ("delta1", "g1"),
                        ("delta2", "g2")):
        table = points_from_montgomery(curve, head.take(curve.xy_bytes(group)), group, f.path, HEADER, name)
        try:
            singles[name] = curve_points.from_xy(curve, group, table.xy.tobytes())
        except ValueError as exc:
            raise head.fail(f"{name} is not a point of {group.upper()}: {exc}") from None
    head.end()

    # every count against its section's size before anything of that size is allocated
    sizes = {IC: ("IC", "g1", n_public + 1, "nPublic + 1"), A: ("A", "g1", n_vars, "nVars"),
             B1: ("B1", "g1", n_vars, "nVars"), B2: ("B2", "g2", n_vars, "nVars"),
             C: ("C", "g1", n_vars - n_public - 1, "nVars - nPublic - 1"), H: ("H", "g1", domain_size, "domainSize")}
    raw = {sid: f.holds(sid, f"{what} points", field, count, curve.xy_bytes(group))
           for sid, (what, group, count, field) in sizes.items()}

    def points(sid: int):
        what, group = sizes[sid][:2]
        table = points_from_montgomery(curve, raw[sid], group, f.path, sid, what)
        if decode_points:
            try:
                table.check_on_curve()
            except ValueError as exc:
                raise CorruptFile(f.path, f"a {what} point is not on the curve: {exc}", sid) from None
        return table

    ic = points(IC)
    a, b = _coefficients(f, curve, n_vars, domain_size)
    tables = dict(a_query=points(A), b_g1_query=points(B1), b_g2_query=points(B2), l_query=points(C),
                  h_query=points(H))
    vk = VerifyingKey(curve, singles["alpha1"], singles["beta2"], singles["gamma2"], singles["delta2"], ic.points())
    pk = ProvingKey(f.path.stem, domain_size.bit_length() - 1, vk, singles["beta1"], singles["delta1"], **tables,
                    h_basis="odd-coset")
    return ZKey(f.path, n_vars, n_public, domain_size, pk, a, b)


def _coefficients(f: binfile.BinFile, curve: Curve, n_vars: int, domain_size: int) -> tuple[SparseMatrix, SparseMatrix]:
    sec = f.reader(COEFFICIENTS, "coefficients of A and B")
    count, entry = sec.u32(), coefficient_dtype(curve)
    body = sec.rest()
    if len(body) != count * entry.itemsize:
        raise sec.fail(f"holds {len(body)} bytes of entries after its count, not the {count * entry.itemsize} that "
                       f"count = {count} needs ({entry.itemsize} bytes each)")
    entries = np.frombuffer(body, dtype=entry)
    for field, limit in (("matrix", 2), ("constraint", domain_size), ("signal", n_vars)):
        bad = np.flatnonzero(entries[field] >= limit)
        if bad.size:
            raise sec.fail(f"entry {int(bad[0])} has {field} {int(entries[field][bad[0]])}, beyond {limit - 1}")
    values = fr_from_zkey_coefficients(curve, np.ascontiguousarray(entries["value"]).tobytes(), f.path, COEFFICIENTS)
    out = []
    for m in (0, 1):
        pick = np.flatnonzero(entries["matrix"] == m)
        out.append(SparseMatrix.from_triplets(curve, domain_size, n_vars, entries["constraint"][pick],
                                              entries["signal"][pick], np.ascontiguousarray(values[pick])))
    return out[0], out[1]
