"""The staging pool in pageable mode (no GPU needed): budget, blocking, reuse, cleanup."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from proofflow.prover.staging.pool import StagingPool, StagingTimeout

MiB = 1 << 20


def test_acquire_release_and_views():
    pool = StagingPool(4 * MiB, pinned=False)
    buf = pool.acquire(1 * MiB)
    assert pool.stats()["in_use"] == 1 * MiB
    v = buf.fr_vector(1000)
    assert v.shape == (1000, 4) and v.dtype == np.uint64 and v.flags.c_contiguous
    v[:] = 7
    assert buf.array[:8].view(np.uint64)[0] == 7  # the view writes into the buffer itself
    with pytest.raises(ValueError):
        buf.fr_vector(MiB)  # 32 MiB does not fit a 1 MiB buffer
    buf.release()
    buf.release()  # idempotent
    s = pool.stats()
    assert s["in_use"] == 0 and s["buffers"] == 1 and s["budget"] == 4 * MiB


def test_blocks_then_times_out():
    pool = StagingPool(2 * MiB, pinned=False)
    held = pool.acquire(2 * MiB)
    t0 = time.monotonic()
    with pytest.raises(StagingTimeout, match="no room"):
        pool.acquire(1 * MiB, timeout=0.2)
    assert time.monotonic() - t0 >= 0.2
    held.release()
    pool.acquire(1 * MiB, timeout=0).release()


def test_waiter_wakes_when_room_is_released():
    pool = StagingPool(2 * MiB, pinned=False)
    held = pool.acquire(2 * MiB)
    threading.Timer(0.1, held.release).start()
    with pool.acquire(2 * MiB, timeout=5) as buf:
        assert buf.nbytes == 2 * MiB


def test_high_water_mark():
    pool = StagingPool(8 * MiB, pinned=False)
    a, b = pool.acquire(3 * MiB), pool.acquire(2 * MiB)
    a.release()
    b.release()
    pool.acquire(1 * MiB).release()
    s = pool.stats()
    assert s["high_water"] == 5 * MiB and s["in_use"] == 0


def test_buffers_are_reused_by_size():
    pool = StagingPool(8 * MiB, pinned=False)
    with pool.acquire(3 * MiB) as a:
        addr = a.array.ctypes.data
    with pool.acquire(3 * MiB - 5) as b:  # rounds up to the same capacity
        assert b.array.ctypes.data == addr and b.nbytes == 3 * MiB - 5
    assert pool.stats()["buffers"] == 1


def test_idle_buffers_are_evicted_for_other_sizes():
    pool = StagingPool(4 * MiB, pinned=False)
    pool.acquire(3 * MiB).release()
    with pool.acquire(2 * MiB, timeout=0):  # 3 + 2 > 4: the idle 3 MiB block goes
        s = pool.stats()
        assert s["allocated"] == 2 * MiB and s["buffers"] == 1


def test_released_on_exception():
    pool = StagingPool(2 * MiB, pinned=False)
    with pytest.raises(RuntimeError):
        with pool.acquire(2 * MiB):
            raise RuntimeError("synthesis failed")
    assert pool.stats()["in_use"] == 0
    pool.acquire(2 * MiB, timeout=0).release()


def test_oversize_request_is_an_error():
    pool = StagingPool(2 * MiB, pinned=False)
    with pytest.raises(ValueError, match="can never fit"):
        pool.acquire(2 * MiB + 1)


def test_contention_never_exceeds_budget():
    budget = 10 * MiB
    pool = StagingPool(budget, pinned=False)
    errors, peak = [], [0]
    lock = threading.Lock()

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(30):
                size = int(rng.integers(1, 5)) * MiB
                with pool.acquire(size, timeout=10) as buf:
                    s = pool.stats()
                    with lock:
                        peak[0] = max(peak[0], s["in_use"])
                    assert s["in_use"] <= budget and s["allocated"] <= budget
                    buf.array[:16] = seed
                    time.sleep(0.001)
                    assert (buf.array[:16] == seed).all()  # nobody else holds this memory
        except BaseException as e:  # surfaced below: pytest cannot see thread failures
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    s = pool.stats()
    assert s["in_use"] == 0 and s["high_water"] <= budget and peak[0] <= budget
