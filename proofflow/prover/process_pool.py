"""A pool of worker processes that die with the process that started them.

A ProcessPoolExecutor's workers wait on its queues, and under the forkserver they are the
forkserver's children, not the starter's. When the starter is killed outright (kill -9,
the OOM killer), nothing tells them: a worker blocks for ever writing a result nobody
reads, the forkserver waits for its children, and the resource tracker for the
forkserver (a killed setup left 27 processes running for minutes). So the starter keeps
the only write end of a pipe whose read end each worker holds: the kernel closes that end
when the starter dies, however it dies, and a thread in each worker waiting for the end of
file then kills the worker. The forkserver and the resource tracker follow on their own.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Iterator


@contextmanager
def process_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """``workers`` processes, shut down when the block ends (jobs not started are cancelled)."""
    # forkserver, not fork: a process that holds a CUDA context (the GPU worker's, the
    # prover service's) must not fork workers, whose copies of it can hang
    context = multiprocessing.get_context("forkserver")
    lifeline, keep = context.Pipe(duplex=False)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_hold, initargs=(lifeline,))
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)
        keep.close()
        lifeline.close()


def _hold(lifeline: Connection) -> None:
    """A worker's initializer: a thread that kills the worker once its starter is gone."""
    threading.Thread(target=_die_at_eof, args=(lifeline,), name="lifeline", daemon=True).start()


def _die_at_eof(lifeline: Connection) -> None:
    try:
        lifeline.recv_bytes()  # nothing is ever sent: this returns only at the end of file
    except (EOFError, OSError):
        pass
    os.kill(os.getpid(), signal.SIGKILL)
