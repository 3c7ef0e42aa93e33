"""circom's .r1cs files as the engine's ConstraintSystem.

Section 1 is the header: u32 n8 (the scalar field's byte width: 32 on BLS12-381), the
prime, u32 nWires, nPubOut, nPubIn, nPrvIn, u64 nLabels, u32 nConstraints. Section 2
holds the constraints, each three linear combinations A, B, C, each a u32 count and that
many (u32 wire, n8-byte coefficient in standard form). Section 3 maps each wire to its
label, a u64 each: its size bounds nWires, which nothing else in the file does (a file
without it may claim no more wires than its constraints name). Wire 0 is the constant
one, then the public outputs, the public inputs, then the private wires: the engine's
order (one, public, private) with the outputs counted as public.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from proofflow.prover import native
from proofflow.prover.circom import binfile
from proofflow.prover.circom.encoding import fr_from_standard
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.r1cs import ConstraintSystem, SparseMatrix

HEADER, CONSTRAINTS, WIRE_MAP = 1, 2, 3
_EMPTY_CONSTRAINT = 3 * 4  # three linear combinations of no terms: their u32 counts


@dataclass(frozen=True)
class R1cs:
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_labels: int
    cs: ConstraintSystem

    @property
    def n_public(self) -> int:
        """The public signals (outputs first, then public inputs), the constant one not counted."""
        return self.n_pub_out + self.n_pub_in

    @property
    def n_constraints(self) -> int:
        return self.cs.num_constraints


def read_r1cs(path, curve: Curve | None = None) -> R1cs:
    """The r1cs at ``path``, over the registered curve of its prime (which must be ``curve``
    when given)."""
    f = binfile.read(path, "r1cs", max_version=1)
    head = f.reader(HEADER, "header")
    curve = head.field(curve)
    if (n8 := int.from_bytes(head.data[:4], "little")) != curve.fr.bytes:
        raise head.fail(f"field elements of {n8} bytes, but {curve.label}'s scalar field takes {curve.fr.bytes}")
    n_wires, n_out, n_pub, n_prv = (head.u32() for _ in range(4))
    n_labels, n_constraints = head.u64(), head.u32()
    head.end()
    if n_wires < 1 + n_out + n_pub + n_prv:
        raise head.fail(f"{n_wires} wires cannot hold the one, {n_out} outputs and {n_pub + n_prv} inputs")
    f.holds(CONSTRAINTS, "constraints", "nConstraints", n_constraints, _EMPTY_CONSTRAINT, at_least=True)
    has_map = WIRE_MAP in f.sections
    if has_map:
        f.holds(WIRE_MAP, "wire labels", "nWires", n_wires, 8)
    rows, cols, coeffs = _terms(f.reader(CONSTRAINTS, "constraints"), curve, n_constraints, n_wires)
    if not has_map and n_wires > (named := 1 + max((int(c.max()) for c in cols if c.size), default=0)):
        raise head.fail(f"nWires = {n_wires}, but the file has no wire map (section 3) and its constraints name "
                        f"no wire beyond {named - 1}")
    matrices = [SparseMatrix.from_triplets(curve, n_constraints, n_wires, rows[m], cols[m], coeffs[m])
                for m in range(3)]
    cs = ConstraintSystem(n_out + n_pub, n_wires, *matrices)
    return R1cs(n_wires, n_out, n_pub, n_prv, n_labels, cs)


@lru_cache(maxsize=None)
def _walk():
    fn = native.load("r1cs_walk", Path(__file__).parent).r1cs_lc_walk
    i64, i64p = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
    fn.argtypes = [ctypes.c_void_p, i64, i64, i64, i64p, i64p]
    fn.restype = i64
    return fn


def _terms(sec: binfile.SectionReader, curve: Curve, n_constraints: int, n_wires: int):
    """Per matrix (A, B, C): the row, wire and Fr coefficient of every term."""
    term = 4 + curve.fr.bytes  # u32 wire + coefficient
    # Each linear combination starts where the one before ends: r1cs_walk.c follows that
    # chain (3 a constraint, millions at 2^20); the terms are then gathered in bulk. The
    # arrays are 16 bytes a combination, and the section holds at least 4 (``holds``).
    data = np.frombuffer(sec.data, dtype=np.uint8)
    lcs = 3 * n_constraints
    starts, counts = np.empty(lcs, dtype=np.int64), np.empty(lcs, dtype=np.int64)
    i64p = ctypes.POINTER(ctypes.c_int64)
    end = _walk()(data.ctypes.data, data.size, lcs, term, starts.ctypes.data_as(i64p), counts.ctypes.data_as(i64p))
    if end < 0:
        raise sec.fail(f"truncated: the {n_constraints} constraints need more than its {data.size} bytes")
    sec.pos = end
    sec.end()
    lc = np.repeat(np.arange(lcs), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]) if counts.size else counts
    offsets = starts[lc] + term * (np.arange(lc.size) - first[lc])
    # (terms, 36): wire, coefficient; a section of no terms may be shorter than one
    terms = np.lib.stride_tricks.sliding_window_view(data, term)[offsets] if lc.size else np.zeros((0, term), np.uint8)
    wires = np.ascontiguousarray(terms[:, :4]).view("<u4").ravel().astype(np.int64)
    if wires.size and wires.max() >= n_wires:
        bad = int(np.argmax(wires >= n_wires))
        raise sec.fail(f"constraint {int(lc[bad]) // 3} uses wire {int(wires[bad])}, beyond the header's "
                       f"{n_wires} wires")
    coeffs = fr_from_standard(curve, np.ascontiguousarray(terms[:, 4:]).ravel(), sec.owner.path, CONSTRAINTS,
                              "coefficient")
    rows, matrix = lc // 3, lc % 3
    split = [np.flatnonzero(matrix == m) for m in range(3)]
    return [rows[s] for s in split], [wires[s] for s in split], [np.ascontiguousarray(coeffs[s]) for s in split]
