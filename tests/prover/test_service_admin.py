"""The prover service's operator requests on the CPU backend (``service/admin.py``): a
preloaded key's first proof pays no key load or upload, an evicted key is uploaded again,
the typed status shows the job on the device, the queue, the resident keys and the staging."""
import threading
import time

import pytest

from proofflow.prover.service.admin import KeyJob
from proofflow.prover.service.client import ServiceError, running_services
from service_inputs import LOG2
from service_inputs import job as _job
from service_inputs import partition as _partition
from service_inputs import spans as _spans
from service_inputs import verifies as _verifies


def _key(key_dir) -> KeyJob:
    return KeyJob(str(key_dir), "mimc", LOG2, "bls12_381")


def test_a_preloaded_key_s_first_proof_pays_no_upload_and_an_evicted_one_pays_again(service, mimc8_key_dir):
    assert running_services() == []  # nothing runs, and asking starts nothing
    service.ensure_running()
    st = service.state()
    assert (st.device, st.running, st.queue, st.resident_keys) == ("cpu", None, (), ())
    loaded = service.preload(_key(mimc8_key_dir))
    assert loaded.directory == str(mimc8_key_dir) and loaded.bytes > 0 and loaded.upload_s is not None
    assert loaded.evicted == () and service.preload(_key(mimc8_key_dir)).upload_s is None  # resident already
    (key,) = service.state().resident_keys
    assert (key.directory, key.circuit, key.log2, key.curve, key.bytes) == (str(mimc8_key_dir), "mimc", LOG2,
                                                                          "bls12_381", loaded.bytes)
    d, n, public = _partition(0)
    first = service.prove(_job(mimc8_key_dir, d, n))
    assert _verifies(mimc8_key_dir, first, public)
    assert not {"key_load", "key_upload"} & set(_spans(first)), "the preloaded key was loaded or uploaded again"

    assert service.evict(_key(mimc8_key_dir)) == loaded.bytes and service.state().resident_keys == ()
    assert service.evict(_key(mimc8_key_dir)) is None
    again = service.prove(_job(mimc8_key_dir, d, n))
    assert {"key_load", "key_upload"} <= set(_spans(again)) and _verifies(mimc8_key_dir, again, public)
    assert [s.device for _c, s in running_services()] == ["cpu"]


def test_the_status_shows_the_job_on_the_device_the_queue_and_the_staging(service, mimc8_key_dir):
    service.ensure_running()
    parts = [_partition(i) for i in range(3)]
    replies = {}

    def prove(i):
        d, n, _ = parts[i]
        replies[i] = service.prove(_job(mimc8_key_dir, d, n, partition=i, job_id=f"run/{i}/1", standin_s=0.6))
    threads = [threading.Thread(target=prove, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    seen = None
    for _ in range(400):
        st = service.state()
        if st.running is not None and len(st.queue) == 2:
            seen = st
            break
        time.sleep(0.01)
    for t in threads:
        t.join(120)
    assert seen is not None, "never saw one job on the device and two queued"
    ids = {f"run/{i}/1" for i in range(3)}
    assert {seen.running.job_id, *(j.job_id for j in seen.queue)} == ids
    assert seen.running.circuit == "mimc" and seen.running.log2 == LOG2 and seen.running.since <= time.time()
    assert [j.since for j in seen.queue] == sorted(j.since for j in seen.queue)  # in the order they came
    assert seen.staging.leased >= 3 * parts[0][1] * 32 and seen.staging.leases == 3 and seen.staging.budget > 0
    assert len(replies) == 3
    from proofflow.prover.staging.shared import SharedStaging
    for d, _n, _p in parts:  # as prove_gpu does once its proof is written
        SharedStaging.from_settings().release(d)
    after = service.state()
    assert (after.running, after.queue, after.jobs_done) == (None, (), 3)
    assert (after.staging.leased, after.staging.leases) == (0, 0) and after.staging.idle == seen.staging.leased


def test_bad_key_requests_are_refused_and_the_service_keeps_serving(service, mimc8_key_dir, tmp_path):
    service.ensure_running()
    with pytest.raises(ServiceError, match="unknown job field") as exc:
        service._request({"op": "preload", "job": {**_key(mimc8_key_dir).to_wire(), "extra": 1}}, 10)
    assert not exc.value.error_type.retryable
    with pytest.raises(ServiceError, match="no proving key at"):
        service.preload(_key(tmp_path / "missing"))
    with pytest.raises(ServiceError, match="is for mimc 2\\^8, the job is mimc 2\\^9"):
        service.preload(KeyJob(str(mimc8_key_dir), "mimc", LOG2 + 1, "bls12_381"))
    assert service.preload(_key(mimc8_key_dir)).bytes > 0
