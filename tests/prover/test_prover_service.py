"""The prover service on the CPU backend: real proofs through the socket, one device phase
at a time, the stand-in's phase length, bad jobs refused with the service still serving,
one service for concurrent first callers."""
import dataclasses
import threading

import pytest

from proofflow.prover.service.client import ServiceClient, ServiceError, least_busy
from service_inputs import job as _job
from service_inputs import partition as _partition
from service_inputs import raw_prove as _raw_prove
from service_inputs import spans as _spans
from service_inputs import verifies as _verifies


def test_proofs_through_the_service_verify_and_report_their_phases(service, mimc8_key_dir, tmp_path):
    started = service.ensure_running()
    assert started is not None and started > 0
    assert service.ensure_running() is None  # already running: nothing started
    d, n, public = _partition(0)
    first = service.prove(_job(mimc8_key_dir, d, n))
    assert _verifies(mimc8_key_dir, first, public)
    sp = _spans(first)
    assert {"key_load", "prefetch", "mutex_wait", "h2d", "ntt", "msm", "assemble"} <= set(sp)
    # the upload runs while the job waits for the device: it can overlap another job's kernels
    assert sp["prefetch"][1] <= sp["mutex_wait"][0] + 1e-6 <= sp["h2d"][0] + 2e-6
    assert sp["h2d"][1] <= sp["mutex_wait"][1] + 1e-6 <= sp["ntt"][0] + 2e-6 and sp["ntt"][1] <= sp["msm"][0] + 1e-6
    h2d = first.transfers["h2d"]
    assert h2d.nbytes == 3 * n * 32 and h2d.ms > 0 and h2d.kind == "pageable"  # the CPU backend pins nothing: recorded so
    assert first.device == "cpu"
    # a second job of the same key reuses it: no key_load, and another proof
    d1, _, public1 = _partition(1)
    second = service.prove(_job(mimc8_key_dir, d1, n))
    assert "key_load" not in _spans(second) and _verifies(mimc8_key_dir, second, public1)
    st = service.status()
    assert st["jobs_done"] == 2 and st["keys"] == [str(mimc8_key_dir)]
    # the second partition's segment is the first one's, released and leased again: mapped once
    assert st["segments"]["pinned"]["mapped"] == 2  # CPU: nothing to pin; two segments were live at once


def test_concurrent_jobs_hold_the_device_one_at_a_time_and_uploads_overlap(service, mimc8_key_dir, tmp_path):
    service.ensure_running()
    parts = [_partition(i) for i in range(4)]
    replies = [None] * 4

    def run(i):
        d, n, _ = parts[i]
        replies[i] = service.prove(_job(mimc8_key_dir, d, n, standin_s=0.25))
    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    threads[0].start()
    for _ in range(500):  # the others come while the first one is on the device
        if service.status()["busy"]:
            break
        threading.Event().wait(0.01)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(120)
    device = sorted((_spans(r)["ntt"][0], _spans(r)["msm"][1]) for r in replies)
    for (s0, e0), (s1, e1) in zip(device, device[1:]):
        assert s1 >= e0, "two device phases overlapped: the device thread is not a mutex"
    for s, e in device:
        assert e - s >= 0.25 - 1e-3, "the stand-in phase was shorter than asked"
    uploads = [_spans(r)["h2d"] for r in replies]
    overlapped = sum(any(s0 < h0 and h1 < e0 for s0, e0 in device) for h0, h1 in uploads)
    assert overlapped >= 1, "queued jobs' uploads must run while the device computes the job before"
    waits = [_spans(r)["mutex_wait"] for r in replies]
    assert max(e - s for s, e in waits) >= 0.25 * 2, "queued jobs must wait for the device"
    assert all(_verifies(mimc8_key_dir, r, parts[i][2]) for i, r in enumerate(replies))


def test_bad_jobs_are_refused_and_the_service_keeps_serving(service, mimc8_key_dir, tmp_path):
    service.ensure_running()
    d, n, public = _partition(0)
    with pytest.raises(ServiceError, match="segment"):
        _raw_prove(service, {**_job(mimc8_key_dir, d, n).to_wire(), "segment": 7})
    with pytest.raises(ServiceError, match="circuit's domain"):
        service.prove(_job(mimc8_key_dir, d, n // 2))  # a/b/c of the wrong size
    with pytest.raises(ServiceError, match="belongs to test/run/p0000, not test/run/p0001"):
        service.prove(_job(mimc8_key_dir, d, n, partition=1))  # another partition's segment
    with pytest.raises(ServiceError, match="no proving key"):
        service.prove(dataclasses.replace(_job(mimc8_key_dir, d, n), params_dir=str(tmp_path / "nowhere")))
    with pytest.raises(ServiceError, match="standin_s"):
        _raw_prove(service, {**_job(mimc8_key_dir, d, n).to_wire(), "standin_s": -1})
    assert _verifies(mimc8_key_dir, service.prove(_job(mimc8_key_dir, d, n)), public)
    st = service.status()
    assert st["jobs_failed"] == 5 and st["jobs_done"] == 1 and st["queued"] == 0


def test_concurrent_first_callers_start_one_service(service):
    pids, errors = [], []

    def start():
        try:
            service.ensure_running()
            pids.append(service.status()["pid"])
        except Exception as exc:  # surfaced below
            errors.append(exc)
    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(set(pids)) == 1 and len(pids) == 4


def test_stop_removes_the_socket_and_least_busy_picks_an_idle_device(service):
    service.ensure_running()
    assert least_busy("cpu", [0, 1]) == 0  # both idle: round-robin from the preferred one
    assert least_busy("cpu", [0, 1], prefer=1) == 1
    service.stop()
    for _ in range(100):
        if not service.path.exists():
            break
        threading.Event().wait(0.1)
    assert not service.path.exists()
    with pytest.raises(ServiceError):
        service.status()


def test_a_stopping_service_gives_idle_staging_segments_back(service, mimc8_key_dir):
    from proofflow.prover.staging.shared import SharedStaging
    staging = SharedStaging.from_settings()
    service.ensure_running()
    proved, n, _ = _partition(0)
    service.prove(_job(mimc8_key_dir, proved, n))
    kept, _, _ = _partition(1)  # still leased when the service stops: it stays
    unmapped, _, _ = _partition(2)
    staging.release(unmapped)  # idle, but never mapped by this service (another device's, say): it stays
    other = staging.stats()["idle"]
    staging.release(proved)  # the partition's proof is out: its segment goes idle, kept for reuse
    assert staging.stats()["idle"] > other > 0
    service.stop()
    for _ in range(200):
        if staging.stats()["idle"] == other:
            break
        threading.Event().wait(0.05)
    stats = staging.stats()
    assert stats["idle"] == other and stats["leases"] == 1 and stats["leased"] > 0
    assert staging.lookup(kept)[0].state == "ready"


def test_keys_beyond_the_key_budget_are_evicted_and_every_job_succeeds(tmp_path, monkeypatch, mimc8_key_dir):
    """Two keys, a budget that holds one: jobs alternating between them all prove, each
    upload evicting the other key; status and the log say so."""
    from service_inputs import make_key
    from proofflow.prover.keys import key_bytes
    from proofflow.prover.groth16.data_structures import ProvingKey
    other = make_key(tmp_path / "mimc-8-seed6", seed=6)
    one = key_bytes(ProvingKey.load(mimc8_key_dir, verify_digests=False))
    assert key_bytes(ProvingKey.load(other, verify_digests=False)) == one
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("PROOFFLOW_KEY_BUDGET", str(one + one // 2))
    client = ServiceClient("cpu", 0, idle_s=60)
    try:
        client.ensure_running()
        d, n, public = _partition(0)
        first = client.prove(_job(mimc8_key_dir, d, n))
        second = client.prove(_job(other, d, n))
        third = client.prove(_job(mimc8_key_dir, d, n))
        assert _verifies(mimc8_key_dir, first, public) and _verifies(other, second, public)
        assert _verifies(mimc8_key_dir, third, public)
        assert first.evicted_keys == () and second.evicted_keys == (str(mimc8_key_dir),)
        assert third.evicted_keys == (str(other),)
        assert all("key_upload" in _spans(r) for r in (first, second, third))
        st = client.status()
        assert st["jobs_done"] == 3 and st["key_budget_bytes"] == one + one // 2
        assert st["key_evictions"] == 2 and [e["directory"] for e in st["evicted_keys"]] == [str(mimc8_key_dir),
                                                                                           str(other)]
        assert [k["directory"] for k in st["resident_keys"]] == [str(mimc8_key_dir)]
        assert st["resident_key_bytes"] == one
        fourth = client.prove(_job(mimc8_key_dir, d, n))  # resident: no upload, no eviction
        assert "key_upload" not in _spans(fourth) and client.status()["key_evictions"] == 2
    finally:
        client.stop()
    log = client.path.with_suffix(".log").read_text()
    assert f"evicted proving key {mimc8_key_dir}" in log and f"evicted proving key {other}" in log
