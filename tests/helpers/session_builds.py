"""Artefacts that cost seconds to minutes to make (compiled circuits, ceremonies), made once
per test run and copied to each user.

Under pytest-xdist every worker is a session of its own, so a session-scoped fixture alone
would make them once per worker: here the first worker to ask builds under a lock in the
directory all workers of the run share (the parent of each worker's base temporary
directory), the others wait for it and copy. Without xdist the run's base temporary
directory plays that part. Each session works on its own copy, so tests that write beside
the files (a witness, a proof) never meet another worker's.
"""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable


def _shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A copy, in a new directory of this session's, of what ``build(directory)`` wrote:
    run by the first session of the test run to ask for ``name``."""
    root = _shared_root(tmp_path_factory) / "built-once"
    root.mkdir(exist_ok=True)
    out, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when a killed worker's process ends
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # a build that failed half way
            out.mkdir()
            build(out)
            done.touch()
    copy = tmp_path_factory.mktemp(name)
    shutil.copytree(out, copy, dirs_exist_ok=True)
    return copy
