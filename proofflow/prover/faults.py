"""Fault injection for the reliability tests, in one place. Inert unless PROOFFLOW_FAULT is set.

    PROOFFLOW_FAULT = SPEC[,SPEC...]        SPEC = KIND:WHERE:MARKER

A spec fires once: the first process to reach WHERE creates the file MARKER (O_EXCL, so
exactly one process fires it across retries, concurrent tasks and the prover service, which
inherits the environment of the task that started it), then acts by KIND:

    kill            SIGKILL itself, as the kernel's OOM killer or a lost node would
    kill_mid_write  WHERE is an artifact's file name: write half of it to its temporary
                    file, fsync, then SIGKILL itself (``proofflow.prover.files.save_npy``: the
                    key's tables)
    oom             raise the GPU backend's out-of-memory exception: CuPy's
                    ``OutOfMemoryError`` where CuPy is installed, else ``DeviceOutOfMemory``
                    (both are MemoryError)

Points (WHERE for kill and oom):

    task.<task>.<phase>  a proof-run task entering a phase of its own (``Recorder.phase``),
                         e.g. task.synthesize.witness_map, task.stage.register
    task.<task>.flush    a task about to write its timing rows; task.<task>.flushed: written,
                         the task not yet returned
    client.sent          prove_gpu's job sent to the prover service, the reply not yet read
    synthesize.segment   synthesis with a/b/c written into its leased segment, not yet
                         marked ready (a killed writer's lease is reclaimed)
    service.prefetch     the prover service about to map a job's segment
    service.device       the service's device thread starting a job's device part
    dir.swap.<name>      ``files.atomic_dir`` replacing directory <name> (a key's, a registered
                         circuit's): the old one renamed aside, the new one not yet renamed in

<task> is the task id without its group (synthesize, not partition.synthesize).
"""
from __future__ import annotations

import os
import signal

from proofflow import settings

KINDS = ("kill", "kill_mid_write", "oom")


class DeviceOutOfMemory(MemoryError):
    """The stand-in of CuPy's OutOfMemoryError where CuPy is not installed."""


def _specs(specs: str) -> list[tuple[str, str, str]]:
    out = []
    for spec in specs.split(","):
        parts = spec.strip().split(":", 2)
        if len(parts) == 3 and parts[0] in KINDS:
            out.append((parts[0], parts[1], parts[2]))
    return out


def _claim(marker: str) -> bool:
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return True


def fires(kind: str, where: str) -> bool:
    """True once, for the first caller reaching a spec of this kind and place."""
    specs = settings.current().fault_specs
    if not specs:
        return False
    return any(k == kind and w == where and _claim(m) for k, w, m in _specs(specs))


def out_of_memory(nbytes: int = 1 << 34) -> MemoryError:
    """The exception a device allocation of ``nbytes`` raises when the device is full."""
    from proofflow.prover import device
    return device.out_of_memory(nbytes) or DeviceOutOfMemory(
        f"Out of memory allocating {nbytes:,} bytes (injected: PROOFFLOW_FAULT)")


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def point(where: str) -> None:
    """A named point of the code where a kill or an out-of-memory error can be injected."""
    if not settings.current().fault_specs:
        return
    if fires("kill", where):
        kill_self()
    if fires("oom", where):
        raise out_of_memory()
