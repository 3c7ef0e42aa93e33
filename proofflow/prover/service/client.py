"""Reaching a device's prover service: found by its socket, started on first use.

Socket: ``$PROOFFLOW_RUNTIME/<backend>-<visible>-<device>.sock``. The runtime directory
defaults to ``/tmp/proofflow-<uid>/<digest of PROOFFLOW_HOME>`` (mode 0700): short enough for
a Unix socket path, private to the user, and separate for separate proofflow homes. It is
checked before each use (``private_dir``: ours, a real directory, writable by us alone), so a
directory another user made first, or a symlink, is refused rather than trusted; the start lock
and the service's log in it are opened without following symlinks.
``<visible>`` is CUDA_VISIBLE_DEVICES (``all`` when unset), so workers pinned to different
GPUs of one host never share a service. A caller that finds no service starts one
(``python -m proofflow.prover.service``, in its own session so it outlives the caller) under a lock
file, so concurrent first callers start exactly one.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from proofflow import settings
from proofflow.prover import faults, private_dir
from proofflow.prover.errors import ErrorType, ProtocolError
from proofflow.prover.service import protocol
from proofflow.prover.service.admin import KeyJob, KeyLoaded, ServiceStatus
from proofflow.prover.service.protocol import CancelReply, CancelRun, ProveJob, ProveReply, StageJob


class ServiceError(RuntimeError):
    """The service refused or failed a request; ``error_type`` says what went wrong (and
    whether a retry can help: ``error_type.retryable``)."""

    def __init__(self, message: str, error_type: ErrorType = ErrorType.INTERNAL):
        super().__init__(message)
        self.error_type = ErrorType(error_type)


class ServiceUnavailable(ServiceError):
    def __init__(self, message: str):
        super().__init__(message, ErrorType.UNAVAILABLE)


def socket_path(backend: str, device: int) -> Path:
    current = settings.current()
    visible = current.cuda_visible_devices
    visible = "all" if visible is None else (visible.replace(",", "_").replace("/", "_") or "none")
    return current.runtime_dir / f"{backend}-{visible}-{device}.sock"


class ServiceClient:
    def __init__(self, backend: str = "cpu", device: int = 0, idle_s: float | None = None):
        self.backend, self.device = backend, int(device)
        self.idle_s = idle_s if idle_s is not None else settings.current().service_idle_s
        self.path = socket_path(backend, device)

    def _request(self, req: dict, timeout: float) -> dict:
        try:
            private_dir.check(self.path.parent)  # never talk to a socket another user could have put there
        except FileNotFoundError:
            raise ServiceUnavailable(f"no prover service on {self.path}: no runtime directory") from None
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(str(self.path))
        except OSError as exc:
            s.close()
            raise ServiceUnavailable(f"no prover service on {self.path}: {exc}") from None
        with s, s.makefile("rwb") as f:
            try:
                protocol.send(f, req)
                if req.get("op") == "prove":
                    faults.point("client.sent")
                reply = protocol.recv(f)
            except (OSError, ProtocolError) as exc:
                raise ServiceError(f"the prover service on {self.path} failed: {exc}") from None
        if not reply.get("ok"):
            raise ServiceError(str(reply.get("error", "unknown error")), ErrorType.named(reply.get("error_type")))
        return reply

    def status(self, timeout: float = 5.0) -> dict:
        return self._request({"op": "status"}, timeout)

    def state(self, timeout: float = 5.0) -> ServiceStatus:
        """The typed status (``admin.ServiceStatus``) of the running service; ServiceUnavailable
        when none runs (none is started)."""
        return ServiceStatus.from_wire(self.status(timeout))

    def preload(self, key: KeyJob, timeout: float | None = None) -> KeyLoaded:
        """Make ``key`` resident on the device (the service must be running: ``ensure_running``)."""
        return KeyLoaded.from_wire(self._request({"op": "preload", "job": key.to_wire()},
                                                 timeout or settings.current().service_job_timeout_s))

    def evict(self, key: KeyJob, timeout: float | None = None) -> int | None:
        """Drop ``key`` from the device; the bytes it held, None when it was not resident."""
        reply = self._request({"op": "evict", "job": key.to_wire()}, timeout or settings.current().service_job_timeout_s)
        return reply["bytes"]

    def stop(self) -> None:
        try:
            self._request({"op": "stop"}, 5.0)
        except ServiceUnavailable:
            pass

    def ensure_running(self) -> float | None:
        """Start the service if none answers; returns the seconds a start took, None when one
        was already running."""
        try:
            self.status()
            return None
        except ServiceUnavailable:
            pass
        private_dir.ensure(self.path.parent)
        t0 = time.time()
        with private_dir.lock(self.path.with_suffix(".lock")):
            try:
                self.status()
                return None  # another caller started it while we waited for the lock
            except ServiceUnavailable:
                pass
            log = os.fdopen(private_dir.open_file(self.path.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND),
                            "ab")
            proc = subprocess.Popen(
                [sys.executable, "-m", "proofflow.prover.service", "--socket", str(self.path), "--backend", self.backend,
                 "--device", str(self.device), "--idle-timeout", str(self.idle_s)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
            log.close()
            start_timeout = settings.current().service_start_timeout_s
            deadline = t0 + start_timeout
            while time.time() < deadline:
                if proc.poll() is not None:
                    try:  # a service started by a caller killed while it waited here came up first
                        self.status(timeout=2.0)
                        return time.time() - t0
                    except ServiceUnavailable:
                        pass
                    raise ServiceUnavailable(f"the prover service exited with {proc.returncode} while starting; "
                                             f"see {self.path.with_suffix('.log')}")
                try:
                    self.status(timeout=2.0)
                    return time.time() - t0
                except ServiceUnavailable:
                    time.sleep(0.05)
            proc.kill()
            raise ServiceUnavailable(f"the prover service did not start within {start_timeout:.0f} s; "
                                     f"see {self.path.with_suffix('.log')}")

    def stage(self, job: StageJob, timeout: float | None = None) -> dict:
        """Have the service map (and page-lock) a partition's segment ahead of its proof."""
        return self._request({"op": "stage", "job": job.to_wire()},
                             timeout or settings.current().service_job_timeout_s)

    def prove(self, job: ProveJob, timeout: float | None = None) -> ProveReply:
        reply = self._request({"op": "prove", "job": job.to_wire()},
                              timeout or settings.current().service_job_timeout_s)
        try:
            return ProveReply.from_wire(reply)
        except ProtocolError as exc:
            raise ServiceError(f"the prover service on {self.path} failed: {exc}") from None


def cancel_all(owner: str, root: Path | None = None) -> list[CancelReply]:
    """Have every running service with a socket under ``root`` (default: this home's runtime
    dir) drop the jobs of the run whose staging prefix is ``owner`` (``layout.run_owner``)
    that are not on its device yet; starts none. A service that does not answer is skipped:
    one that stopped holds no jobs."""
    request = {"op": "cancel", "run": CancelRun(owner).to_wire()}
    root = Path(root) if root else settings.current().runtime_dir
    if not root.exists():
        return []
    private_dir.check(root)  # never talk to sockets another user could have put there
    out = []
    for sock in sorted(root.glob("*.sock")):
        try:
            out.append(CancelReply.from_wire(_ask(sock, request)))
        except (OSError, ProtocolError):
            pass
    return out


def _ask(sock: Path, req: dict) -> dict:
    """One request to the service at ``sock`` and its reply (OSError: none answers there)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5.0)
    try:
        s.connect(str(sock))
        with s.makefile("rwb") as f:
            protocol.send(f, req)
            reply = protocol.recv(f)
    finally:
        s.close()
    if not reply.get("ok"):
        raise ProtocolError(f"the prover service on {sock} refused {req['op']}: {reply.get('error')}")
    return reply


def least_busy(backend: str, devices: list[int], prefer: int = 0) -> int:
    """The device whose running service has the fewest jobs in hand (a device with no
    service counts as idle); ties go round-robin from ``prefer`` (e.g. the partition), so
    a wave of first callers spreads over idle devices."""
    def load(d: int) -> int:
        try:
            return ServiceClient(backend, d).status(timeout=2.0)["jobs_in_hand"]
        except ServiceError:
            return 0
    n = len(devices)
    return min(devices, key=lambda d: (load(d), (devices.index(d) - prefer) % n))


def running_services(timeout: float = 2.0) -> list[tuple[ServiceClient, ServiceStatus]]:
    """The prover services of this home running for this worker's devices
    (PROOFFLOW_GPU_DEVICES, on either backend), each with its status; none is started."""
    found = []
    for backend in ("gpu", "cpu"):
        for device in settings.current().gpu_devices:
            client = ServiceClient(backend, device)
            try:
                found.append((client, client.state(timeout)))
            except ServiceUnavailable:
                pass
    return found


def stop_all(root: Path | None = None) -> int:
    """Stop every service with a socket under ``root`` (default: this home's runtime dir)."""
    root = Path(root) if root else settings.current().runtime_dir
    stopped = 0
    for sock in sorted(root.glob("*.sock")) if root.exists() else []:
        try:
            _ask(sock, {"op": "stop"})
            stopped += 1
        except (OSError, ProtocolError):
            pass
    return stopped
