"""The scalar field Fr of BLS12-381, vectorized over numpy arrays.

An Fr vector is a C-contiguous ``uint64`` array of shape ``(n, 4)``: each row is one
element in Montgomery form (x * 2^256 mod p), little-endian 64-bit limbs. That is 32
bytes an element, the layout the GPU kernels use, so vectors go to the device unchanged.
All values are kept fully reduced. Arithmetic runs in the C kernels of ``proofflow.prover.native``.
"""
from __future__ import annotations

import ctypes

import numpy as np

from proofflow.prover.native import load

MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
BYTES = 32
LIMBS = 4
TWO_ADICITY = 32
# 7 generates Fr*: it is a quadratic non-residue and the coset offset arkworks uses too.
MULTIPLICATIVE_GENERATOR = 7
_R = (1 << 256) % MODULUS
_R2 = (_R * _R) % MODULUS

_P64 = ctypes.POINTER(ctypes.c_uint64)
_I64P = ctypes.POINTER(ctypes.c_int64)
_i64 = ctypes.c_int64


def _lib() -> ctypes.CDLL:
    lib = load("fr")
    if not getattr(lib, "_proofflow_typed", False):
        sig = {
            "fr_mul": [_P64, _P64, _i64, _P64, _i64],
            "fr_add": [_P64, _P64, _i64, _P64, _i64],
            "fr_sub": [_P64, _P64, _i64, _P64, _i64],
            "fr_to_mont": [_P64, _P64, _P64, _i64],
            "fr_from_mont": [_P64, _P64, _i64],
            "fr_pow": [_P64, _P64, _P64, _i64],
            "fr_powers": [_P64, _P64, _P64, _i64],
            "fr_batch_inverse": [_P64, _P64, _P64, _i64],
            "fr_ntt": [_P64, ctypes.c_int, _P64],
            "fr_csr_matvec": [_I64P, _I64P, _P64, _P64, _P64, _i64],
            "fr_first_unsatisfied": [_P64, _P64, _P64, _i64],
            "mimc_trace": [_P64, _P64, _P64, _i64, _P64],
            "mimc_abc": [_P64, _P64, _i64, _P64, _P64, _P64, _i64],
            "bits_abc": [_P64, _i64, _P64, _P64, _P64, _i64],
        }
        for name, args in sig.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = _i64 if name in ("fr_batch_inverse", "fr_first_unsatisfied") else ctypes.c_int
        lib._proofflow_typed = True
    return lib


def ptr(a: np.ndarray):
    return a.ctypes.data_as(_P64)


def _iptr(a: np.ndarray):
    return a.ctypes.data_as(_I64P)


def _check(a: np.ndarray, name: str = "a") -> np.ndarray:
    if not isinstance(a, np.ndarray) or a.dtype != np.uint64 or a.ndim != 2 or a.shape[1] != LIMBS:
        raise TypeError(f"{name} must be a uint64 array of shape (n, 4) (an Fr vector)")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return a


def _out(out: np.ndarray | None, n: int) -> np.ndarray:
    if out is None:
        return np.empty((n, LIMBS), dtype=np.uint64)
    _check(out, "out")
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} elements, expected {n}")
    return out


def _binary(fn: str, a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    _check(a), _check(b, "b")
    n = a.shape[0]
    if b.shape[0] not in (n, 1):
        raise ValueError(f"b has {b.shape[0]} elements, expected {n} or 1")
    out = _out(out, n)
    getattr(_lib(), fn)(ptr(a), ptr(b), 1 if b.shape[0] == n else 0, ptr(out), n)
    return out


def mul(a, b, out=None):
    """a * b element-wise; ``b`` of one element broadcasts."""
    return _binary("fr_mul", a, b, out)


def add(a, b, out=None):
    return _binary("fr_add", a, b, out)


def sub(a, b, out=None):
    return _binary("fr_sub", a, b, out)


def square(a, out=None):
    return _binary("fr_mul", a, a, out)


def neg(a, out=None):
    return sub(zeros(a.shape[0]), a, out)


def _limbs_of(x: int) -> np.ndarray:
    return np.frombuffer(x.to_bytes(BYTES, "little"), dtype=np.uint64).reshape(1, LIMBS).copy()


def pow_scalar_exp(a, exponent: int, out=None):
    """a ** exponent element-wise, for one non-negative integer exponent < 2^256."""
    _check(a)
    out = _out(out, a.shape[0])
    _lib().fr_pow(ptr(a), ptr(_limbs_of(exponent)), ptr(out), a.shape[0])
    return out


def batch_inverse(a, out=None):
    """1/a element-wise (Montgomery's trick). Raises ZeroDivisionError naming a zero's index."""
    _check(a)
    out = _out(out, a.shape[0])
    bad = _lib().fr_batch_inverse(ptr(a), ptr(out), ptr(_limbs_of(MODULUS - 2)), a.shape[0])
    if bad >= 0:
        raise ZeroDivisionError(f"element {bad} is zero and has no inverse")
    return out


def powers(base, n: int, start=None, out=None):
    """[start * base^i for i in range(n)] as an Fr vector (start defaults to one)."""
    _check(base, "base")
    start = one() if start is None else _check(start, "start")
    out = _out(out, n)
    _lib().fr_powers(ptr(start), ptr(base), ptr(out), n)
    return out


# ---- conversions ----

def from_canonical(limbs: np.ndarray, out=None) -> np.ndarray:
    """Canonical (n, 4) uint64 integers < p into Montgomery form."""
    limbs = np.ascontiguousarray(limbs, dtype=np.uint64).reshape(-1, LIMBS)
    out = _out(out, limbs.shape[0])
    if _lib().fr_to_mont(ptr(limbs), ptr(_limbs_of(_R2)), ptr(out), limbs.shape[0]):
        raise ValueError("an input is not a canonical Fr element (it is >= the modulus)")
    return out


def to_canonical(a: np.ndarray, out=None) -> np.ndarray:
    """Montgomery form to canonical integers, still as (n, 4) uint64 limbs."""
    _check(a)
    out = _out(out, a.shape[0])
    _lib().fr_from_mont(ptr(a), ptr(out), a.shape[0])
    return out


def from_ints(values, out=None) -> np.ndarray:
    """Python ints (any size, reduced mod p) to an Fr vector."""
    raw = b"".join((v % MODULUS).to_bytes(BYTES, "little") for v in values)
    return from_canonical(np.frombuffer(raw, dtype=np.uint64), out)


def to_ints(a: np.ndarray) -> list[int]:
    raw = to_canonical(a).tobytes()
    return [int.from_bytes(raw[i:i + BYTES], "little") for i in range(0, len(raw), BYTES)]


def from_bytes_le(data: bytes | np.ndarray) -> np.ndarray:
    """32-byte little-endian canonical encodings, concatenated, to an Fr vector."""
    buf = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else data.tobytes(), dtype=np.uint8)
    if buf.size % BYTES:
        raise ValueError(f"{buf.size} bytes is not a whole number of {BYTES}-byte Fr elements")
    return from_canonical(buf.view(np.uint64))


def to_bytes_le(a: np.ndarray) -> bytes:
    """Canonical 32-byte little-endian encodings, concatenated."""
    return to_canonical(a).tobytes()


# ---- constructors ----

def zeros(n: int) -> np.ndarray:
    return np.zeros((n, LIMBS), dtype=np.uint64)


def one() -> np.ndarray:
    return _limbs_of(_R)


def ones(n: int) -> np.ndarray:
    return np.repeat(one(), n, axis=0)


def constant(x: int) -> np.ndarray:
    """One element as a length-1 Fr vector (broadcasts in the binary ops)."""
    return from_ints([x])


def random(n: int, rng: np.random.Generator) -> np.ndarray:
    """n random elements: the top limb is drawn below p's top limb, so every draw is < p
    (uniform up to a 2^-63 bias, fine for test data and blinding)."""
    limbs = rng.integers(0, 2**64 - 1, size=(n, LIMBS), dtype=np.uint64, endpoint=True)
    limbs[:, 3] = rng.integers(0, MODULUS >> 192, size=n, dtype=np.uint64)
    return from_canonical(limbs)


def equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b))
