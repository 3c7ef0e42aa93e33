"""Run-scoped scratch directories and atomic artifact writes.

Every artifact goes to a temporary name in its final directory, is fsynced, then renamed
into place (``os.replace``), so a task killed mid-write leaves at most a ``.*.tmp`` file,
never a half-written artifact under the real name; readers only look at real names.
(``save_npy``'s kill_mid_write fault hook, for the reliability tests: proofflow/prover/faults.py.)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from proofflow import settings


def safe_name(text: str) -> str:
    """A file-system-safe, collision-free directory name for a dag or run id."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "x"
    return f"{clean}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def run_dir(dag_id: str, run_id: str, root: Path | None = None) -> Path:
    return Path(root or settings.scratch_root()) / safe_name(dag_id) / safe_name(run_id)


def partition_dir(dag_id: str, run_id: str, partition: int, root: Path | None = None) -> Path:
    return run_dir(dag_id, run_id, root) / f"p{partition:04d}"


@contextmanager
def atomic_path(path: Path):
    """Yields a temporary path next to ``path``; renamed onto ``path`` only if the block
    completes. The caller writes (and may fsync) the temporary file."""
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


def write_bytes(path: Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_json(path: Path, obj) -> Path:
    return write_bytes(path, json.dumps(obj, indent=1, sort_keys=True).encode())


def save_npy(path: Path, array) -> Path:
    import numpy as np
    from proofflow.prover import faults
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            if faults.fires("kill_mid_write", Path(path).name):  # half the file, then die (proofflow/prover/faults.py)
                import io
                data = io.BytesIO()
                np.save(data, array, allow_pickle=False)
                f.write(data.getbuffer()[: len(data.getbuffer()) // 2])
                f.flush()
                os.fsync(f.fileno())
                faults.kill_self()
            np.save(f, array, allow_pickle=False)
    return Path(path)


def remove_tree(path: Path) -> bool:
    """Remove a scratch directory; True when something was removed."""
    path = Path(path)
    if not path.exists():
        return False
    shutil.rmtree(path, ignore_errors=True)
    try:
        path.parent.rmdir()  # the dag's directory, once its last run is gone
    except OSError:
        pass
    return True


def stale_temporaries(root: Path) -> list[Path]:
    """Temporary files left by killed writers (harmless; listed for tests and cleanup)."""
    return sorted(Path(root).rglob(".*.tmp"))
