"""A pool of host staging buffers under a memory budget, pinned when a GPU is there.

Synthesis writes the a/b/c vectors straight into these buffers (``Buffer.fr_vector``),
and the GPU backend uploads from them. Page-locked ("pinned") memory copies to the
device at full PCIe rate (~55 GB/s measured on the H200 machine, against ~6 GB/s from
pageable numpy memory), and a memcpy into a pinned bounce buffer costs as much as the
slow path, so the data has to be produced in pinned memory in the first place.

Pinned memory is a scarce, unswappable resource, so the pool caps what it holds: an
``acquire`` that does not fit waits until other holders release enough, and gives up
with ``StagingTimeout``. Released buffers are kept for reuse (pinning is slow: hundreds
of ms a GiB) and freed only to make room for a request of another size.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import numpy as np

from proofflow import settings
from proofflow.phases import Phase
from proofflow.prover import device
from proofflow.prover.errors import InputError, StagingTimeout
from proofflow.prover import timing

_ALIGN = 1 << 16  # sizes round up to 64 KiB, so near-equal requests share buffers


class Buffer:
    """One staging buffer; hand it back with ``release()`` or a ``with`` block.

    Views from it must not be used after release: the memory goes to the next holder.
    """

    def __init__(self, pool: "StagingPool", mem, capacity: int, nbytes: int):
        self._pool, self._mem = pool, mem
        self.capacity = capacity
        self.nbytes = nbytes
        self.array = np.frombuffer(mem, dtype=np.uint8, count=capacity)[:nbytes]
        self.released = False

    @property
    def pinned(self) -> bool:
        return self._pool.pinned

    def view(self, dtype, shape) -> np.ndarray:
        """A C-contiguous view of the first bytes as ``dtype`` of ``shape``."""
        count = int(np.prod(shape))
        size = count * np.dtype(dtype).itemsize
        if size > self.nbytes:
            raise ValueError(f"a {dtype} view of shape {shape} needs {size} bytes; the buffer has {self.nbytes}")
        return self.array[:size].view(dtype).reshape(shape)

    def fr_vector(self, n: int) -> np.ndarray:
        """An (n, 4) uint64 Fr vector backed by this buffer."""
        return self.view(np.uint64, (n, 4))

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._pool._release(self)

    def __enter__(self) -> "Buffer":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class StagingPool:
    def __init__(self, budget_bytes: int, pinned: bool = True):
        if budget_bytes <= 0:
            raise ValueError("budget_bytes must be positive")
        self.budget = int(budget_bytes)
        self.pinned = pinned
        self._cond = threading.Condition()
        self._free: dict[int, list] = defaultdict(list)  # capacity -> idle memory blocks
        self._allocated = 0  # bytes held: in use plus idle
        self._in_use = 0
        self._high_water = 0
        self._buffers = 0  # blocks held

    @staticmethod
    def block_size(nbytes: int) -> int:
        """The budget a request of ``nbytes`` takes (sizes round up to 64 KiB)."""
        return max(_ALIGN, -(-nbytes // _ALIGN) * _ALIGN)

    def _alloc(self, size: int):
        return device.pinned(size) if self.pinned else np.empty(size, dtype=np.uint8)

    def _evict_for(self, size: int) -> None:
        """Free idle blocks (of other sizes) until ``size`` more bytes fit the budget."""
        for cap in list(self._free):
            while self._free[cap] and self._allocated + size > self.budget:
                self._free[cap].pop()
                self._allocated -= cap
                self._buffers -= 1
            if not self._free[cap]:
                del self._free[cap]

    def acquire(self, nbytes: int, timeout: float | None = None) -> Buffer:
        """A buffer of at least ``nbytes``, waiting up to ``timeout`` seconds (None: forever)
        for room in the budget."""
        if nbytes < 0:
            raise ValueError("nbytes must be non-negative")
        cap = self.block_size(nbytes)
        if cap > self.budget:
            raise ValueError(f"a request of {nbytes} bytes can never fit the staging budget of {self.budget} bytes")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            # idle blocks count against the budget too, but can always be evicted, so
            # only what is in use can make a request wait
            while self._in_use + cap > self.budget:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise StagingTimeout(
                        f"no room for {nbytes} bytes within {timeout} s: {self._in_use} of {self.budget} bytes in use")
                self._cond.wait(left)
            if self._free.get(cap):
                mem = self._free[cap].pop()
            else:
                self._evict_for(cap)
                mem = None
                self._allocated += cap
                self._buffers += 1
            self._in_use += cap
            self._high_water = max(self._high_water, self._in_use)
        if mem is None:
            try:  # allocate outside the lock: pinning a large block takes a while
                mem = self._alloc(cap)
            except BaseException:
                with self._cond:
                    self._allocated -= cap
                    self._buffers -= 1
                    self._in_use -= cap
                    self._cond.notify_all()
                raise
        return Buffer(self, mem, cap, nbytes)

    def _release(self, buf: Buffer) -> None:
        with self._cond:
            self._free[buf.capacity].append(buf._mem)
            buf._mem = buf.array = None  # so evicting the block really frees it
            self._in_use -= buf.capacity
            self._cond.notify_all()

    def trim(self) -> int:
        """Free every idle block (after an out-of-memory error); returns the bytes freed."""
        with self._cond:
            freed = sum(cap * len(blocks) for cap, blocks in self._free.items())
            self._buffers -= sum(len(blocks) for blocks in self._free.values())
            self._allocated -= freed
            self._free.clear()
        return freed

    def stats(self) -> dict:
        with self._cond:
            return {"budget": self.budget, "in_use": self._in_use, "high_water": self._high_water,
                    "allocated": self._allocated, "buffers": self._buffers, "pinned": self.pinned}


# one pool of each kind a process, so the budget bounds everything the process holds
_pools: dict[bool, StagingPool] = {}
_pools_lock = threading.Lock()


def staging_pool(pinned: bool) -> StagingPool:
    """This process's staging pool of the kind (page-locked or not), under the budget of
    PROOFFLOW_STAGING_BUDGET: one per process, so the budget bounds everything it holds."""
    with _pools_lock:
        if pinned not in _pools:
            _pools[pinned] = StagingPool(settings.current().staging_budget, pinned=pinned)
        return _pools[pinned]


def acquire(pool: StagingPool, nbytes: int, timer=None, timeout: float | None = None) -> Buffer:
    """A buffer of the pool, the wait timed as ``staging_wait``; one that can never fit is an
    InputError."""
    with timing.ensure(timer).phase(Phase.STAGING_WAIT):
        try:
            return pool.acquire(nbytes, timeout=settings.current().staging_timeout_s if timeout is None else timeout)
        except ValueError as exc:  # can never fit: no retry would help
            raise InputError(f"{exc} (PROOFFLOW_STAGING_BUDGET)") from None
