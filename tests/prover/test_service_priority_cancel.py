"""The prover service's queue with two runs in flight: a high-priority run's partitions
overtake a low one's still waiting (first come, first served within a priority), and a
cancelled run's waiting jobs are dropped at once, before the device, their callers told
not to retry and their staging segments released, while another run's job goes on. Real
service processes on the CPU backend, the partitions' tasks' prover (``ServiceProver``)
submitting the jobs."""
import threading
import time

import pytest

from proofflow.prover.errors import InputError
from proofflow.prover.provers import prover_for
from proofflow.prover.service.client import ServiceClient, cancel_all
from proofflow.prover.service.job_queue import JobQueue
from proofflow.prover.staging.shared import SegmentError, SharedStaging
from proofflow.spec import MemoryKind, Priority, RunConfig
from service_inputs import LOG2, holder
from service_inputs import partition as _partition
from service_inputs import spans as _spans
from service_inputs import verifies as _verifies


@pytest.fixture
def service(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    client = ServiceClient("cpu", 0, idle_s=60)
    client.ensure_running()
    yield client
    client.stop()


class Submitted:
    """One partition of ``run`` proved through the service in a thread of its own, as its
    prove_gpu task would: the reply, or the error."""

    def __init__(self, key_dir, run: str, index: int, priority: Priority, standin_s: float):
        self.run, self.index = run, index
        self.segment, self.n, self.public = _partition(index, run=run)
        config = RunConfig("mimc", LOG2, 4, "cpu", MemoryKind.PINNED, priority=priority)
        self._prover = prover_for(config, index, True, [0], standin_s)
        self._key_dir = key_dir
        self.reply = self.error = None
        self.ended = None
        self._thread = threading.Thread(target=self._prove)

    def _prove(self):
        try:
            self.reply = self._prover.prove(self._key_dir, self.segment, holder(self.index, self.run), self.n,
                                            f"{self.run}/{self.index}/1")
        except Exception as exc:  # the test reads it
            self.error = exc
        self.ended = time.time()

    def start(self, service, queued_before: int | None) -> "Submitted":
        """Submit, and wait until the service holds the job, so the arrival order is fixed:
        until ``queued_before`` jobs and this one wait; None: until it is on the device."""
        self._thread.start()
        if queued_before is None:
            _until(lambda: service.status()["busy"] or self.ended, "the first job on the device")
        else:
            _until(lambda: service.status()["queued"] > queued_before or self.ended, "the job to be queued")
        assert self.error is None, self.error
        return self

    def join(self):
        self._thread.join(60)
        assert not self._thread.is_alive()
        return self

    @property
    def device_start(self) -> float:
        return _spans(self.reply)["ntt"][0]


def _until(condition, what, timeout=30.0):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_the_queue_serves_higher_priorities_first_and_arrivals_in_order_within_one():
    q = JobQueue()
    for job, priority in [("l0", Priority.LOW), ("n0", Priority.NORMAL), ("l1", Priority.LOW), ("h0", Priority.HIGH),
                          ("n1", Priority.NORMAL), ("h1", Priority.HIGH)]:
        q.put(job, priority.rank)
    assert q.remove(lambda job: job.startswith("n")) == ["n0", "n1"]
    assert q.counts(lambda job: job[0]) == {"l": 2, "h": 2}
    q.close()
    assert [q.get() for _ in range(5)] == ["h0", "h1", "l0", "l1", None]


def test_a_high_priority_run_overtakes_the_queued_partitions_of_a_low_one(service, mimc8_key_dir):
    # the low run's first partition holds the device long enough for every other to arrive
    low = [Submitted(mimc8_key_dir, "low", 0, Priority.LOW, 3.0).start(service, None)]
    for i in (1, 2, 3):
        low.append(Submitted(mimc8_key_dir, "low", i, Priority.LOW, 0.2).start(service, i - 1))
    high = [Submitted(mimc8_key_dir, "high", i, Priority.HIGH, 0.2).start(service, 3 + i) for i in (0, 1)]
    assert service.status()["queued_by_priority"] == {"low": 2, "high": 2}  # low 1 is uploaded, one proof ahead
    for job in low + high:
        job.join()
        assert job.error is None, job.error
        assert _verifies(mimc8_key_dir, job.reply, job.public)
    order = [f"{j.run}{j.index}" for j in sorted(low + high, key=lambda j: j.device_start)]
    # low1 was uploaded ahead of the device before the high run came: the one proof committed
    assert order == ["low0", "low1", "high0", "high1", "low2", "low3"]
    device = sorted((_spans(j.reply)["ntt"][0], _spans(j.reply)["msm"][1]) for j in low + high)
    assert all(s1 >= e0 for (_, e0), (s1, _) in zip(device, device[1:])), "one proof at a time on the device"


def test_a_cancelled_run_s_waiting_jobs_are_dropped_before_the_device(service, mimc8_key_dir):
    doomed = [Submitted(mimc8_key_dir, "doomed", 0, Priority.NORMAL, 3.0).start(service, None)]
    for i in (1, 2, 3):  # 1 is uploaded one proof ahead, 2 and 3 wait in the queue
        doomed.append(Submitted(mimc8_key_dir, "doomed", i, Priority.NORMAL, 0.2).start(service, i - 1))
    other = Submitted(mimc8_key_dir, "other", 0, Priority.NORMAL, 0.2).start(service, 3)
    with pytest.raises(InputError, match="a run's prefix"):  # a partition's, or a whole DAG's: refused
        cancel_all("test/other/p0000")
    t0 = time.time()
    (reply,) = cancel_all("test/doomed/")
    assert (reply.device, reply.dropped, reply.on_device) == ("cpu", 3, 1)
    staging = SharedStaging.from_settings()
    for job in doomed[2:]:  # out of the queue at once, while the run's first job is still on the device
        _until(lambda: job.ended, "the queued job's caller to be answered", timeout=5)
        assert job.ended - t0 < 1.0 and doomed[0].ended is None
        assert isinstance(job.error, InputError) and "cancelled" in str(job.error)  # no retry: InputError
        with pytest.raises(SegmentError, match="is gone"):  # its staging segment released
            staging.lookup(job.segment)
    for job in doomed + [other]:
        job.join()
    assert doomed[0].error is None and _verifies(mimc8_key_dir, doomed[0].reply, doomed[0].public)
    assert isinstance(doomed[1].error, InputError) and "cancelled" in str(doomed[1].error)
    with pytest.raises(SegmentError, match="is gone"):
        staging.lookup(doomed[1].segment)
    staging.lookup(doomed[0].segment)  # the proved one's lease stays with its task, which releases it
    assert other.error is None and _verifies(mimc8_key_dir, other.reply, other.public)
    assert other.device_start >= _spans(doomed[0].reply)["msm"][1], "the other run's job came next on the device"
    st = service.status()
    assert (st["jobs_done"], st["jobs_cancelled"], st["queued"]) == (2, 3, 0), "the device ran two proofs only"
    assert cancel_all("test/doomed/")[0].dropped == 0
