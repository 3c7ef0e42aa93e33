"""Private directories for sockets, locks, logs and shared staging. Their default paths are
predictable (``/tmp/proofflow-<uid>/<digest>``, ``/dev/shm/proofflow-<uid>-<digest>``), so
another user could make one first, world-writable or as a symlink: a directory is never
trusted because it exists. ``ensure`` creates the missing components mode 0700 and checks,
with lstat (following no symlink), that the directory is a real directory of this user that
no group or other user can write; so must be each parent up to the first one only root
controls (root's, and writable by no one else or sticky, as /tmp and /dev/shm), where a
parent may also be a symlink of this user's own (a home kept elsewhere). ``open_file`` opens
a file inside one without following a symlink.
"""
from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path


class UnsafePath(PermissionError):
    """A directory or file that another user could control: refused, with what is wrong."""


def _rooted(st: os.stat_result) -> bool:
    """Only root can change it (a symlink's own mode means nothing)."""
    mode = st.st_mode
    return st.st_uid == 0 and (stat.S_ISLNK(mode) or bool(mode & stat.S_ISVTX) or not mode & 0o022)


def _unsafe(st: os.stat_result, uid: int, parent: bool) -> str | None:
    link = stat.S_ISLNK(st.st_mode)
    if link and not (parent and st.st_uid == uid):
        return "a symlink"
    if not link and not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid != uid:
        return f"owned by another user (uid {st.st_uid}, this process runs as uid {uid})"
    if not link and st.st_mode & 0o022:
        return "writable by group or others"
    return None


def _check(path: Path, parent: bool) -> None:
    uid = os.getuid()
    for d in (path, *path.parents):
        st = os.lstat(d)
        if parent and _rooted(st):
            return
        why = _unsafe(st, uid, parent)
        if why:
            raise UnsafePath(f"refusing {d} as a private directory: {why} (owner uid {st.st_uid}, mode "
                             f"{stat.S_IMODE(st.st_mode):04o}); remove it, or point proofflow elsewhere")
        parent = True


def check(path) -> Path:
    """``path``, made absolute, if it and its parents are as described above; else
    UnsafePath naming the component, its owner and mode (FileNotFoundError: not there)."""
    path = Path(os.path.abspath(path))
    _check(path, parent=False)
    return path


def ensure(path) -> Path:
    """``path`` made (each missing component mode 0700, under parents checked first) and checked."""
    path = Path(os.path.abspath(path))
    there, missing = path, []
    while not os.path.lexists(there):
        missing.append(there)
        there = there.parent
    _check(there, parent=bool(missing))  # nothing is made inside what another user controls
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:  # made meanwhile (a concurrent caller): checked below like any other
            pass
    return check(path)


def open_file(path, flags: int) -> int:
    """``os.open`` of a regular file of ours in a private directory, never through a symlink
    and not inherited by programs this one starts; created mode 0600."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
            raise UnsafePath(f"refusing {path}: a symlink, not a file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        raise UnsafePath(f"refusing {path}: not a regular file of this user (owner uid {st.st_uid}, "
                         f"mode {stat.S_IMODE(st.st_mode):04o})")
    os.set_blocking(fd, True)
    return fd


def lock(path):
    """An exclusive lock (flock) on ``path``, a file in a private directory (``open_file``),
    held until the returned file is closed."""
    f = os.fdopen(open_file(path, os.O_RDWR | os.O_CREAT), "r+b", buffering=0)
    try:
        fcntl.flock(f, fcntl.LOCK_EX)
    except BaseException:
        f.close()
        raise
    return f


def remove_stale_socket(path) -> None:
    """Unlink ``path`` before binding a Unix socket there, only if it is a socket of ours
    (one a dead process left); anything else there is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise UnsafePath(f"refusing to replace {path}: not a socket of this user (owner uid {st.st_uid}, "
                         f"mode {stat.S_IMODE(st.st_mode):04o})")
    os.unlink(path)
