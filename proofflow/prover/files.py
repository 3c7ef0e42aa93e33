"""Atomic file writes, in one place: every artifact (keys, a/b/c, witnesses, proofs,
bundles, reports, compiled kernels) goes to a temporary name next to its final one, is
fsynced, then renamed into place, so a writer killed mid-write leaves at most a ``.*.tmp``
file, never a half-written artifact under the real name; readers only look at real names.
A directory (``atomic_dir``) is written whole under a dot-name and swapped in by renames, so
the old one or the new one is there at every instant, and a killed writer's leftovers are
undone or removed by ``recover_dirs``. (The fault hooks for the reliability tests:
``faults.py``.)
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from proofflow.prover import faults


@contextmanager
def atomic_path(path):
    """Yields a temporary path next to ``path``; renamed onto ``path`` (after an fsync) only
    if the block completes. The caller writes the temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# A writer's work directory: ``.<name>.<8 random characters>`` beside ``<name>`` (mkdtemp's
# names), holding its lock and the new directory, and the old one while they are swapped.
_WORK = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}")
_LOCKLESS_GRACE_S = 3600  # a work directory with no lock yet: its writer is starting, or died


@contextmanager
def atomic_dir(path):
    """Yields a temporary directory next to ``path``; it replaces ``path`` (a directory)
    only if the block completes: the old one is renamed aside, the new one renamed in, then
    the old one removed, so a kill at any point leaves one of them under ``path`` or aside
    for ``recover_dirs`` to restore. The writer holds a lock in its work directory for its
    life, so whoever can take that lock knows the writer is gone."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    lock = os.open(work / "lock.tmp", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.rename(work / "lock.tmp", work / "lock")  # appears locked: no one sees it free while we live
        new, old = work / "new", work / "old"
        new.mkdir(mode=0o700)
        yield new
        if os.path.lexists(path):
            os.rename(path, old)
            faults.point(f"dir.swap.{path.name}")
        os.rename(new, path)
    finally:
        if _old_left(work, path):  # the block or the swap failed: the old one goes back
            os.rename(work / "old", path)
        shutil.rmtree(work, ignore_errors=True)
        os.close(lock)


def _old_left(work: Path, path: Path) -> bool:
    return (work / "old").is_dir() and not os.path.lexists(path)


def recover_dirs(parent, name: str | None = None) -> None:
    """Undo what ``atomic_dir`` writers killed in ``parent`` left (those of ``name`` only,
    when given): a writer killed between its renames gets its old directory restored, and a
    dead writer's work directory is removed. A writer is dead when its lock can be taken (the
    kernel drops it with the process), or, where it never got one, after an hour. A live
    writer's directory and anything this cannot remove (another user's) are left alone."""
    parent = Path(parent)
    try:
        entries = list(os.scandir(parent))
    except FileNotFoundError:
        return
    for entry in entries:
        m = _WORK.fullmatch(entry.name)
        if m is None or (name is not None and m["name"] != name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            _recover(Path(entry.path), parent / m["name"])
        except OSError:
            pass


def _recover(work: Path, path: Path) -> None:
    try:
        lock = os.open(work / "lock", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if time.time() - work.stat().st_mtime < _LOCKLESS_GRACE_S:
            return
        lock = None
    try:
        if lock is not None:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # its writer is alive
        if _old_left(work, path):
            os.rename(work / "old", path)
        shutil.rmtree(work)
    finally:
        if lock is not None:
            os.close(lock)


class NotARegularFile(OSError):
    """A device, FIFO, directory or socket where a file was expected: no length to trust."""


class FileTooLarge(OSError):
    def __init__(self, size: int, limit: int):
        super().__init__(f"{size} bytes, more than {limit}")
        self.size, self.limit = size, limit


def read_regular(path, limit: int | None = None, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``, which a user or peer may have chosen: opened
    non-blocking (a FIFO does not wait for a writer) and, unless ``follow_symlinks``, not
    through a symlink (ELOOP). NotARegularFile for anything else; FileTooLarge past ``limit``
    bytes, its size checked before reading and again after (it may grow meanwhile)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    with open(os.open(path, flags), "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        if limit is not None and st.st_size > limit:
            raise FileTooLarge(st.st_size, limit)
        data = f.read() if limit is None else f.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise FileTooLarge(len(data), limit)
    return data


def write_bytes(path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_json(path, obj, sort_keys: bool = True) -> Path:
    return write_bytes(path, json.dumps(obj, indent=1, sort_keys=sort_keys, default=str).encode())


def save_npy(path, array) -> Path:
    import numpy as np
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            if faults.fires("kill_mid_write", Path(path).name):  # half the file, then die
                data = io.BytesIO()
                np.save(data, array, allow_pickle=False)
                f.write(data.getbuffer()[: len(data.getbuffer()) // 2])
                f.flush()
                os.fsync(f.fileno())
                faults.kill_self()
            np.save(f, array, allow_pickle=False)
    return Path(path)


@contextmanager
def npy_in_place(path, shape: tuple, dtype):
    """A new ``.npy`` file filled in place through a memory map (numpy's ``open_memmap``): yields
    the writable array, which the caller fills piece by piece (never needing it whole in
    memory); flushed, fsynced and renamed into place only if the block completes. The bytes
    are np.save's for the same array, header included."""
    import numpy as np
    with atomic_path(path) as tmp:
        array = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=tuple(shape))
        yield array
        array.flush()


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def safe_name(text: str) -> str:
    """A file-system-safe, collision-free directory name for a dag or run id."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "x"
    return f"{clean}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def remove_tree(path) -> bool:
    """Remove a directory and, when it was the last, its parent; True when something was removed."""
    path = Path(path)
    if not path.exists():
        return False
    shutil.rmtree(path, ignore_errors=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass
    return True


def stale_temporaries(root) -> list[Path]:
    """Temporary files left by killed writers (harmless; listed for tests and cleanup)."""
    return sorted(Path(root).rglob(".*.tmp"))
