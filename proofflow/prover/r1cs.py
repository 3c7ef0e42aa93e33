"""Rank-1 constraint systems: A·w ∘ B·w = C·w, with sparse matrices over Fr.

Variables are numbered as in arkworks: 0 is the constant one, 1..num_public the public
inputs, the rest private. Each matrix is CSR with Montgomery coefficients in its curve's Fr,
so the a/b/c vectors of synthesis are three sparse matrix-vector products in the C kernels.
A matrix keeps its index arrays narrow and its coefficients as indices into the distinct
ones where that is smaller, the form the cache stores (``constraint_files``) and the
kernels read as stored.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import CsrArgs, Fr


class UnsatisfiedConstraint(ValueError):
    """A witness violates a constraint; ``index`` is the first failing row."""

    def __init__(self, index: int, detail: str = ""):
        self.index = index
        super().__init__(f"witness does not satisfy constraint {index}{detail}")


#: The widths the products read an index array in (fr.c's ``csr_at``); an array is stored in
#: the narrowest that holds its largest value (``narrow``).
INDEX_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.int64))


def narrow(a, largest: int) -> np.ndarray:
    """``a`` (integers in 0..largest) in the narrowest of INDEX_DTYPES that holds ``largest``."""
    dtype = next(t for t in INDEX_DTYPES if largest <= np.iinfo(t).max)
    return np.ascontiguousarray(a, dtype=dtype)


class CorruptMatrix(ValueError):
    """A matrix whose arrays name a term outside it (its files were damaged or tampered with)."""


@dataclass(frozen=True)
class SparseMatrix:
    """CSR over ``curve``'s Fr: row r's terms are k in indptr[r]:indptr[r+1], each at column
    indices[k] with coefficient values[which[k]] (``values`` the distinct coefficients,
    ``which`` their index a term), or values[k] where ``which`` is None. The index arrays are
    any of INDEX_DTYPES (the narrowest that holds them, as the cache stores them), so a
    matrix memory-mapped from its files is used as it is: the products read every width, and
    check every index as they read it. ``origin`` names where the arrays came from, for
    errors."""

    curve: Curve
    rows: int
    cols: int
    indptr: np.ndarray   # rows + 1
    indices: np.ndarray  # nnz
    values: np.ndarray   # Fr vector: the coefficients, or the distinct ones ``which`` indexes
    which: np.ndarray | None = None  # nnz, or None
    origin: str = field(default="", compare=False)

    def __post_init__(self):
        for name in ("indptr", "indices", "which"):
            a = getattr(self, name)
            if a is None and name == "which":
                continue
            if not isinstance(a, np.ndarray) or a.dtype not in INDEX_DTYPES or a.ndim != 1 or not a.flags.c_contiguous:
                raise ValueError(f"{self._where()}: {name} must be a contiguous vector of "
                                 f"{'/'.join(str(t) for t in INDEX_DTYPES)}")
        v = self.values
        if not isinstance(v, np.ndarray) or v.dtype != np.uint64 or v.shape[1:] != (4,) or not v.flags.c_contiguous:
            raise ValueError(f"{self._where()}: values must be a contiguous Fr vector (uint64, n x 4)")
        if self.indptr.shape[0] != self.rows + 1:
            raise ValueError(f"{self._where()}: {self.indptr.shape[0]} row pointers for {self.rows} rows")
        terms = self.which if self.which is not None else self.values
        if terms.shape[0] != self.nnz:
            raise ValueError(f"{self._where()}: {self.nnz} column indices but {terms.shape[0]} coefficients")

    def _where(self) -> str:
        return self.origin or "sparse matrix"

    @classmethod
    def from_triplets(cls, curve: Curve, rows: int, cols: int, r: np.ndarray, c: np.ndarray,
                      coeffs: np.ndarray, values: np.ndarray | None = None) -> "SparseMatrix":
        """Build from COO triplets (duplicates are kept and summed by the product): ``coeffs``
        an Fr vector, or, with ``values``, each term's index into it."""
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
        indptr, indices = narrow(indptr, r.size), narrow(c[order], max(cols - 1, 0))
        if values is None:
            return cls(curve, rows, cols, indptr, indices, np.ascontiguousarray(coeffs[order]))
        which = np.asarray(coeffs)
        if which.size and (which.min() < 0 or which.max() >= values.shape[0]):
            raise ValueError("coefficient index out of range")
        return cls(curve, rows, cols, indptr, indices, values, narrow(which[order], max(values.shape[0] - 1, 0)))

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @property
    def coeffs(self) -> np.ndarray:
        """Each term's coefficient (an Fr vector of nnz; a copy where they are indexed)."""
        return self.coefficients(0, self.nnz)

    def coefficients(self, start: int, stop: int) -> np.ndarray:
        """The coefficients of terms start..stop."""
        if self.which is None:
            return self.values[start:stop]
        return self.values[self.which[start:stop]]

    def row_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.rows, dtype=np.int64), np.diff(self.indptr.astype(np.int64)))

    @cached_property
    def _reduced_values(self) -> np.ndarray:
        """``values``, checked below the modulus once (the products check each index as they
        read it)."""
        fr = Fr.of(self.curve)
        bad = fr._lib().fr_first_unreduced(fr.ptr(self.values), self.values.shape[0])
        if bad >= 0:
            raise CorruptMatrix(f"{self._where()}: coefficient value {bad} is not below the field's modulus")
        return self.values

    def _args(self) -> CsrArgs:
        """The arrays as the products read them."""
        def width(a):
            return a.dtype.itemsize if a is not None else 0
        return CsrArgs(self.indptr.ctypes.data, self.indices.ctypes.data,
                       self.which.ctypes.data if self.which is not None else None, self._reduced_values.ctypes.data,
                       self.rows, self.cols, self.nnz, self.values.shape[0],
                       width(self.indptr), width(self.indices), width(self.which))

    def _checked(self, bad: int) -> None:
        if bad >= 0:
            raise CorruptMatrix(f"{self._where()}: row {bad} names a term outside the matrix (a row pointer out "
                                f"of order or past its {self.nnz} terms, a column past its {self.cols}, or a "
                                f"coefficient index past its {self.values.shape[0]} values)")

    def rmatvec(self, x: np.ndarray) -> np.ndarray:
        """Mᵀ·x (``x`` of ``rows`` entries) without building the transpose, which at 2^27
        constraints would take tens of GB."""
        fr = Fr.of(self.curve)
        fr._check(x, "x")
        if x.shape[0] != self.rows:
            raise ValueError(f"vector has {x.shape[0]} entries, the matrix {self.rows} rows")
        out = fr.zeros(self.cols)
        self._checked(fr._lib().fr_csr_rmatvec(ctypes.byref(self._args()), fr.ptr(x), fr.ptr(out)))
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
        self._checked(fr._lib().fr_csr_matvec(ctypes.byref(self._args()), fr.ptr(w), fr.ptr(out)))
        return out

    def extended(self, rows: int, columns: np.ndarray | None, one: np.ndarray) -> "SparseMatrix":
        """This matrix with ``rows`` more rows appended, row i holding the term ``one`` (an Fr
        element) at ``columns[i]`` when ``columns`` is given, else no term."""
        total, nnz = self.rows + rows, self.nnz + (rows if columns is not None else 0)
        indptr = _appended(self.indptr, self.nnz + np.arange(1, rows + 1) if columns is not None
                           else np.full(rows, self.nnz), nnz)
        if columns is None:
            return replace(self, rows=total, indptr=indptr)
        indices = _appended(self.indices, columns, max(self.cols - 1, 0))
        if self.which is None:
            return replace(self, rows=total, indptr=indptr, indices=indices,
                           values=np.concatenate([self.values, np.repeat(one, rows, axis=0)]))
        # the distinct values usually start with one (the commonest coefficient)
        head = np.flatnonzero((self.values[:256] == one).all(axis=1))
        values, at = (self.values, int(head[0])) if head.size else (np.concatenate([self.values, one]), self.values.shape[0])
        which = _appended(self.which, np.full(rows, at), values.shape[0] - 1)
        return replace(self, rows=total, indptr=indptr, indices=indices, values=values, which=which)


def _appended(a: np.ndarray, tail, largest: int) -> np.ndarray:
    """``a`` then ``tail``, in a's width or the narrowest that holds ``largest`` if wider."""
    dtype = max(a.dtype, narrow(np.zeros(0), largest).dtype, key=INDEX_DTYPES.index)
    return np.concatenate([a.astype(dtype, copy=False), np.asarray(tail).astype(dtype)])


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
        k, one = self.num_instance, self.fr.one()
        return ConstraintSystem(self.num_public, self.num_variables,
                                self.a.extended(k, np.arange(k), one), self.b.extended(k, None, one),
                                self.c.extended(k, None, one))

    def evaluate(self, w: np.ndarray, out=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A·w, B·w, C·w), into ``out`` buffers when given (e.g. pinned staging memory)."""
        outs = out if out is not None else (None, None, None)
        return tuple(m.matvec(w, o) for m, o in zip((self.a, self.b, self.c), outs))

    def check(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        """Raise UnsatisfiedConstraint at the first row where a*b != c."""
        fr = self.fr
        bad = fr._lib().fr_first_unsatisfied(fr.ptr(a), fr.ptr(b), fr.ptr(c), self.num_constraints)
        if bad >= 0:
            raise UnsatisfiedConstraint(int(bad))
