"""A curve's scalar field Fr, vectorized over numpy arrays: ``Fr.of(curve)``.

An Fr vector is a C-contiguous ``uint64`` array of shape ``(n, 4)``: each row is one
element in Montgomery form (x * 2^256 mod p), little-endian 64-bit limbs. That is 32
bytes an element, the layout the GPU kernels use, so vectors go to the device unchanged.
All values are kept fully reduced. Arithmetic runs in the C kernels of
``proofflow.prover.native``, compiled once per curve with its constants. A vector does not
know its curve: whoever holds one holds the field it belongs to (a domain, a circuit, a
constraint system, a key).
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.native import field_defines, load

_P64 = ctypes.POINTER(ctypes.c_uint64)
_i64 = ctypes.c_int64


class CsrArgs(ctypes.Structure):
    """fr.c's ``csr``: a sparse matrix's arrays as its products read them (``SparseMatrix``)."""
    _fields_ = [("indptr", ctypes.c_void_p), ("indices", ctypes.c_void_p), ("which", ctypes.c_void_p),
                ("values", ctypes.c_void_p), ("rows", _i64), ("cols", _i64), ("nnz", _i64), ("nvalues", _i64),
                ("indptr_width", ctypes.c_int32), ("indices_width", ctypes.c_int32),
                ("which_width", ctypes.c_int32)]


_CSRP = ctypes.POINTER(CsrArgs)
_SIGNATURES = {
    "fr_mul": [_P64, _P64, _i64, _P64, _i64],
    "fr_add": [_P64, _P64, _i64, _P64, _i64],
    "fr_sub": [_P64, _P64, _i64, _P64, _i64],
    "fr_to_mont": [_P64, _P64, _P64, _i64],
    "fr_from_mont": [_P64, _P64, _i64],
    "fr_pow": [_P64, _P64, _P64, _i64],
    "fr_powers": [_P64, _P64, _P64, _i64],
    "fr_batch_inverse": [_P64, _P64, _P64, _i64],
    "fr_ntt": [_P64, ctypes.c_int, _P64],
    "fr_csr_matvec": [_CSRP, _P64, _P64],
    "fr_csr_rmatvec": [_CSRP, _P64, _P64],
    "fr_first_unsatisfied": [_P64, _P64, _P64, _i64],
    "fr_first_unreduced": [_P64, _i64],
    "mimc_trace": [_P64, _P64, _P64, _i64, _P64],
    "mimc_abc": [_P64, _P64, _i64, _P64, _P64, _P64, _i64],
    "bits_abc": [_P64, _i64, _P64, _P64, _P64, _i64],
}


class Fr:
    """The scalar field of ``curve``; one instance a curve (``of``)."""

    LIMBS = 4  # the kernels' layout, CPU and GPU alike

    def __init__(self, curve: Curve):
        if curve.fr.limbs != self.LIMBS:
            raise ValueError(f"{curve.label}'s Fr has {curve.fr.limbs} limbs: the kernels take {self.LIMBS}")
        self.curve = curve
        self.MODULUS = curve.fr.modulus
        self.BYTES = curve.fr.bytes
        self.TWO_ADICITY = curve.fr.two_adicity
        self.MULTIPLICATIVE_GENERATOR = curve.fr.generator
        self._R, self._R2 = curve.fr.montgomery_r, curve.fr.montgomery_r2
        self._defines = field_defines("FR", curve.fr)

    @staticmethod
    @lru_cache(maxsize=None)
    def of(curve: Curve) -> "Fr":
        return Fr(curve)

    def __repr__(self) -> str:
        return f"Fr({self.curve.name})"

    def _lib(self) -> ctypes.CDLL:
        lib = load("fr", defines=self._defines)
        if not getattr(lib, "_proofflow_typed", False):
            for name, args in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.argtypes = args
                fn.restype = _i64 if name in ("fr_batch_inverse", "fr_first_unsatisfied", "fr_first_unreduced",
                                              "fr_csr_matvec", "fr_csr_rmatvec") else ctypes.c_int
            lib._proofflow_typed = True
        return lib

    @staticmethod
    def ptr(a: np.ndarray):
        return a.ctypes.data_as(_P64)

    def _check(self, a: np.ndarray, name: str = "a") -> np.ndarray:
        if not isinstance(a, np.ndarray) or a.dtype != np.uint64 or a.ndim != 2 or a.shape[1] != self.LIMBS:
            raise TypeError(f"{name} must be a uint64 array of shape (n, 4) (an Fr vector)")
        if not a.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous")
        return a

    def _out(self, out: np.ndarray | None, n: int) -> np.ndarray:
        if out is None:
            return np.empty((n, self.LIMBS), dtype=np.uint64)
        self._check(out, "out")
        if out.shape[0] != n:
            raise ValueError(f"out has {out.shape[0]} elements, expected {n}")
        return out

    def _binary(self, fn: str, a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        self._check(a), self._check(b, "b")
        n = a.shape[0]
        if b.shape[0] not in (n, 1):
            raise ValueError(f"b has {b.shape[0]} elements, expected {n} or 1")
        out = self._out(out, n)
        getattr(self._lib(), fn)(self.ptr(a), self.ptr(b), 1 if b.shape[0] == n else 0, self.ptr(out), n)
        return out

    def mul(self, a, b, out=None):
        """a * b element-wise; ``b`` of one element broadcasts."""
        return self._binary("fr_mul", a, b, out)

    def add(self, a, b, out=None):
        return self._binary("fr_add", a, b, out)

    def sub(self, a, b, out=None):
        return self._binary("fr_sub", a, b, out)

    def square(self, a, out=None):
        return self._binary("fr_mul", a, a, out)

    def neg(self, a, out=None):
        return self.sub(self.zeros(a.shape[0]), a, out)

    def _limbs_of(self, x: int) -> np.ndarray:
        return np.frombuffer(x.to_bytes(self.BYTES, "little"), dtype=np.uint64).reshape(1, self.LIMBS).copy()

    def pow_scalar_exp(self, a, exponent: int, out=None):
        """a ** exponent element-wise, for one non-negative integer exponent < 2^256."""
        self._check(a)
        out = self._out(out, a.shape[0])
        self._lib().fr_pow(self.ptr(a), self.ptr(self._limbs_of(exponent)), self.ptr(out), a.shape[0])
        return out

    def batch_inverse(self, a, out=None):
        """1/a element-wise (Montgomery's trick). Raises ZeroDivisionError naming a zero's index."""
        self._check(a)
        out = self._out(out, a.shape[0])
        bad = self._lib().fr_batch_inverse(self.ptr(a), self.ptr(out), self.ptr(self._limbs_of(self.MODULUS - 2)),
                                           a.shape[0])
        if bad >= 0:
            raise ZeroDivisionError(f"element {bad} is zero and has no inverse")
        return out

    def powers(self, base, n: int, start=None, out=None):
        """[start * base^i for i in range(n)] as an Fr vector (start defaults to one)."""
        self._check(base, "base")
        start = self.one() if start is None else self._check(start, "start")
        out = self._out(out, n)
        self._lib().fr_powers(self.ptr(start), self.ptr(base), self.ptr(out), n)
        return out

    # ---- conversions ----

    def from_canonical(self, limbs: np.ndarray, out=None) -> np.ndarray:
        """Canonical (n, 4) uint64 integers < p into Montgomery form."""
        limbs = np.ascontiguousarray(limbs, dtype=np.uint64).reshape(-1, self.LIMBS)
        out = self._out(out, limbs.shape[0])
        if self._lib().fr_to_mont(self.ptr(limbs), self.ptr(self._limbs_of(self._R2)), self.ptr(out), limbs.shape[0]):
            raise ValueError("an input is not a canonical Fr element (it is >= the modulus)")
        return out

    def to_canonical(self, a: np.ndarray, out=None) -> np.ndarray:
        """Montgomery form to canonical integers, still as (n, 4) uint64 limbs."""
        self._check(a)
        out = self._out(out, a.shape[0])
        self._lib().fr_from_mont(self.ptr(a), self.ptr(out), a.shape[0])
        return out

    def from_ints(self, values, out=None) -> np.ndarray:
        """Python ints (any size, reduced mod p) to an Fr vector."""
        raw = b"".join((v % self.MODULUS).to_bytes(self.BYTES, "little") for v in values)
        return self.from_canonical(np.frombuffer(raw, dtype=np.uint64), out)

    def to_ints(self, a: np.ndarray) -> list[int]:
        raw = self.to_canonical(a).tobytes()
        return [int.from_bytes(raw[i:i + self.BYTES], "little") for i in range(0, len(raw), self.BYTES)]

    def from_bytes_le(self, data: bytes | np.ndarray) -> np.ndarray:
        """32-byte little-endian canonical encodings, concatenated, to an Fr vector."""
        buf = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else data.tobytes(), dtype=np.uint8)
        if buf.size % self.BYTES:
            raise ValueError(f"{buf.size} bytes is not a whole number of {self.BYTES}-byte Fr elements")
        return self.from_canonical(buf.view(np.uint64))

    def to_bytes_le(self, a: np.ndarray) -> bytes:
        """Canonical 32-byte little-endian encodings, concatenated."""
        return self.to_canonical(a).tobytes()

    # ---- constructors ----

    def zeros(self, n: int) -> np.ndarray:
        return np.zeros((n, self.LIMBS), dtype=np.uint64)

    def one(self) -> np.ndarray:
        return self._limbs_of(self._R)

    def ones(self, n: int) -> np.ndarray:
        return np.repeat(self.one(), n, axis=0)

    def constant(self, x: int) -> np.ndarray:
        """One element as a length-1 Fr vector (broadcasts in the binary ops)."""
        return self.from_ints([x])

    def random(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n random elements: the top limb is drawn below p's top limb, so every draw is < p
        (uniform up to a 2^-63 bias, fine for test data and blinding)."""
        limbs = rng.integers(0, 2**64 - 1, size=(n, self.LIMBS), dtype=np.uint64, endpoint=True)
        limbs[:, -1] = rng.integers(0, self.MODULUS >> (64 * (self.LIMBS - 1)), size=n, dtype=np.uint64)
        return self.from_canonical(limbs)

    @staticmethod
    def equal(a: np.ndarray, b: np.ndarray) -> bool:
        return a.shape == b.shape and bool(np.array_equal(a, b))
