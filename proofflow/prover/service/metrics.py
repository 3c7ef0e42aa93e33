"""A prover service's Prometheus metrics, labelled by its device (cuda:N, cpu).

Counted as jobs finish (in the connection thread, after the reply is built, never on the
device thread): jobs by outcome and error type, each proof's seconds by phase, H2D bytes and
seconds by memory kind, device-busy seconds. Read at scrape time from the service's state
(``ServiceState``): the queue, the jobs on the device, the resident keys and the staging.
The registry is the service's own, served by ``serve`` on PROOFFLOW_METRICS_PORT."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from proofflow.phases import DEVICE_PHASES, Phase
from proofflow.prover.errors import ErrorType
from proofflow.prover.service.protocol import ProveReply
from proofflow.spec import MemoryKind

log = logging.getLogger("proofflow.service")

# a phase lasts from under a millisecond (a prefetch) to minutes (a 2^27 MSM)
PHASE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                 120.0, 300.0, 600.0, float("inf"))


@dataclass(frozen=True)
class ServiceState:
    """What a scrape reads from the service at that moment."""
    queued: int  # prove jobs prefetched, not yet on the device
    running: int  # jobs on the device (0 or 1)
    in_hand: int  # prove jobs between their request and their reply
    resident_keys: int
    resident_key_bytes: int
    key_budget_bytes: int
    key_evictions: int
    staging_leased_bytes: int
    staging_idle_bytes: int
    staging_budget_bytes: int


class _StateCollector:
    def __init__(self, device: str, state: Callable[[], ServiceState]):
        self.device, self.state = device, state

    def collect(self):
        s = self.state()
        gauges = (("proofflow_jobs_queued", "prove jobs waiting for the device", s.queued),
                  ("proofflow_jobs_running", "prove jobs on the device", s.running),
                  ("proofflow_jobs_in_hand", "prove jobs between their request and their reply", s.in_hand),
                  ("proofflow_resident_keys", "proving keys resident on the device", s.resident_keys),
                  ("proofflow_resident_key_bytes", "bytes of the resident proving keys", s.resident_key_bytes),
                  ("proofflow_key_budget_bytes", "the bytes proving keys may stay resident in "
                   "(PROOFFLOW_KEY_BUDGET)", s.key_budget_bytes),
                  ("proofflow_staging_leased_bytes", "bytes of the host's shared staging leased to partitions",
                   s.staging_leased_bytes),
                  ("proofflow_staging_idle_bytes", "bytes of released staging segments kept for reuse",
                   s.staging_idle_bytes),
                  ("proofflow_staging_budget_bytes", "the shared staging's budget (PROOFFLOW_STAGING_BUDGET)",
                   s.staging_budget_bytes))
        for name, doc, value in gauges:
            g = GaugeMetricFamily(name, doc, labels=["device"])
            g.add_metric([self.device], value)
            yield g
        evictions = CounterMetricFamily("proofflow_key_evictions", "resident proving keys evicted to fit "
                                        "another within the key budget", labels=["device"])
        evictions.add_metric([self.device], s.key_evictions)
        yield evictions


class ServiceMetrics:
    """The metrics of the service on ``device``; ``state`` is called at each scrape."""

    def __init__(self, device: str, state: Callable[[], ServiceState]):
        self.device = device
        self.registry = CollectorRegistry()
        r = self.registry
        self._jobs = Counter("proofflow_jobs", "prove jobs finished, by outcome (done: a verified proof returned; "
                             "failed; cancelled: the caller left, or its run was cancelled) and error type", ["device", "outcome", "error_type"],
                             registry=r)
        self._phase = Histogram("proofflow_phase_seconds", "a proof's seconds in each phase (its spans of the "
                                "phase summed), per proof done", ["device", "phase"], buckets=PHASE_BUCKETS, registry=r)
        self._busy = Counter("proofflow_device_busy_seconds", "seconds the device spent on proofs' transfers and "
                             "kernels (h2d, ntt, msm, d2h); rate() is the busy fraction", ["device"], registry=r)
        self._h2d_bytes = Counter("proofflow_h2d_bytes", "bytes copied host to device for proofs, by the memory "
                                  "they came from; GB/s: rate(proofflow_h2d_bytes_total) / "
                                  "rate(proofflow_h2d_seconds_total) / 1e9", ["device", "memory"], registry=r)
        self._h2d_seconds = Counter("proofflow_h2d_seconds", "seconds of the host-to-device copies counted by "
                                    "proofflow_h2d_bytes_total", ["device", "memory"], registry=r)
        r.register(_StateCollector(device, state))
        # the series a proof adds to, present at 0 from the start: a rate() over a window whose
        # first sample already holds the first proofs would read no increase
        self._busy.labels(device)
        self._jobs.labels(device, "done", "")
        for phase in DEVICE_PHASES:
            self._phase.labels(device, phase.value)
        for kind in (MemoryKind.PINNED, MemoryKind.PAGEABLE):
            self._h2d_bytes.labels(device, str(kind))
            self._h2d_seconds.labels(device, str(kind))
        self._server = None

    def proved(self, reply: ProveReply) -> None:
        """A job done: its phases, transfers and busy time."""
        per_phase: dict[Phase, float] = {}
        for s in reply.spans:
            per_phase[s.phase] = per_phase.get(s.phase, 0.0) + (s.end - s.start)
        for phase, seconds in per_phase.items():
            self._phase.labels(self.device, phase.value).observe(seconds)
        self._busy.labels(self.device).inc(sum(per_phase.get(p, 0.0) for p in DEVICE_PHASES))
        for t in reply.transfers.values():
            self._h2d_bytes.labels(self.device, str(t.kind)).inc(t.nbytes)
            self._h2d_seconds.labels(self.device, str(t.kind)).inc(t.ms / 1e3)
        self._jobs.labels(self.device, "done", "").inc()

    def failed(self, exc: BaseException) -> None:
        kind = ErrorType.of(exc)
        cancelled = kind in (ErrorType.CALLER_GONE, ErrorType.CANCELLED)
        self._jobs.labels(self.device, "cancelled" if cancelled else "failed", kind.value).inc()

    def serve(self, port: int, addr: str) -> bool:
        """Serve the registry on ``addr:port``; a port taken (another service's) is logged, and
        the service proves on without metrics."""
        try:
            self._server, _ = start_http_server(port, addr, registry=self.registry)
        except OSError as exc:
            log.warning("no metrics endpoint on %s:%d: %s", addr, port, exc)
            return False
        log.info("metrics on http://%s:%d/metrics", addr, port)
        return True

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
