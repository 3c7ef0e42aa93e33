"""Per-phase wall-clock timing, the measurement every layer reports through."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from proofflow.phases import Phase


@dataclass
class Span:
    phase: Phase
    start: float  # time.time() seconds, comparable across processes
    end: float

    def __post_init__(self):
        self.phase = Phase(self.phase)  # a name outside the vocabulary is a bug: refuse it here

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class PhaseTimer:
    spans: list[Span] = field(default_factory=list)

    @contextmanager
    def phase(self, name: Phase):
        name = Phase(name)
        t0 = time.time()
        try:
            yield
        finally:
            self.spans.append(Span(name, t0, time.time()))

    def totals(self) -> dict[Phase, float]:
        out: dict[Phase, float] = {}
        for s in self.spans:
            out[s.phase] = out.get(s.phase, 0.0) + s.seconds
        return out


def ensure(timer):
    """``timer``, or a fresh PhaseTimer where the caller passed none."""
    return timer if timer is not None else PhaseTimer()
