"""The host side of ``proofflow/prover/device/fixed_base.cu``: s_i * G for the setup's key tables.

The kernel adds, for each 8-bit window w of a scalar with digit d != 0, the table point
T[w][d] = d * 2^(8w) * G, and turns a thread's ``BATCH`` sums affine with one inversion
(Montgomery's trick; the sums wait in a scratch of 4 coordinates a point). The table (32 x
256 points, d = 0 unused) is built here once per curve and group with its point library's
additions and handed to the kernel in affine Montgomery form. Like ``pippenger``, this runs on an executor (CuPy,
or the CPU twin in tests) and imports neither CuPy nor a compiler.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.device.pippenger import Executor, affine_limbs, xyzz_limbs

WINDOWS, DIGITS = 32, 256  # 8-bit windows of a 256-bit scalar, as FB_WINDOWS / FB_DIGITS
CHUNK = 1 << 22  # scalars a launch: bounds the device memory of one call's buffers (G2: 1.5 GiB of scratch)
BATCH = 32  # scalars a thread takes, with one inversion (a launch of CHUNK: 2^17 threads)


@lru_cache(maxsize=None)
def window_table(curve: Curve, group: str) -> np.ndarray:
    """T[w * 256 + d] = d * 2^(8w) * G as (8192, affine_limbs) uint64, Montgomery form;
    row d = 0 is zeros (the kernel never reads it)."""
    cls = curve.point_class(group)
    raw = []
    base = cls()  # 2^(8w) * G
    for _ in range(WINDOWS):
        acc = cls.identity()
        for _ in range(DIGITS):
            raw.append(acc.to_xy_bytes_le())
            acc = acc + base
        base = acc  # 256 * 2^(8w) * G
    q, r, width = curve.fq.modulus, curve.fq.montgomery_r, curve.fq.bytes
    table = np.frombuffer(b"".join(raw), dtype=np.uint64).reshape(-1, curve.fq.limbs).copy()
    for row in table:  # each Fq coordinate part to Montgomery form (x * R mod q)
        row[:] = np.frombuffer((int.from_bytes(row.tobytes(), "little") * r % q).to_bytes(width, "little"),
                               dtype=np.uint64)
    return table.reshape(WINDOWS * DIGITS, affine_limbs(curve, group))


def multiples(ex: Executor, group: str, table, scalars: np.ndarray,
              progress: Callable[[int], None] | None = None, chunk: int = CHUNK) -> np.ndarray:
    """[s * G for s in scalars] as (n, xy_bytes) uint8 xy-LE rows (zeros for s = 0):
    ``table`` is ``window_table(ex.curve, group)`` on the executor, ``scalars`` an Fr vector
    on the host. ``progress(count)`` after each launch."""
    if scalars.dtype != np.uint64 or scalars.ndim != 2 or scalars.shape[1] != 4:
        raise ValueError(f"scalars must be an Fr vector (uint64 of shape (n, 4)), got {scalars.dtype} {scalars.shape}")
    xp, n, width = ex.xp, scalars.shape[0], affine_limbs(ex.curve, group)
    out = np.empty((n, width), dtype=np.uint64)
    tmp = xp.empty(min(n, chunk) * xyzz_limbs(ex.curve, group), dtype=xp.uint64)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        s = xp.ascontiguousarray(xp.asarray(scalars[lo:hi]))
        o = xp.empty((hi - lo, width), dtype=xp.uint64)
        ex.launch(f"fixed_base_{group}", -(-(hi - lo) // BATCH), table, s, np.uint64(hi - lo), o, tmp, np.uint32(BATCH))
        out[lo:hi] = ex.host(o)
        if progress:
            progress(hi - lo)
    return out.view(np.uint8).reshape(n, ex.curve.xy_bytes(group))
