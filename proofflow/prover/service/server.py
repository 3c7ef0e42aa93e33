"""The prover service: one process per device, serving prove jobs over a Unix socket.

A partition's a/b/c and witness reach the service in a shared-memory segment that synthesis
wrote (``staging.shared``): the service maps it and page-locks it in place once per segment
(``MappedSegments``; the stage task asks for that ahead of the proof with a
``stage`` request), so nothing copies them on the host before the upload.

Threads:
* the accept loop (main thread) hands each connection to its own thread;
* a connection thread validates its job, loads the proving key if it is not cached (once,
  under a lock), and maps the job's segment (the *prefetch*); it then queues the job (a
  ``JobQueue``: by its run's priority, in arrival order within one) and, when the device part
  is done, finishes the proof on the host (``pipeline.finish``) and replies;
* the upload thread takes the queue's first job once the device has room for it and copies
  its vectors to the device on a copy stream of its own, at most one proof ahead of the
  device thread, so an upload overlaps the kernels of the proof before;
* the device thread takes uploaded jobs in order and runs their device part
  (``pipeline.prove_device``): it is the fine-grained GPU mutex, held from a proof's first
  kernel to its last MSM. A job's wait for it is its ``mutex_wait``, from its prefetch to
  its first kernel (its upload runs within). Before a job's proof it makes the job's key
  resident (``KeyCache.make_resident``: the key's tables uploaded once, ``key_upload``),
  evicting the least recently used resident keys when the keys would exceed the key budget
  (PROOFFLOW_KEY_BUDGET); ``status`` lists the resident keys and counts the evictions.
  Between two proofs it also runs the operator's key requests (``admin``: ``preload`` a key,
  ``evict`` one), so a preloaded key's first proof pays no upload.

Every step is a span (epoch seconds) in the reply, so the caller records where the time went.
The service stops after ``idle_s`` seconds without a job, on a ``stop`` request, or on SIGTERM,
and gives the idle staging segments it mapped back to the host as it stops.

Failures stay per job: a bad job (fields, files, a witness that does not satisfy the circuit)
is refused as ``errors.InputError``; every proof is verified before it is returned; a device running
out of memory fails that job only, after the service gave back its cached device memory; a
job whose caller died (a killed task) before its device turn is dropped. A ``cancel`` of a run
drops its jobs that are not on the device yet: their callers get ``RunCancelled`` (no retry
helps) and their staging segments are released. Fault-injection points: ``proofflow/prover/faults.py``.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import logging
import os
import queue
import select
import signal
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path


from proofflow import settings
from proofflow.spec import MemoryKind
from proofflow.prover import device, faults, pipeline, private_dir
from proofflow.prover.keys import Key, KeyCache
from proofflow.prover.staging.mapped import MappedSegments
from proofflow.prover.staging.staged import Staged
from proofflow.prover.backend.by_name import device_options
from proofflow.prover.errors import CallerGone, InputError, ProofCheckFailed, ProtocolError, RunCancelled, error_reply
from proofflow.prover.service import protocol
from proofflow.prover.service.admin import JobState, KeyJob, KeyLoaded
from proofflow.prover.service.job_queue import JobQueue
from proofflow.prover.service.metrics import ServiceMetrics, ServiceState
from proofflow.prover.service.protocol import (CancelReply, CancelRun, KeySource, ProveJob, ProveReply, StageJob,
                                               TransferRecord)
from proofflow.prover.staging.shared import SharedStaging
from proofflow.prover.timing import PhaseTimer, Span
from proofflow.phases import Phase

log = logging.getLogger("proofflow.service")

def _caller_gone(conn: socket.socket | None) -> bool:
    """True when the caller hung up: it sends one request line and then only waits, so a
    readable socket means end of file (or an error)."""
    if conn is None:
        return False
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
    if not poller.poll(0):
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


_CANCELLED = "its run was cancelled before its device turn: the job was dropped"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass(eq=False)  # a job is itself: the service's set of jobs in hand holds it by identity
class _Job:
    spec: ProveJob
    key: Key
    staged: Staged
    timer: PhaseTimer
    ready_at: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    pending: object = None
    uploaded: list | None = None
    transfers: dict = field(default_factory=dict)
    error: BaseException | None = None
    conn: socket.socket | None = None
    evicted: list = field(default_factory=list)  # keys evicted from the device to fit this job's
    on_device: bool = False  # its kernels started: a cancel leaves it to finish
    cancelled: bool = False  # its run was cancelled after it left the queue: dropped before the device


@dataclass
class _DeviceCall:
    """An operator's request the device thread runs between two proofs (a preload, an eviction)."""
    fn: object
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: BaseException | None = None


class ProverService:
    def __init__(self, socket_path: str | Path, config: settings.Settings, backend: str = "cpu", device: int = 0,
                 idle_s: float = 600.0, key_budget: int | None = None):
        """A service of ``backend`` on ``device``, configured by ``config`` (its process's
        settings)."""
        self.socket_path, self.config = Path(socket_path), config
        self.backend_name, self.device, self.idle_s = backend, int(device), float(idle_s)
        self.started_at = time.time()
        self.jobs_done = self.jobs_failed = self.jobs_cancelled = 0
        self.recoveries = 0
        self.last_error: str | None = None
        self._queue: queue.Queue = queue.Queue()  # uploaded jobs, for the device thread
        self._uploads: JobQueue[_Job] = JobQueue()  # prefetched jobs, for the upload thread
        self._ahead = threading.Semaphore(2)  # the proof on the device and one uploaded behind it
        # the budget: from PROOFFLOW_KEY_BUDGET at start when None; a GPU's keys get MSM copies
        self.keys = KeyCache(key_budget, device_options(config) if backend == "gpu" else None)
        self._state = threading.Lock()
        self._active = 0
        self._jobs_in_hand = 0  # prove jobs between their request and their reply
        self._jobs: set[_Job] = set()  # prove jobs queued, on the device or finishing, for cancel
        self._last_activity = time.time()
        self._busy = False
        self._in_queue: dict[int, _Job] = {}  # the jobs prefetched, not yet on the device, in order
        self._running: tuple[_Job, float] | None = None  # the job on the device, since when
        self._key_ops: queue.Queue = queue.Queue()  # preloads and evictions (_DeviceCall), for the device thread
        self._device_stopped = threading.Event()
        self._stop = threading.Event()
        self.backend = None
        self.segments = {}
        self.metrics = ServiceMetrics(self.device_label, self._metrics_state)
        self._instance = None  # the instance lock's file, held while the process lives

    # ---- set-up -------------------------------------------------------------------------
    def _use_device(self) -> None:
        if self.backend_name == "gpu":
            device.use(self.device)

    @property
    def device_label(self) -> str:
        """As the timing rows and calibrations name devices: cuda:N, or cpu (cpu:N for the
        CPU backend's simulated devices beyond the first)."""
        if self.backend_name == "gpu":
            return f"cuda:{self.device}"
        return "cpu" if self.device == 0 else f"cpu:{self.device}"

    def start(self) -> None:
        """Backend, segment mappings and kernels ready before the socket accepts anything."""
        from proofflow.prover.backend.by_name import get_backend
        self._use_device()
        self.backend = get_backend(self.backend_name, device_options(self.config))
        self.backend.warm_up()
        if self.keys.budget is None:
            self.keys.budget = self.config.key_budget.of(self._memory_bytes())
        log.info("proving keys stay resident within %d bytes (PROOFFLOW_KEY_BUDGET)", self.keys.budget)
        self.staging = SharedStaging.from_settings(self.config)
        self.segments = {kind: MappedSegments(self.staging, pin=MemoryKind.effective(kind, self.backend_name)
                                                       is MemoryKind.PINNED)
                         for kind in (MemoryKind.PINNED, MemoryKind.PAGEABLE)}
        threading.Thread(target=self._upload_loop, name="proofflow-upload", daemon=True).start()
        threading.Thread(target=self._device_loop, name="proofflow-device", daemon=True).start()

    def _memory_bytes(self) -> int:
        """What the key budget's fraction is of: the device's memory (the host's on the CPU)."""
        if self.backend_name == "gpu":
            return device.memory_bytes()
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")

    # ---- prefetch (connection thread) -----------------------------------------------------
    def _prefetch(self, spec: ProveJob, timer: PhaseTimer, conn: socket.socket | None = None) -> _Job:
        get = self.keys.get_zkey if spec.key_source is KeySource.ZKEY else self.keys.get
        key = get(spec.params_dir, spec.circuit, spec.log2, timer, curve=spec.curve)
        if spec.n != key.domain_size:
            raise InputError(f"the job's a/b/c have {spec.n} points, the circuit's domain {key.domain_size}")
        with timer.phase(Phase.PREFETCH):
            faults.point("service.prefetch")
            staged = self.segments[spec.staging].get_for(key, spec.segment, spec.holder)
        return _Job(spec, key, staged, timer, conn=conn)

    # ---- the upload thread ------------------------------------------------------------------
    def _upload_loop(self) -> None:
        """Uploads on a copy stream of its own (a GPU's; the CPU's "upload" is a copy), one
        proof ahead of the device thread: the next proof's H2D overlaps the kernels of the
        one before, and device memory holds at most two proofs' vectors."""
        self._use_device()
        stream = device.copy_stream() if self.backend_name == "gpu" else contextlib.nullcontext()
        with stream:
            while True:
                # room on the device first, then the job: it is chosen as late as possible, so
                # a job of a higher priority that came meanwhile goes before the waiting ones
                self._ahead.acquire()
                job = self._uploads.get()
                if job is None:
                    self._queue.put(None)
                    return
                try:
                    if job.cancelled:
                        raise RunCancelled(_CANCELLED)
                    if _caller_gone(job.conn):
                        raise CallerGone("the caller left before its job was uploaded")
                    job.uploaded = pipeline.upload(job.staged, self.backend, job.timer)
                except BaseException as exc:
                    self._ahead.release()
                    self._dequeued(job)
                    job.error = exc
                    self._recover(exc)
                    job.done.set()
                    continue
                self._queue.put(job)

    # ---- the device thread ------------------------------------------------------------------
    def _device_loop(self) -> None:
        from proofflow.prover.backend.standin import StandinBackend
        self._use_device()
        while True:
            job = self._next_job()
            if job is None:
                self._device_stopped.set()
                return
            start = time.time()
            job.timer.spans.append(Span(Phase.MUTEX_WAIT, job.ready_at, start))
            self._dequeued(job)
            with self._state:  # a cancel flags only the jobs not on the device yet
                job.on_device = not job.cancelled
            self._busy, self._running = True, (job, start)
            try:
                if job.cancelled:
                    raise RunCancelled(_CANCELLED)
                if self._stop.is_set():
                    raise RuntimeError("the prover service is stopping")
                if _caller_gone(job.conn):  # a killed task: its job would only waste the device
                    raise CallerGone("the caller left before its job reached the device")
                faults.point("service.device")
                evicted = self.keys.make_resident(job.key, self.backend.prepare, job.timer)
                job.evicted = [str(k.directory) for k in evicted]
                standin = job.spec.standin_s
                backend = StandinBackend(self.backend, standin) if standin else self.backend
                job.pending = pipeline.prove_device(job.key, job.staged, backend, job.timer, job.transfers,
                                                    job.uploaded)
            except BaseException as exc:  # the job fails, the service goes on
                job.error = exc
                self._recover(exc)
            finally:
                job.uploaded = None  # the device copies go back to the pool
                self._busy, self._running = False, None
                self._ahead.release()
                job.done.set()

    def _dequeued(self, job: _Job) -> None:
        with self._state:
            self._in_queue.pop(id(job), None)

    def _next_job(self) -> _Job | None:
        """The next uploaded job (None: stop), the key operations asked for meanwhile run
        first: between two proofs, on this thread, as ``KeyCache`` wants them."""
        while True:
            self._run_key_ops()
            try:
                job = self._queue.get(timeout=0.05)  # an idle device takes a preload within this
            except queue.Empty:
                continue
            self._run_key_ops()
            return job

    def _run_key_ops(self) -> None:
        while True:
            try:
                op = self._key_ops.get_nowait()
            except queue.Empty:
                return
            try:
                op.result = op.fn()
            except BaseException as exc:
                op.error = exc
            op.done.set()

    def _on_device_thread(self, fn):
        """``fn()`` run by the device thread between two proofs; its result (or its error)."""
        op = _DeviceCall(fn)
        self._key_ops.put(op)
        while not op.done.wait(0.5):
            if self._device_stopped.is_set():  # it will never run: the service is stopping
                raise RuntimeError("the prover service is stopping")
        if op.error is not None:
            raise op.error
        return op.result

    # ---- operator requests: keys ---------------------------------------------------------------
    def _preload(self, job: KeyJob) -> KeyLoaded:
        """The key resident on the device, as a proof's first use would make it (loaded on this
        thread, uploaded on the device thread), so the next proof with it pays no upload."""
        timer = PhaseTimer()
        get = self.keys.get_zkey if job.key_source is KeySource.ZKEY else self.keys.get
        key = get(job.params_dir, job.circuit, job.log2, timer, curve=job.curve)
        evicted = self._on_device_thread(lambda: self.keys.make_resident(key, self.backend.prepare, timer))
        upload = [s.end - s.start for s in timer.spans if s.phase is Phase.KEY_UPLOAD]
        return KeyLoaded(self.device_label, str(key.directory), key.nbytes, upload[0] if upload else None,
                         tuple(str(k.directory) for k in evicted))

    def _evict(self, job: KeyJob) -> dict:
        directory = Path(job.params_dir)
        if job.key_source is KeySource.ZKEY:
            from proofflow.prover.circom import zkey_cache
            directory = directory / zkey_cache.KEY
        freed = self._on_device_thread(lambda: self.keys.evict(directory))
        return {"ok": True, "device": self.device_label, "directory": str(directory), "bytes": freed}

    def _recover(self, exc: BaseException) -> None:
        """After a failed job. Out of memory: give back the device memory the service
        caches (CuPy's pools, the keys' resident tables, uploaded again by the next job),
        so the next job starts from what is in use."""
        if isinstance(exc, (CallerGone, RunCancelled)):
            log.info("%s", exc)
            return
        log.warning("job failed: %s: %s", type(exc).__name__, exc)
        with self._state:
            self.last_error = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, MemoryError):
            return
        self.keys.drop_all()
        if self.backend_name == "gpu":
            try:
                device.free_pools()
            except Exception:
                log.exception("could not free the device memory pools")
        with self._state:
            self.recoveries += 1

    # ---- connections ------------------------------------------------------------------------
    def status(self) -> dict:
        device_pool = device.pool_bytes() if self.backend_name == "gpu" else None
        return {"ok": True, "pid": os.getpid(), "backend": self.backend_name, "device": self.device_label,
                "started_at": self.started_at, "queued": len(self._in_queue), "busy": self._busy,
                "queued_by_priority": self._uploads.counts(lambda job: job.spec.priority.value),
                "active": self._active, "jobs_in_hand": self._jobs_in_hand, "jobs_done": self.jobs_done, "jobs_failed": self.jobs_failed,
                "jobs_cancelled": self.jobs_cancelled, "recoveries": self.recoveries, "last_error": self.last_error,
                "rss_bytes": _rss_bytes(), "device_pool_bytes": device_pool, "keys": self.keys.directories(),
                "key_budget_bytes": self.keys.budget, "resident_keys": self.keys.resident(),
                "resident_key_bytes": self.keys.resident_bytes(), "key_evictions": self.keys.evictions,
                "evicted_keys": list(self.keys.evicted),
                "segments": {k: m.stats() for k, m in self.segments.items()}, **self._jobs_state(),
                "staging": self.staging.stats()}

    def _jobs_state(self) -> dict:
        """The job on the device and the queue, as ``admin.ServiceStatus`` reads them."""
        def state(job: _Job, since: float) -> dict:
            return asdict(JobState(job.spec.job_id, job.spec.holder, job.spec.circuit, job.spec.log2, since))
        with self._state:
            running = self._running
            queued = sorted(self._in_queue.values(), key=lambda j: j.spec.priority.rank)  # as they will run
        return {"running": state(*running) if running else None,
                "queue": [state(j, j.ready_at) for j in queued]}

    def _metrics_state(self) -> ServiceState:
        staging = self.staging.stats()
        with self._state:
            queued, in_hand = len(self._in_queue), self._jobs_in_hand
        return ServiceState(queued, int(self._busy), in_hand, len(self.keys.resident()), self.keys.resident_bytes(),
                            self.keys.budget or 0, self.keys.evictions, staging["leased"], staging["idle"],
                            staging["budget"])

    def _prove(self, spec: ProveJob, conn: socket.socket | None = None) -> ProveReply:
        timer = PhaseTimer()
        job = self._prefetch(spec, timer, conn)
        try:
            with self._state:
                self._in_queue[id(job)] = job
                self._jobs.add(job)
            job.ready_at = time.time()  # its mutex_wait: until the device takes it, the upload running meanwhile
            self._uploads.put(job, spec.priority.rank)
            job.done.wait()
            if isinstance(job.error, MemoryError):
                raise MemoryError(f"out of memory on {self.device_label} ({type(job.error).__name__}: {job.error}); "
                                  "the service gave back its cached device memory and idle staging buffers: "
                                  "a retry can succeed") from job.error
            if job.error is not None:
                if isinstance(job.error, (ValueError, ArithmeticError)):  # e.g. arkworks: a point off the curve
                    self.keys.check_digests(job.key)
                raise job.error
            try:  # before the buffer goes back: witness and a/b/c are views into it
                proof = pipeline.finish(job.pending, job.key, job.staged, timer)
            except ProofCheckFailed as exc:
                self.keys.check_digests(job.key)
                raise InputError(f"no proof returned: {exc}") from None
        finally:
            with self._state:
                self._jobs.discard(job)
            job.staged.release()
            if isinstance(job.error, RunCancelled):  # its run is over: the segment goes back now
                self.staging.release(spec.segment)
        return ProveReply(proof.to_bytes(), self.device_label, os.getpid(), tuple(timer.spans),
                          {k: TransferRecord(t.nbytes, t.ms, t.kind) for k, t in job.transfers.items()},
                          tuple(job.evicted))

    def cancel(self, run: CancelRun) -> CancelReply:
        """Drop ``run``'s jobs that are not on the device: those queued at once, those already
        taken for upload when the device thread comes to them; the ones on the device finish."""
        dropped = self._uploads.remove(lambda job: run.holds(job.spec.holder))
        for job in dropped:
            self._dequeued(job)
            job.error = RunCancelled(_CANCELLED)
            job.done.set()
        with self._state:
            mine = [job for job in self._jobs if run.holds(job.spec.holder) and not job.done.is_set()]
            later = [job for job in mine if not job.on_device]
            for job in later:
                job.cancelled = True
        reply = CancelReply(self.device_label, len(dropped) + len(later), len(mine) - len(later))
        log.info("run %s cancelled: %d job(s) dropped, %d left to finish on the device", run.owner, reply.dropped,
                 reply.on_device)
        return reply

    def _handle(self, conn: socket.socket) -> None:
        try:
            self._use_device()
            self._serve(conn)
        except Exception:
            log.exception("connection failed")
        finally:  # always: a connection left counted would keep the service from ever going idle
            with self._state:
                self._active -= 1
                self._last_activity = time.time()

    def _reply_to(self, req: dict, conn: socket.socket) -> dict:
        op = req.get("op")
        if op == "status":
            return self.status()
        if op == "stop":
            self._stop.set()
            return {"ok": True, "stopping": True}
        if op == "stage":
            job = StageJob.from_wire(req.get("job"))
            return {"ok": True, **self.segments[job.staging].stage(job.segment, job.holder)}
        if op == "preload":
            return self._preload(KeyJob.from_wire(req.get("job"))).to_wire()
        if op == "evict":
            return self._evict(KeyJob.from_wire(req.get("job")))
        if op == "cancel":
            return self.cancel(CancelRun.from_wire(req.get("run"))).to_wire()
        if op != "prove":
            raise ProtocolError(f"unknown op {op!r}")
        with self._state:
            self._jobs_in_hand += 1
        try:
            proved = self._prove(ProveJob.from_wire(req.get("job")), conn)
        except BaseException as exc:
            self.metrics.failed(exc)
            with self._state:
                if isinstance(exc, (CallerGone, RunCancelled)):
                    self.jobs_cancelled += 1
                else:
                    self.jobs_failed += 1
            raise
        finally:
            with self._state:
                self._jobs_in_hand -= 1
        with self._state:
            self.jobs_done += 1
        self.metrics.proved(proved)
        return proved.to_wire()

    def _serve(self, conn: socket.socket) -> None:
        f = conn.makefile("rwb")
        try:
            try:
                reply = self._reply_to(protocol.recv(f), conn)
            except Exception as exc:
                reply = error_reply(exc)
            try:
                protocol.send(f, reply)
            except OSError:
                log.warning("the caller left before its reply (%s)", reply.get("error") or "ok")
        finally:
            try:
                f.close()  # flushes: fails again when the caller is gone
            except OSError:
                pass
            conn.close()

    def _claim(self) -> None:
        """One service per socket: an exclusive lock held for the process's life (the kernel
        drops it when the process dies, SIGKILL included). Probing the socket instead let two
        services started at once both bind, the first left running unreachable."""
        private_dir.ensure(self.socket_path.parent)
        self._instance = os.fdopen(private_dir.open_file(self.socket_path.with_suffix(".pid"), os.O_RDWR | os.O_CREAT),
                                   "r+")
        try:
            fcntl.flock(self._instance, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"a prover service already runs for {self.socket_path} "
                               f"(pid {self._instance.read().strip() or '?'})") from None
        self._instance.truncate(0)
        self._instance.write(f"{os.getpid()}\n")
        self._instance.flush()

    def _bind(self) -> socket.socket:
        private_dir.remove_stale_socket(self.socket_path)  # a dead service's: we hold the instance lock
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o600)
        srv.listen(64)
        srv.settimeout(0.5)
        return srv

    def serve_forever(self) -> None:
        self._claim()
        self.start()
        if self.config.metrics_port:
            self.metrics.serve(self.config.metrics_port + self.device, self.config.metrics_addr)
        srv = self._bind()
        log.info("prover service pid %d on %s (%s), idle timeout %.0f s", os.getpid(), self.socket_path,
                 self.device_label, self.idle_s)
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = srv.accept()
                except socket.timeout:
                    with self._state:
                        idle = self._active == 0 and time.time() - self._last_activity > self.idle_s
                    if idle:
                        log.info("idle for %.0f s: stopping", self.idle_s)
                        break
                    continue
                with self._state:
                    self._active += 1
                    self._last_activity = time.time()
                threading.Thread(target=self._handle, args=(conn,), name="proofflow-conn", daemon=True).start()
        finally:
            self.metrics.close()
            srv.close()
            try:
                self.socket_path.unlink()
            except FileNotFoundError:
                pass
            self._stop.set()
            deadline = time.time() + 30
            while self._active and time.time() < deadline:  # let running jobs reply
                time.sleep(0.05)
            self._uploads.close()
            # idle segments are kept for this service's mappings of them; without it they only
            # hold host memory (32 GiB stayed in /dev/shm after a stream had stopped)
            mapped = set().union(*(m.inodes() for m in self.segments.values()))
            log.info("gave back %d bytes of idle staging segments", self.staging.drop_idle(mapped))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m proofflow.prover.service",
                                description="Serve prove jobs for one device over a Unix socket (started on "
                                            "demand by proofflow.prover.service.client; stops when idle).")
    p.add_argument("--socket", required=True, help="Unix socket path to listen on")
    p.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--device", type=int, default=0, help="device index (of those CUDA_VISIBLE_DEVICES shows)")
    p.add_argument("--idle-timeout", type=float, default=600.0, help="stop after this many seconds without a job")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # The device thread is the critical path: when it wants the GIL back (after a copy or a
    # kernel launch released it) it should not wait out the 5 ms default switch interval
    # behind a connection thread's prefetch.
    sys.setswitchinterval(0.0005)
    svc = ProverService(args.socket, settings.current(), args.backend, args.device, args.idle_timeout)
    signal.signal(signal.SIGTERM, lambda *_: svc._stop.set())
    try:
        svc.serve_forever()
    except (RuntimeError, private_dir.UnsafePath) as exc:
        log.error("%s", exc)
        return 3
    return 0
