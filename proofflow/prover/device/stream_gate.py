"""Holding a stream until its work is enqueued, so CUDA events time the copies alone.

A transfer is timed by events recorded around the copy on its stream. In the prover service
the upload thread shares the GIL with the device thread and the job threads: each CuPy call
releases it, and getting it back can take up to the interpreter's switch interval (5 ms).
Had the start event been recorded on an idle stream, that delay would fall between the
events and count as transfer time: a 2^22 partition's 0.4 GB take 7 ms at 55 GB/s, so a few
milliseconds read as ~40 GB/s, and check_h2d flagged good transfers under load.

So the stream first waits on a word of pinned host memory (the driver's
``cuStreamWaitValue32``, which uses no multiprocessor), then gets the start event, the
copies and the end event; the host releases the word once all of it is enqueued, and the
device runs the three back to back. Each thread has its own word (gates of different
threads never release each other's streams). Where the driver refuses the wait, the copies
run ungated, as before, and ``available()`` says so.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import threading

import cupy as cp
import numpy as np

log = logging.getLogger(__name__)

_WAIT_GEQ = 0x0  # CU_STREAM_WAIT_VALUE_GEQ: (int32)(*addr - value) >= 0, so the counter may wrap
_local = threading.local()


_broken: list[str] = []  # why the driver's wait is not used in this process, once known


def _wait_fn():
    """The driver's ``cuStreamWaitValue32`` (CUDA 12+ exports the v2 semantics under both names)."""
    lib = ctypes.CDLL("libcuda.so.1")
    for name in ("cuStreamWaitValue32_v2", "cuStreamWaitValue32"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
            fn.restype = ctypes.c_int
            return fn
    raise OSError("libcuda.so.1 exports no cuStreamWaitValue32")


class _Gate:
    """One thread's word of pinned memory and its counter."""

    def __init__(self):
        self.mem = cp.cuda.alloc_pinned_memory(4)  # mapped: under UVA its host address is its device one
        self.word = np.frombuffer(self.mem, dtype=np.uint32, count=1)
        self.word[0] = 0
        self.count = 0
        self.wait = _wait_fn()


def available() -> bool:
    """Whether copies are gated (False once the driver refused a wait)."""
    return not _broken


@contextlib.contextmanager
def held(stream: cp.cuda.Stream):
    """``stream`` does nothing enqueued in the block until the block ends. Only for work
    whose enqueueing does not wait for the stream (a copy from pageable memory does: it
    would wait forever)."""
    gate = None
    if not _broken:
        try:
            gate = getattr(_local, "gate", None) or _Gate()
            _local.gate = gate
            value = (gate.count + 1) & 0xFFFFFFFF
            rc = gate.wait(stream.ptr, gate.mem.ptr, value, _WAIT_GEQ)
            if rc != 0:
                raise OSError(f"cuStreamWaitValue32 returned CUDA error {rc}")
            gate.count = value
        except OSError as exc:
            _broken.append(str(exc))
            log.warning("transfers are timed ungated (%s): a busy host can inflate their times", exc)
            gate = None
    try:
        yield
    finally:
        if gate is not None:
            gate.word[0] = gate.count  # released even when enqueueing failed: the stream must not hang
