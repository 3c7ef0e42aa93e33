"""Rank-1 constraint systems: A·w ∘ B·w = C·w, with sparse matrices over Fr.

Variables are numbered as in arkworks: 0 is the constant one, 1..num_public the public
inputs, the rest private. Each matrix is CSR with Montgomery coefficients in its curve's Fr,
so the a/b/c vectors of synthesis are three sparse matrix-vector products in the C kernels.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr


class UnsatisfiedConstraint(ValueError):
    """A witness violates a constraint; ``index`` is the first failing row."""

    def __init__(self, index: int, detail: str = ""):
        self.index = index
        super().__init__(f"witness does not satisfy constraint {index}{detail}")


@dataclass(frozen=True)
class SparseMatrix:
    """CSR over ``curve``'s Fr: row r holds coeffs[indptr[r]:indptr[r+1]] at columns indices[...]."""

    curve: Curve
    rows: int
    cols: int
    indptr: np.ndarray   # int64, rows + 1
    indices: np.ndarray  # int64, nnz
    coeffs: np.ndarray   # Fr vector, nnz

    @classmethod
    def from_triplets(cls, curve: Curve, rows: int, cols: int, r: np.ndarray, c: np.ndarray,
                      coeffs: np.ndarray) -> "SparseMatrix":
        """Build from COO triplets (duplicates are kept and summed by the product)."""
        r = np.asarray(r, dtype=np.int64)
        c = np.asarray(c, dtype=np.int64)
        if rows * cols > 1 << 64:
            raise ValueError(f"a {rows} x {cols} matrix is beyond the engine's sizes")
        if r.size and (r.min() < 0 or r.max() >= rows or c.min() < 0 or c.max() >= cols):
            raise ValueError("triplet index out of range")
        # By row, then column: one stable sort of row * cols + column orders as a sort by
        # both would, in a fraction of the time when the rows come in order (as a file's do).
        order = np.argsort(r.astype(np.uint64) * np.uint64(cols) + c.astype(np.uint64), kind="stable")
        indptr = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=rows), out=indptr[1:])
        return cls(curve, rows, cols, indptr, np.ascontiguousarray(c[order]), np.ascontiguousarray(coeffs[order]))

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    def row_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.rows, dtype=np.int64), np.diff(self.indptr))

    def rmatvec(self, x: np.ndarray) -> np.ndarray:
        """Mᵀ·x (``x`` of ``rows`` entries) without building the transpose, which at 2^27
        constraints would take tens of GB."""
        fr = Fr.of(self.curve)
        fr._check(x, "x")
        if x.shape[0] != self.rows:
            raise ValueError(f"vector has {x.shape[0]} entries, the matrix {self.rows} rows")
        out = fr.zeros(self.cols)
        fr._lib().fr_csr_rmatvec(fr._iptr(self.indptr), fr._iptr(self.indices), fr.ptr(self.coeffs), fr.ptr(x),
                                 fr.ptr(out), self.rows, self.cols)
        return out

    def matvec(self, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """M·w; ``out`` may be longer than ``rows`` (a domain-sized buffer): the tail is zeroed."""
        fr = Fr.of(self.curve)
        fr._check(w, "w")
        if w.shape[0] != self.cols:
            raise ValueError(f"vector has {w.shape[0]} entries, the matrix {self.cols} columns")
        if out is None:
            out = fr.zeros(self.rows)
        fr._check(out, "out")
        if out.shape[0] < self.rows:
            raise ValueError(f"output holds {out.shape[0]} entries, need {self.rows}")
        out[self.rows:] = 0
        fr._lib().fr_csr_matvec(fr._iptr(self.indptr), fr._iptr(self.indices), fr.ptr(self.coeffs),
                                fr.ptr(w), fr.ptr(out), self.rows)
        return out


@dataclass(frozen=True)
class ConstraintSystem:
    num_public: int      # public inputs, not counting the constant one
    num_variables: int   # all variables, the constant one included
    a: SparseMatrix
    b: SparseMatrix
    c: SparseMatrix

    @property
    def curve(self) -> Curve:
        return self.a.curve

    @property
    def fr(self) -> Fr:
        return Fr.of(self.curve)

    @property
    def num_constraints(self) -> int:
        return self.a.rows

    @property
    def num_instance(self) -> int:
        """The constant one plus the public inputs: the first variables."""
        return self.num_public + 1

    @cached_property
    def with_input_constraints(self) -> "ConstraintSystem":
        """Append one row ``x_i * 0 = 0`` per instance variable (A only), as arkworks does:
        it makes the public inputs' QAP polynomials linearly independent, which Groth16's
        soundness needs. The QAP is always built from this extended system."""
        k = self.num_instance
        rows = self.num_constraints + k

        def extend(m: SparseMatrix, per_row: int) -> SparseMatrix:
            # The new rows come last, so CSR extends by appending.
            indptr = np.concatenate([m.indptr, m.indptr[-1] + per_row * np.arange(1, k + 1)])
            if not per_row:
                return SparseMatrix(m.curve, rows, m.cols, indptr, m.indices, m.coeffs)
            return SparseMatrix(m.curve, rows, m.cols, indptr,
                                np.concatenate([m.indices, np.arange(k, dtype=np.int64)]),
                                np.concatenate([m.coeffs, self.fr.ones(k)]))

        return ConstraintSystem(self.num_public, self.num_variables,
                                extend(self.a, 1), extend(self.b, 0), extend(self.c, 0))

    def evaluate(self, w: np.ndarray, out=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A·w, B·w, C·w), into ``out`` buffers when given (e.g. pinned staging memory)."""
        outs = out if out is not None else (None, None, None)
        return tuple(m.matvec(w, o) for m, o in zip((self.a, self.b, self.c), outs))

    def save(self, directory) -> None:
        """The matrices as .npy files (the directory written whole, then renamed into place)."""
        from proofflow.prover import files
        with files.atomic_dir(directory) as tmp:
            for name in "abc":
                m = getattr(self, name)
                for part in ("indptr", "indices", "coeffs"):
                    np.save(tmp / f"{name}.{part}.npy", getattr(m, part), allow_pickle=False)
            np.save(tmp / "shape.npy", np.array([self.num_public, self.num_variables, self.num_constraints]))

    @classmethod
    def load(cls, directory, curve: Curve) -> "ConstraintSystem":
        """``save``'s files (of ``curve``'s Fr), memory-mapped (ValueError when they do not fit together)."""
        from pathlib import Path
        d = Path(directory)
        num_public, num_variables, rows = (int(x) for x in np.load(d / "shape.npy", allow_pickle=False))
        matrices = []
        for name in "abc":
            parts = [np.load(d / f"{name}.{part}.npy", mmap_mode="r", allow_pickle=False)
                     for part in ("indptr", "indices", "coeffs")]
            if parts[0].shape != (rows + 1,) or parts[1].shape[0] != parts[2].shape[0]:
                raise ValueError(f"{d}: matrix {name} does not fit its shape")
            matrices.append(SparseMatrix(curve, rows, num_variables, *parts))
        return cls(num_public, num_variables, *matrices)

    def check(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        """Raise UnsatisfiedConstraint at the first row where a*b != c."""
        fr = self.fr
        bad = fr._lib().fr_first_unsatisfied(fr.ptr(a), fr.ptr(b), fr.ptr(c), self.num_constraints)
        if bad >= 0:
            raise UnsatisfiedConstraint(int(bad))
