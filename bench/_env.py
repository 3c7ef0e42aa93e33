"""What a benchmark ran on, recorded with its results."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import socket
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

from proofflow import settings


def environment(packages=("numpy", "py-arkworks-bls12381")) -> dict:
    versions = {"python": platform.python_version()}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # PYTHONDONTWRITEBYTECODE: modules without cached bytecode compile in every process that
    # imports them (each Airflow task), a cost a benchmark of a deployment measures too
    return {"host": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count(), "versions": versions,
            "dont_write_bytecode": bool(sys.flags.dont_write_bytecode),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def cpu_seconds() -> float:
    """This process's CPU seconds (every thread) and its waited-for children's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def repeat(fn, repeats: int, warmup: int = 1) -> dict:
    """Seconds of ``fn()`` over ``repeats`` runs after ``warmup`` discarded ones."""
    for _ in range(warmup):
        fn()
    xs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t0)
    return {"min_s": min(xs), "median_s": statistics.median(xs), "repeats": repeats}


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def curve_record(path: Path, curve: str, keep: bool = False) -> tuple[dict, dict]:
    """(the results file at ``path`` as it will be written, the record of the curve named
    ``curve`` in it), for a benchmark that records each curve in one file: the default
    curve's record is the file's top level (its keys predate curves), another curve's the
    object under its name. The record starts empty, or as the file holds it when ``keep``;
    the other curves' records are kept either way."""
    from proofflow.prover.curves import registry
    whole = json.loads(path.read_text()) if path.exists() else {}
    if curve == registry.DEFAULT:
        if not keep:
            whole = {name: whole[name] for name in registry.NAMES if name != registry.DEFAULT and name in whole}
        return whole, whole
    record = whole.get(curve, {}) if keep else {}
    whole[curve] = record
    return whole, record


@contextlib.contextmanager
def this_process_env(**values: str):
    """Settings for this process while the block runs (e.g. PROOFFLOW_RUNTIME, to reach a
    deployment's prover services with proofflow's own client)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    settings.reload()
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        settings.reload()
