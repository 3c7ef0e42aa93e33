"""The prove jobs waiting for a device's upload thread: highest priority first, in arrival
order within a priority (``spec.Priority.rank``), so a high-priority run's partitions
overtake a low one's that are still waiting; a cancelled run's jobs are taken out at once
(``remove``)."""
from __future__ import annotations

import heapq
import itertools
import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class JobQueue(Generic[T]):
    def __init__(self):
        self._heap: list[tuple[int, int, T]] = []
        self._arrival = itertools.count()  # ties within a rank go first come, first served
        self._ready = threading.Condition()
        self._closed = False

    def put(self, job: T, rank: int) -> None:
        with self._ready:
            heapq.heappush(self._heap, (rank, next(self._arrival), job))
            self._ready.notify()

    def get(self) -> T | None:
        """The next job, waiting for one; None once the queue is closed and empty."""
        with self._ready:
            while not self._heap and not self._closed:
                self._ready.wait()
            return heapq.heappop(self._heap)[2] if self._heap else None

    def remove(self, which: Callable[[T], bool]) -> list[T]:
        """Take out the waiting jobs ``which`` selects, in queue order."""
        with self._ready:
            taken, kept = [], []
            for entry in self._heap:
                (taken if which(entry[2]) else kept).append(entry)
            if taken:
                heapq.heapify(kept)
                self._heap = kept
            return [job for _, _, job in sorted(taken)]

    def counts(self, rank_of: Callable[[T], object]) -> dict:
        """The waiting jobs counted by ``rank_of`` (e.g. their priority)."""
        with self._ready:
            out: dict = {}
            for _, _, job in self._heap:
                key = rank_of(job)
                out[key] = out.get(key, 0) + 1
            return out

    def close(self) -> None:
        """No more jobs: ``get`` returns None once the waiting ones are taken."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
