"""Per-phase wall-clock timing, the measurement every layer reports through."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Span:
    phase: str
    start: float  # time.time() seconds, comparable across processes
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class PhaseTimer:
    spans: list[Span] = field(default_factory=list)

    @contextmanager
    def phase(self, name: str):
        t0 = time.time()
        try:
            yield
        finally:
            self.spans.append(Span(name, t0, time.time()))

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.spans:
            out[s.phase] = out.get(s.phase, 0.0) + s.seconds
        return out
