"""Shared staging: a partition's a/b/c and witness written once, by synthesis, into shared
memory that the device's prover service maps and page-locks (``cudaHostRegister``) and
uploads from. No file holds a/b/c and nothing copies them on the host between synthesis
and the H2D: the synthesize task, the stage task and the service all see one segment.

Layout of the root (a tmpfs directory, PROOFFLOW_SHARED_STAGING)::

    <id>.seg        a leased segment: a/b/c as one (3, n, 4) Fr block, then the witness
    <id>.json       its lease: owner, sizes, state (writing | ready), writer pid and host
    idle/<cap>-<x>.seg  a released segment kept for reuse: renaming it keeps its inode, so the
                    service's mapping and registration (slow: ~0.1 s a GiB) are reused too
    .lock           held (flock) while leases change

Segments are leased under a byte budget (in use and idle together, like the in-process
``pool.StagingPool``): a lease that does not fit evicts idle segments, then waits for
holders to release, and gives up with ``StagingTimeout``. Space is reserved when a segment
is created (``posix_fallocate``), so a full /dev/shm is an error at lease time, never a
SIGBUS mid-write. An owner (``dag/run/partition``) holds one lease at a time: leasing again
replaces its previous lease, as a re-run synthesis replaces its output.

A segment goes idle for reuse only once its writer is done (its lease ``ready``): the
segment of a lease ended while still ``writing`` (replaced, cut off, a run's cleanup) is
removed, since its writer may still be running and would write into the next lease's
segment; that writer's ``ready`` then fails. A lease file is written atomically, and the
temporary file of one that failed (a full /dev/shm) is removed at the next reclaim.

Leases end by ``release`` (the proof is out), ``release_owned`` (a run's cleanup), or
``reclaim``: a segment whose writer died before it was ready (a killed synthesize task), or
one older than the lease TTL. Idle segments go back to the host after ``idle_ttl_s`` unused
(``reclaim`` runs at every lease and at a run's cleanup), and a prover service that stops
drops those it mapped (``drop_idle``), so staging memory does not stay held between batches.
"""
from __future__ import annotations

import errno
import fcntl
import json
import mmap
import os
import re
import secrets
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from proofflow import settings
from proofflow.prover import files, private_dir
from proofflow.prover.errors import StagingTimeout
from proofflow.prover.staging.segment import segment_bytes, segment_views

if TYPE_CHECKING:
    import numpy as np

_ID = re.compile(r"[0-9a-f]{16}")  # lease ids name files: nothing else may reach a path
_ALIGN = 1 << 21  # 2 MiB: sizes round up so near-equal partitions share idle segments


class SegmentError(ValueError):
    """A segment that is missing, of the wrong size or owner, or not fully written."""


def _capacity(nbytes: int) -> int:
    return max(_ALIGN, -(-nbytes // _ALIGN) * _ALIGN)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Lease:
    id: str
    owner: str
    n: int
    num_variables: int
    capacity: int
    state: str = "writing"
    pid: int = 0
    host: str = ""
    created: float = 0.0
    bound: bool = False  # ends with its writer, ready or not: the writer itself waits for the proof

    @property
    def nbytes(self) -> int:
        return segment_bytes(self.n, self.num_variables)

    def to_json(self) -> dict:
        return dict(self.__dict__)


class Mapping:
    """One segment file mapped read-write (page-locking needs writable pages). It keeps the
    file open, so ``gone`` can tell when the file was removed under it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDWR)
        try:
            st = os.fstat(self._fd)
            self.inode, self.size = (st.st_dev, st.st_ino), st.st_size
            self._mm = mmap.mmap(self._fd, st.st_size)
        except BaseException:
            os.close(self._fd)
            raise
        import numpy as np  # here, not at import: tasks that only lease and release segments skip numpy
        self.words = np.frombuffer(self._mm, dtype=np.uint64)
        self.address = self.words.ctypes.data

    def gone(self) -> bool:
        return os.fstat(self._fd).st_nlink == 0

    def views(self, lease: Lease) -> tuple[tuple, np.ndarray]:
        """(a, b, c) and the witness of ``lease`` over this mapping."""
        if self.size < lease.nbytes:
            raise SegmentError(f"segment {self.path}: {self.size} bytes, its lease needs {lease.nbytes}")
        return segment_views(self.words, lease.n, lease.num_variables)

    def close(self) -> None:
        self.words = None
        try:
            self._mm.close()
        except BufferError:  # a view is still alive: the mapping goes when it does
            pass
        os.close(self._fd)


class Segment:
    """A leased segment mapped for its writer or a reader: ``abc`` and ``witness`` views."""

    def __init__(self, path: Path, lease: Lease):
        self.lease = lease
        self.mapping = Mapping(path)
        self.abc, self.witness = self.mapping.views(lease)

    def close(self) -> None:
        self.abc = self.witness = None
        self.mapping.close()


class SharedStaging:
    def __init__(self, root, budget_bytes: int, lease_ttl_s: float = 86400.0, idle_ttl_s: float = 600.0):
        if budget_bytes <= 0:
            raise ValueError("budget_bytes must be positive")
        self.root = Path(root)
        self.budget = int(budget_bytes)
        self.lease_ttl_s = float(lease_ttl_s)
        self.idle_ttl_s = float(idle_ttl_s)
        self.host = socket.gethostname()

    @classmethod
    def from_settings(cls, s: settings.Settings | None = None) -> "SharedStaging":
        """The shared staging settings ``s`` (default: this process's) describe: this home's,
        under PROOFFLOW_STAGING_BUDGET."""
        s = s or settings.current()
        return cls(s.shared_staging_dir, s.staging_budget, s.staging_lease_ttl_s, s.staging_idle_ttl_s)

    # ---- bookkeeping (under the lock) ---------------------------------------------------
    @contextmanager
    def _locked(self):
        private_dir.ensure(self.root)  # a predictable /dev/shm path: checked, never trusted because it exists
        (self.root / "idle").mkdir(exist_ok=True, mode=0o700)
        with os.fdopen(private_dir.open_file(self.root / ".lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _gone(self) -> bool:
        """The root was removed (its home's): what only ends or counts leases leaves it so,
        since a service or cleanup outliving its home must not recreate it in shared memory."""
        return not self.root.is_dir()

    def _seg(self, lease_id: str) -> Path:
        return self.root / f"{lease_id}.seg"

    def _meta(self, lease_id: str) -> Path:
        return self.root / f"{lease_id}.json"

    def _read(self, lease_id: str) -> Lease | None:
        try:
            return Lease(**json.loads(self._meta(lease_id).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _write(self, lease: Lease) -> None:
        files.write_json(self._meta(lease.id), lease.to_json())

    def leases(self) -> list[Lease]:
        out = []
        for meta in sorted(self.root.glob("*.json")) if self.root.exists() else []:
            lease = self._read(meta.stem)
            if lease is not None:
                out.append(lease)
        return out

    def _idle(self) -> list[Path]:
        return sorted((self.root / "idle").glob("*.seg"))

    def _held_bytes(self) -> tuple[int, int]:
        """(bytes of leased segments, bytes of idle ones)."""
        used = sum(p.stat().st_size for p in self.root.glob("*.seg"))
        idle = sum(p.stat().st_size for p in self._idle())
        return used, idle

    def _drop(self, lease: Lease, keep: bool = True) -> None:
        """End a lease: its segment goes idle if ``keep`` and its writer is done (else it is
        removed: a running writer must not write into another lease's segment), then its
        lease file."""
        seg = self._seg(lease.id)
        if seg.exists():
            if keep and lease.state == "ready":
                idle = self.root / "idle" / f"{seg.stat().st_size}-{lease.id}.seg"
                os.replace(seg, idle)
                os.utime(idle)  # its idle time counts from now (idle_ttl_s)
            else:
                seg.unlink()
        self._meta(lease.id).unlink(missing_ok=True)

    def _stale(self, lease: Lease, now: float) -> str | None:
        if not self._seg(lease.id).exists():
            return "its segment is gone (its holder was killed while ending it)"
        if (lease.state == "writing" or lease.bound) and lease.host == self.host and not _pid_alive(lease.pid):
            return f"its writer (pid {lease.pid}) died {'before its proof' if lease.bound else 'before the segment was ready'}"
        if now - lease.created > self.lease_ttl_s:
            return f"older than the lease TTL ({self.lease_ttl_s:.0f} s)"
        return None

    def _reclaim_locked(self) -> list[tuple[Lease, str]]:
        now, out = time.time(), []
        for p in self._idle():  # idle too long: the memory goes back to the host
            if now - p.stat().st_mtime > self.idle_ttl_s:
                p.unlink(missing_ok=True)
        for lease in self.leases():
            why = self._stale(lease, now)
            if why:
                self._drop(lease, keep=False)  # a dead writer's bytes are not worth keeping
                out.append((lease, why))
        for tmp in self.root.glob(".*.tmp"):  # a lease file's write that failed: they happen under the lock
            tmp.unlink(missing_ok=True)
        # Segments and lease files come and go together under the lock, so one without the other
        # is a process killed between the two (in _take or _drop): nothing will complete it.
        for seg in self.root.glob("*.seg"):
            if not self._meta(seg.stem).exists():
                seg.unlink(missing_ok=True)
        return out

    def reclaim(self) -> list[tuple[Lease, str]]:
        """End the leases of dead writers and expired ones (returned with the reason), and
        remove idle segments unused for longer than ``idle_ttl_s``."""
        if self._gone():
            return []
        with self._locked():
            return self._reclaim_locked()

    # ---- leasing ------------------------------------------------------------------------
    def _take(self, owner: str, n: int, num_variables: int, bound: bool) -> Lease | None:
        """A lease if it fits now (under the lock), else None."""
        for lease in self.leases():  # the owner's previous lease is replaced, its segment never reused
            if lease.owner == owner:
                self._drop(lease, keep=False)
        self._reclaim_locked()
        need = segment_bytes(n, num_variables)
        cap = _capacity(need)
        if cap > self.budget:
            raise ValueError(f"a partition of {need} bytes (a/b/c and witness) can never fit the staging "
                             f"budget of {self.budget} bytes")
        used, idle = self._held_bytes()
        if used + cap > self.budget:
            return None
        lease = Lease(secrets.token_hex(8), owner, n, num_variables, cap, "writing", os.getpid(), self.host,
                      time.time(), bound)
        try:
            self._create(lease, used + idle)
            self._write(lease)
        except OSError as exc:  # no segment without its lease file, and none left behind
            self._seg(lease.id).unlink(missing_ok=True)
            if exc.errno == errno.ENOSPC:
                raise MemoryError(f"{self.root} is full: no room for {cap} bytes of staging (shared memory "
                                  "is smaller than PROOFFLOW_STAGING_BUDGET)") from None
            raise
        return lease

    def _create(self, lease: Lease, held: int) -> None:
        """``lease``'s segment file: an idle one of its capacity, else a new one (idle ones of
        other sizes make room while ``held`` bytes and it would exceed the budget)."""
        cap = lease.capacity
        reuse = next((p for p in self._idle() if p.stat().st_size == cap), None)
        if reuse is not None:
            os.replace(reuse, self._seg(lease.id))
            return
        for p in self._idle():
            if held + cap <= self.budget:
                break
            held -= p.stat().st_size
            p.unlink()
        fd = os.open(self._seg(lease.id), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.posix_fallocate(fd, 0, cap)
        finally:
            os.close(fd)

    def lease(self, owner: str, n: int, num_variables: int, timeout: float | None = None,
              bound: bool = False) -> Lease:
        """A segment for ``owner``'s partition (n domain points, ``num_variables`` witness
        entries), waiting up to ``timeout`` seconds (None: forever) for room. ``bound``: the
        lease ends when this process dies even once ready (its writer waits for the proof);
        else a ready segment outlives its writer, as a synthesize task's does."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.02
        while True:
            with self._locked():
                lease = self._take(owner, n, num_variables, bound)
            if lease is not None:
                return lease
            if deadline is not None and time.monotonic() >= deadline:
                used, _ = self._held_bytes()
                raise StagingTimeout(f"no room for {segment_bytes(n, num_variables)} bytes of shared staging "
                                     f"within {timeout} s: {used} of {self.budget} bytes leased")
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def lookup(self, lease_id: str, writer: bool = False, owner: str | None = None) -> tuple[Lease, Path]:
        """A lease and its segment's path: its writer's, or (else) a ready one. ``owner``
        checks that it holds the lease (a job naming another partition's segment is refused)."""
        if not isinstance(lease_id, str) or not _ID.fullmatch(lease_id):
            raise SegmentError(f"{lease_id!r} is not a staged segment's id")
        meta = self._read(lease_id)
        if meta is None or not self._seg(lease_id).exists():
            raise SegmentError(f"staged segment {lease_id} is gone from {self.root} (released, reclaimed, or "
                               "the host restarted): run the partition's synthesis again")
        if owner is not None and meta.owner != owner:
            raise SegmentError(f"staged segment {lease_id} belongs to {meta.owner}, not {owner}")
        if not writer and meta.state != "ready":
            raise SegmentError(f"staged segment {lease_id} is not fully written (state {meta.state})")
        return meta, self._seg(lease_id)

    def open(self, lease: Lease | str, writer: bool = False, owner: str | None = None) -> Segment:
        lease, path = self.lookup(lease.id if isinstance(lease, Lease) else lease, writer, owner)
        return Segment(path, lease)

    def ready(self, lease: Lease) -> None:
        """The writer is done: the segment may be proved (and is no longer reclaimed when
        the writer exits). A lease replaced or ended meanwhile is not revived: SegmentError."""
        with self._locked():
            if self._read(lease.id) is None or not self._seg(lease.id).exists():
                raise SegmentError(f"staged segment {lease.id} was released or replaced before it was ready")
            lease.state = "ready"
            self._write(lease)

    def release(self, lease_id: str) -> bool:
        if not _ID.fullmatch(lease_id) or self._gone():
            return False
        with self._locked():
            lease = self._read(lease_id)
            if lease is None:
                return False
            self._drop(lease)
            return True

    def release_owned(self, prefix: str) -> int:
        """End every lease whose owner starts with ``prefix`` (a run's cleanup), then reclaim."""
        if self._gone():
            return 0
        with self._locked():
            mine = [lease for lease in self.leases() if lease.owner.startswith(prefix)]
            for lease in mine:
                self._drop(lease)
            self._reclaim_locked()
            return len(mine)

    def drop_idle(self, inodes: set[tuple[int, int]] | None = None) -> int:
        """Remove the idle segments now, those of ``inodes`` ((device, inode) pairs) or all
        (None), and return the bytes given back to the host. A prover service that stops
        drops those it mapped: the mapping and page-locking that their reuse saves go with
        it, while another device's service keeps its own. Leased segments stay."""
        if self._gone():
            return 0
        with self._locked():
            freed = 0
            for p in self._idle():
                st = p.stat()
                if inodes is None or (st.st_dev, st.st_ino) in inodes:
                    freed += st.st_size
                    p.unlink(missing_ok=True)
            return freed

    def held_bytes(self) -> int:
        """Bytes of shared memory the staging holds (leased and idle segments)."""
        if self._gone():
            return 0
        with self._locked():
            return sum(self._held_bytes())

    def stats(self) -> dict:
        if self._gone():
            return {"root": str(self.root), "budget": self.budget, "leased": 0, "idle": 0, "leases": 0}
        with self._locked():
            used, idle = self._held_bytes()
            return {"root": str(self.root), "budget": self.budget, "leased": used, "idle": idle,
                    "leases": len(self.leases())}
