"""Collects one task's timing rows and transfers, and writes them to the timing store."""
from __future__ import annotations

import logging
import socket
import time
from contextlib import contextmanager

from proofflow.phases import Phase
from proofflow.spec import MemoryKind

log = logging.getLogger(__name__)


class Recorder:
    """A partition's rows carry the partition as their map index: a task of the per-partition
    group proves a chunk of them (``RunConfig.chunk``), and the timing views take (task,
    map_index, try) as one partition's attempt. With one partition a chunk, the default, the
    two are the same."""

    def __init__(self, context, partition: int | None = None, device: str | None = None):
        ti = context["ti"]
        self.dag_id, self.run_id, self.task_id = ti.dag_id, ti.run_id, ti.task_id
        mi = getattr(ti, "map_index", -1) if partition is None else partition
        self.map_index = -1 if mi is None else int(mi)
        self.try_number = int(ti.try_number or 1)
        self.partition = partition
        self.host = getattr(ti, "hostname", None) or socket.gethostname()
        self.device = device or "cpu"
        self.rows: list[dict] = []
        self.transfer_rows: list[dict] = []

    def _ident(self) -> dict:
        return dict(dag_id=self.dag_id, run_id=self.run_id, task_id=self.task_id, map_index=self.map_index,
                    try_number=self.try_number, partition=self.partition)

    def add(self, phase: Phase, start: float, end: float) -> None:
        end = max(end, start)
        self.rows.append(dict(self._ident(), phase=Phase(phase).value, host=self.host, device=self.device, start=start, end=end,
                              duration_s=end - start))

    def _fault_point(self, what: str) -> None:
        from proofflow.prover import faults  # inert unless PROOFFLOW_FAULT is set (proofflow/prover/faults.py)
        faults.point(f"task.{self.task_id.rsplit('.', 1)[-1]}.{what}")

    @contextmanager
    def phase(self, name: Phase):
        name = Phase(name)
        self._fault_point(name)
        t0 = time.time()
        try:
            yield
        finally:
            self.add(name, t0, time.time())

    def spans(self, spans) -> None:
        for s in spans:
            self.add(s.phase, s.start, s.end)

    def proved(self, proved) -> None:
        """A device part's record (``provers.Proved``): its device, spans and transfers, each
        transfer starting with the upload."""
        self.device = proved.device
        self.spans(proved.spans)
        h2d0 = next((s.start for s in proved.spans if s.phase is Phase.H2D), None)
        for direction, t in proved.transfers.items():
            self.transfer(direction, t.nbytes, t.kind, t.ms / 1e3, start=h2d0)

    def transfer(self, direction: str, nbytes: int, memory_kind: MemoryKind, duration_s: float,
                 start: float | None = None):
        self.transfer_rows.append(dict(self._ident(), direction=direction, bytes=int(nbytes),
                                       memory_kind=MemoryKind(memory_kind).value,
                                       start=start, duration_s=duration_s,
                                       gbps=(nbytes / duration_s / 1e9) if duration_s > 0 else None))

    def flush(self, store) -> None:
        for r in self.rows:  # an attempt runs on one device, known by its end (prove_gpu learns it late)
            r["device"] = self.device
        self._fault_point("flush")
        store.record_attempt(self.rows, self.transfer_rows)  # one transaction: all of them or none
        self._fault_point("flushed")
