"""A compressed key table uploaded to the device and decompressed there (``decompress.cu``):
the compressed rows (half the bytes of xy) go up a chunk at a time into one of two staging
buffers, on a stream of their own, while the kernel decompresses the chunk before into the
table's place, so the copies and the square roots overlap. Out comes what the MSMs read (an
(n, affine limbs) uint64 array, Montgomery form) or, for the tests, the canonical xy-LE rows
the CPU's decompression gives (``native.compressed``, its twin). A refused point is a
KeyFormatError naming the table's file and the row, raised once every chunk is done."""
from __future__ import annotations

import cupy as cp
import numpy as np

from proofflow.prover.device import cache, pippenger
from proofflow.prover.device.options import DeviceOptions
from proofflow.prover.errors import KeyFormatError
from proofflow.prover.native.compressed import REASONS
from proofflow.prover.points import PointTable

CHUNK = 1 << 22  # rows a copy: 384 MiB of G2 rows on BLS12-381, two buffers of it on the device
_NONE = np.uint64(2**64 - 1)  # no row refused
_THREADS = 128  # the kernel's launch bounds


def kernel(table: PointTable, options: DeviceOptions):
    """decompress.cu's kernel for the table's curve and group (``cache.load``: once a process)."""
    module = cache.load_curve_module(table.curve, "decompress.cu", table.group, options)
    return module.get_function(f"decompress_{table.group}")


def upload(table: PointTable, options: DeviceOptions, mont: bool = True, chunk: int = CHUNK,
           spans: dict | None = None) -> cp.ndarray:
    """The compressed table's points on the current device, decompressed and checked there:
    (n, affine limbs) uint64, Montgomery form (``mont``, what ``msm.device_points`` keeps) or
    canonical. ``spans``, if given, gets the kernels' device milliseconds ("decompress_ms")."""
    if table.compressed is None:
        raise ValueError(f"{table.origin} is not compressed")
    rows, curve, group = table.compressed, table.curve, table.group
    n, width = len(table), curve.compressed_bytes(group)
    out = cp.empty((n, pippenger.affine_limbs(curve, group)), dtype=cp.uint64)
    bad = cp.full(1, _NONE, dtype=cp.uint64)
    fn = kernel(table, options)
    compute, copies = cp.cuda.get_current_stream(), cp.cuda.Stream(non_blocking=True)
    size = max(1, min(chunk, n))
    buffers = [cp.empty((size, width), dtype=cp.uint8) for _ in range(2 if n > size else 1)]
    freed: list = [None] * len(buffers)  # the kernel that last read each buffer, done
    timed = []
    for k, lo in enumerate(range(0, n, size)):
        hi, b = min(n, lo + size), k % len(buffers)
        if freed[b] is not None:
            copies.wait_event(freed[b])
        # from the (memory-mapped) file itself: a page-locked copy of it first would cost a pass
        buffers[b][:hi - lo].set(np.ascontiguousarray(rows[lo:hi]), stream=copies)
        compute.wait_event(copies.record())
        start = compute.record() if spans is not None else None
        fn((-(-(hi - lo) // _THREADS),), (_THREADS,),
           (buffers[b], out[lo:hi], np.uint64(hi - lo), np.uint64(lo), np.int32(int(mont)), bad))
        freed[b] = compute.record()
        if start is not None:
            timed.append((start, freed[b]))
    compute.synchronize()
    if spans is not None:
        spans["decompress_ms"] = spans.get("decompress_ms", 0.0) + sum(cp.cuda.get_elapsed_time(a, e)
                                                                       for a, e in timed)
    code = int(bad.get()[0])
    if code != _NONE:
        raise KeyFormatError(f"{table.origin}: row {code >> 8} is not a compressed {curve.label} {group.upper()} "
                             f"point: {REASONS.get(code & 0xff, 'unknown reason')}")
    return out
