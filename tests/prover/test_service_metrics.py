"""The prover service's Prometheus metrics: what a finished or failed job adds, and the
state read at scrape time, checked on the registry's exposition text."""
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from proofflow.phases import Phase
from proofflow.prover.errors import CallerGone, InputError, StagingTimeout
from proofflow.prover.service.metrics import ServiceMetrics, ServiceState
from proofflow.prover.service.protocol import ProveReply, TransferRecord
from proofflow.prover.timing import Span
from proofflow.spec import MemoryKind


def _samples(metrics: ServiceMetrics) -> dict:
    """{(sample name, frozenset of labels): value}, parsed back from the text a scrape gets."""
    text = generate_latest(metrics.registry).decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _reply(t0: float, msm_parts: tuple[float, ...], h2d: tuple[int, float], witness: tuple[int, float],
           kind: MemoryKind) -> ProveReply:
    spans = [Span(Phase.MUTEX_WAIT, t0, t0 + 0.5), Span(Phase.H2D, t0 + 0.1, t0 + 0.3),
             Span(Phase.NTT, t0 + 0.5, t0 + 0.75)]
    at = t0 + 0.75
    for part in msm_parts:  # a phase recorded in several spans counts once, as their sum
        spans.append(Span(Phase.MSM, at, at + part))
        at += part
    spans.append(Span(Phase.ASSEMBLE, at, at + 0.01))
    return ProveReply(b"", "cuda:1", 1, tuple(spans), {"h2d": TransferRecord(h2d[0], h2d[1], kind),
                                                      "h2d_witness": TransferRecord(witness[0], witness[1], kind)})


def test_jobs_phases_transfers_and_busy_time_are_counted_per_device():
    state = ServiceState(queued=3, running=1, in_hand=5, resident_keys=2, resident_key_bytes=7_000,
                         key_budget_bytes=10_000, key_evictions=4, staging_leased_bytes=4096,
                         staging_idle_bytes=1024, staging_budget_bytes=1 << 20)
    m = ServiceMetrics("cuda:1", lambda: state)
    m.proved(_reply(100.0, (0.5, 1.5), (3 * 1024, 2.0), (512, 0.5), MemoryKind.PINNED))
    m.proved(_reply(200.0, (3.0,), (3 * 2048, 4.0), (1024, 1.0), MemoryKind.PAGEABLE))
    m.proved(_reply(300.0, (0.001,), (96, 0.25), (32, 0.25), MemoryKind.PINNED))
    m.failed(InputError("bad witness"))
    m.failed(InputError("no key"))
    m.failed(StagingTimeout("no room"))
    m.failed(CallerGone("left"))
    s = _samples(m)

    def v(name, **labels):
        return s[(name, frozenset({"device": "cuda:1", **labels}.items()))]

    assert v("proofflow_jobs_total", outcome="done", error_type="") == 3
    assert v("proofflow_jobs_total", outcome="failed", error_type="InputError") == 2
    assert v("proofflow_jobs_total", outcome="failed", error_type="StagingTimeout") == 1
    assert v("proofflow_jobs_total", outcome="cancelled", error_type="CallerGone") == 1
    # one observation per proof and phase: the two MSM spans of the first proof are one 2 s observation
    assert v("proofflow_phase_seconds_count", phase="msm") == 3
    assert abs(v("proofflow_phase_seconds_sum", phase="msm") - (2.0 + 3.0 + 0.001)) < 1e-9
    assert v("proofflow_phase_seconds_bucket", phase="msm", le="0.001") == 1  # le is inclusive
    assert v("proofflow_phase_seconds_bucket", phase="msm", le="2.5") == 2
    assert v("proofflow_phase_seconds_bucket", phase="msm", le="+Inf") == 3
    assert v("proofflow_phase_seconds_count", phase="mutex_wait") == 3
    assert ("proofflow_phase_seconds_count", frozenset({"device": "cuda:1", "phase": "key_load"}.items())) not in s
    # busy: h2d, ntt and msm; waits and the host's assembly are not the device's
    busy = 3 * (0.2 + 0.25) + 2.0 + 3.0 + 0.001
    assert abs(v("proofflow_device_busy_seconds_total") - busy) < 1e-9
    assert v("proofflow_h2d_bytes_total", memory="pinned") == 3 * 1024 + 512 + 96 + 32
    assert v("proofflow_h2d_bytes_total", memory="pageable") == 3 * 2048 + 1024
    assert abs(v("proofflow_h2d_seconds_total", memory="pinned") - (2.0 + 0.5 + 0.25 + 0.25) / 1e3) < 1e-12
    assert abs(v("proofflow_h2d_seconds_total", memory="pageable") - 5.0 / 1e3) < 1e-12
    # the state at scrape time
    assert v("proofflow_jobs_queued") == 3 and v("proofflow_jobs_running") == 1 and v("proofflow_jobs_in_hand") == 5
    assert v("proofflow_resident_keys") == 2 and v("proofflow_resident_key_bytes") == 7_000
    assert v("proofflow_key_budget_bytes") == 10_000 and v("proofflow_key_evictions_total") == 4
    assert v("proofflow_staging_leased_bytes") == 4096 and v("proofflow_staging_idle_bytes") == 1024
    assert v("proofflow_staging_budget_bytes") == 1 << 20


def test_the_state_is_read_at_each_scrape():
    states = iter(range(1, 100))

    def state():
        n = next(states)
        return ServiceState(n, 0, n, 0, 0, 0, 0, 0, 0, 0)
    m = ServiceMetrics("cpu", state)
    first = _samples(m)[("proofflow_jobs_queued", frozenset({"device": "cpu"}.items()))]
    second = _samples(m)[("proofflow_jobs_queued", frozenset({"device": "cpu"}.items()))]
    assert second == first + 1



def test_the_endpoint_serves_the_registry_and_a_taken_port_is_refused_without_failing():
    import socket
    import urllib.request
    m = ServiceMetrics("cpu", lambda: ServiceState(2, 0, 2, 0, 0, 0, 0, 0, 0, 0))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        assert not m.serve(taken.getsockname()[1], "127.0.0.1")  # another service's port: logged, no raise
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert m.serve(port, "127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
        assert 'proofflow_jobs_queued{device="cpu"} 2.0' in text
    finally:
        m.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)
