"""The staging pool's budget as a property: many threads acquiring random sizes with random
timeouts, raising inside their blocks, releasing twice, asking for what can never fit, and
allocations failing; the memory that really exists (counted by the blocks' own lifetimes,
not the pool's bookkeeping) never exceeds the budget, and every exit path gives it back."""
from __future__ import annotations

import gc
import os
import random
import threading
import time
import weakref

import pytest

import reliability_figures as figures
from proofflow.prover.staging.pool import StagingPool, StagingTimeout

KiB = 1 << 10


class AuditedPool(StagingPool):
    """A pageable pool that counts the bytes of its blocks while they are alive, and fails
    some allocations as an exhausted host would."""

    def __init__(self, budget, rng, fail_rate):
        super().__init__(budget, pinned=False)
        self.rng, self.fail_rate = rng, fail_rate
        self.live = self.peak_live = 0
        self.audit = threading.Lock()
        self.failed_allocs = 0

    def _freed(self, size):
        with self.audit:
            self.live -= size

    def _alloc(self, size):
        with self.audit:
            if self.rng.random() < self.fail_rate:
                self.failed_allocs += 1
                raise MemoryError(f"injected: no host memory for {size} bytes")
        mem = super()._alloc(size)
        with self.audit:
            self.live += size
            self.peak_live = max(self.peak_live, self.live)
        weakref.finalize(mem, self._freed, size)
        return mem


class Boom(Exception):
    pass


@pytest.mark.reliability
def test_the_budget_holds_under_concurrent_acquirers_on_every_exit_path(soak):
    seed = int(os.environ.get("PROOFFLOW_FAULT_SEED", time.time_ns() % 100000))
    print(f"staging property seed {seed}")
    rng = random.Random(seed)
    budget = 1024 * KiB
    pool = AuditedPool(budget, random.Random(seed + 1), fail_rate=0.05)
    sizes = [1, 60 * KiB, 64 * KiB, 100 * KiB, 200 * KiB, 500 * KiB, budget]  # block sizes 64 KiB .. the budget
    threads, per_thread = 8, (1500 if soak else 250)
    counts = {"acquired": 0, "timeouts": 0, "raised_inside": 0, "never_fit": 0, "alloc_failed": 0}
    violations, lock = [], threading.Lock()

    def check(where):
        s = pool.stats()
        with pool.audit:
            live = pool.live
        if s["in_use"] > budget or s["allocated"] > budget or live > budget:
            violations.append((where, s, live))

    def worker(wid):
        r = random.Random(rng.random())
        for _ in range(per_thread):
            action = r.random()
            try:
                if action < 0.03:
                    pool.acquire(budget + 1)
                    violations.append(("a request beyond the budget was granted",))
                    continue
                with pool.acquire(r.choice(sizes), timeout=r.choice([0, 0.001, 0.01, 0.1])) as buf:
                    view = buf.view("uint8", (buf.nbytes,))
                    view[:1] = wid  # touch it
                    with lock:
                        counts["acquired"] += 1
                    check("held")
                    time.sleep(r.random() * 0.002)
                    del view  # views must not outlive the buffer (the pool's contract)
                    if action < 0.2:
                        raise Boom()
                    if action < 0.3:
                        buf.release()  # early, then again by the with block: idempotent
                check("released")
            except Boom:
                with lock:
                    counts["raised_inside"] += 1
            except StagingTimeout:
                with lock:
                    counts["timeouts"] += 1
            except MemoryError:
                with lock:
                    counts["alloc_failed"] += 1
            except ValueError as exc:
                assert "can never fit the staging budget" in str(exc)
                with lock:
                    counts["never_fit"] += 1

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    assert not any(t.is_alive() for t in ts), "an acquirer is stuck: a release was lost"
    assert violations == []
    s = pool.stats()
    assert s["in_use"] == 0, "a buffer was never given back"
    gc.collect()
    assert pool.live == s["allocated"] <= budget  # what the pool holds idle is all that exists
    assert pool.peak_live <= budget and s["high_water"] <= budget
    pool.trim()
    gc.collect()
    assert pool.live == 0 and pool.stats()["allocated"] == 0 and pool.stats()["buffers"] == 0
    assert counts["acquired"] and counts["timeouts"] and counts["raised_inside"] and counts["never_fit"]
    assert counts["alloc_failed"] == pool.failed_allocs > 0
    requests = threads * per_thread
    print(f"staging pool: {requests} requests by {threads} threads ({counts}); peak {pool.peak_live} of {budget} "
          "bytes; nothing held after")
    figures.add("staging pool requests checked against the budget (concurrent threads)", requests)
    figures.put("staging pool peak / budget bytes (property test)", [pool.peak_live, budget])
