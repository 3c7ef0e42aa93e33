"""Atomic file writes, in one place: every artifact (keys, a/b/c, witnesses, proofs,
bundles, reports, compiled kernels) goes to a temporary name next to its final one, is
fsynced, then renamed into place, so a writer killed mid-write leaves at most a ``.*.tmp``
file, never a half-written artifact under the real name; readers only look at real names.
(``save_npy``'s kill_mid_write fault hook, for the reliability tests: ``faults.py``.)
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tempfile
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


@contextmanager
def atomic_dir(path):
    """Yields a temporary directory next to ``path``; it replaces ``path`` (a directory)
    only if the block completes. Left-overs of killed writers: ``stale_dirs``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


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


def stale_dirs(path) -> list[Path]:
    """Temporary directories left next to ``path`` by ``atomic_dir`` writers that were killed."""
    path = Path(path)
    return sorted(p for p in path.parent.glob(f".{path.name}.*") if p.is_dir()) if path.parent.exists() else []
