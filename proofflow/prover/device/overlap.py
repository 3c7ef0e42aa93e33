"""A proof's independent MSMs at once (``GpuBackend(overlap=True)``, PROOFFLOW_MSM_OVERLAP).

Run one after another, each MSM leaves the device part idle: its small launches (the sort's
scans, the merges, the reduction's 2^15-thread kernels) do not fill it, and its host steps
(``int(offsets[-1])`` and the other sizes ``pippenger.msm`` and ``sparse.msm`` read back,
the windows' combination in arkworks) leave it empty. The five MSMs of a proof (A, B_G1,
B_G2, L, H) share nothing but their inputs, so here each runs in a thread of its own with
a CUDA stream of its own (its lane): a lane's host syncs wait for its own stream only, and
while one lane waits or launches small kernels, the others' kernels fill the device. The
MSM code itself is unchanged (CuPy launches on the calling thread's current stream).

A lane's stream is kept from proof to proof (CuPy's pool caches freed blocks per stream, so
a lane reuses its own scratch), waits for what the caller enqueued before (H, the uploads),
and is synchronized before its result is handed back: when ``Lanes.run`` returns, no kernel
still reads the witness or H, which the caller then frees. The costliest MSM starts first
(``order``): a proof's B_G2 takes about as long as its four G1 MSMs together, so it must
not queue behind their kernels. The price is memory: the lanes' scratch adds up where one
MSM's did before (``pippenger.scratch_bytes``, counted by ``proofflow.prover.resources``).

This module imports no CuPy: ``Lanes`` runs any tasks in any lanes (the CPU tests give it
the kernel twin's MSMs and no streams); the GPU backend supplies the streams.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import AbstractContextManager

from proofflow.prover.device.pippenger import COST

WIDTH = 5  # a Groth16 proof's independent MSMs: A, B_G1, B_G2, L, H


def order(sizes: Sequence[tuple[str, int]]) -> list[int]:
    """The order to start MSMs of (group, points) in: by estimated cost, the costliest first
    (a point weighing its group's time a digit), ties in the given order."""
    return sorted(range(len(sizes)), key=lambda i: -COST[sizes[i][0]].unit_ns * sizes[i][1])


def _in_lane(task: Callable, lane: Callable[[int], AbstractContextManager], k: int):
    with lane(k):
        return task()


class Lanes:
    """Up to ``width`` tasks at once, each in a worker thread of its own; the threads are
    kept between calls (the GPU backend keeps one ``Lanes`` a device). Calls from several
    threads at once are safe, but their tasks then share the workers and the lanes."""

    def __init__(self, width: int = WIDTH):
        self.width = width
        self._pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="proofflow-msm")

    def run(self, tasks: Sequence[Callable[[], object]], lane: Callable[[int], AbstractContextManager],
            start: Sequence[int] | None = None) -> list:
        """Each task's result, in the tasks' order: task ``start[k]`` runs inside ``lane(k)``
        and is started k-th (``start`` default: the tasks' order). Returns once every task
        has ended; the first failure (in the tasks' order) is raised then, so a failed task
        never leaves another still running over inputs its caller is about to free."""
        start = list(range(len(tasks))) if start is None else list(start)
        if sorted(start) != list(range(len(tasks))):
            raise ValueError(f"start {start} is no order of {len(tasks)} tasks")
        if len(tasks) > self.width:  # the rest would queue behind the first ones, not run beside them
            raise ValueError(f"{len(tasks)} tasks for {self.width} lanes")
        futures: list = [None] * len(tasks)
        for k, i in enumerate(start):
            futures[i] = self._pool.submit(_in_lane, tasks[i], lane, k)
        wait(futures)
        return [f.result() for f in futures]
