"""``proofflow calibrate``: the reference host-to-device rate of this host and device.

The H2D check (``proofflow.timing.h2d_check``) compares each partition's measured H2D time with
``bytes / reference rate``; the reference is measured here, by the same copy the proof run
records, at the sizes a run moves (a/b/c of a 2^k partition: 3 * 2^k * 32 bytes), and
stored in table ``calibrations`` (one row per size, one batch per calibration):

* GPU (``cuda:N``): three ``proofflow.prover.device.backend.h2d`` copies (CUDA-event timed) of a, b and c
  from a pinned ``proofflow.prover.staging.StagingPool`` buffer, as ``prove_gpu`` does; the rate is
  the sum of the three copies' bytes over the sum of their times.
* CPU (``cpu``): the copy the CPU path records as its ``h2d``: three ``np.array(copy=True)``
  of a, b and c out of the staging buffer the CPU path uses (``StagingPool`` as configured
  on the CPU backend: plain (pageable) host memory, pinning needs CUDA),
  timed by the copying thread's CPU clock, as ``CpuBackend.upload`` times it.

Each size is copied ``reps`` times after one warm-up copy; the median is the reference
(``best_ms`` keeps the fastest). Small copies are dominated by fixed costs, which is why
every size is calibrated: the expected time of a transfer uses the rate measured at its
size (interpolated in log(size) between calibrated sizes, the largest size's rate beyond).

    proofflow calibrate [--device auto|cpu|cuda:N] [--min-log2 8] [--max-log2 K] [--reps 7] [--json]
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import socket
import statistics
import sys
import time
import uuid

from proofflow import settings
from proofflow.prover.staging.segment import FR_BYTES, abc_bytes

DEFAULT_MIN_LOG2 = 8
DEFAULT_MAX_LOG2_CPU = 20
DEFAULT_MAX_LOG2_GPU = 24
DEFAULT_REPS = 7
KEEP_BYTES = 1 << 30  # CPU reps keep their copies (up to this much) so each copies into fresh pages


def _fqdn() -> str:
    """What Airflow's default hostname_callable (airflow.utils.net.getfqdn) returns."""
    name = socket.gethostname()
    try:
        addrs = socket.getaddrinfo(name, None, 0, socket.SOCK_DGRAM, 0, socket.AI_CANONNAME)
    except OSError:
        return name
    for addr in addrs:
        if addr[3]:
            return addr[3]
    return name


def host_name() -> str:
    """The host name the proof-run tasks record: PROOFFLOW_WORKER_NAME where a worker names
    itself (Airflow's hostname_callable is then ``proofflow.airflow.worker.hostname``, which
    returns this), else Airflow's default, the FQDN."""
    return settings.current().worker_name or _fqdn()


def partition_bytes(log2: int) -> int:
    return abc_bytes(1 << log2)


def default_device() -> str:
    from proofflow.prover import device
    return f"cuda:{device.current()}" if device.available() else "cpu"


def _pool(nbytes: int, pinned: bool):
    from proofflow.prover.staging.pool import StagingPool
    return StagingPool(nbytes + (1 << 16), pinned=pinned)


def _fill(view) -> None:
    import numpy as np
    view[...] = np.arange(view.size, dtype=np.uint64).reshape(view.shape)


def measure_gpu(nbytes: int, reps: int, device: int = 0) -> list[float]:
    """Seconds of each rep of prove_gpu's h2d: three CUDA-event-timed copies from pinned memory."""
    import numpy as np
    from proofflow.prover import device as gpu
    from proofflow.prover.device.backend import timed_uploads
    n = nbytes // (3 * FR_BYTES)
    with gpu.using(device):
        pool = _pool(nbytes, pinned=True)
        with pool.acquire(nbytes) as buf:
            view = buf.view(np.uint64, (3, n, 4))
            _fill(view)
            return timed_uploads([view[0], view[1], view[2]], reps)



def measure_cpu(nbytes: int, reps: int) -> list[float]:
    """Seconds of each rep of the CPU path's h2d copy (three vectors out of the staging buffer)."""
    import numpy as np
    n = nbytes // (3 * FR_BYTES)
    pool = _pool(nbytes, pinned=False)
    times, kept = [], []
    with pool.acquire(nbytes) as buf:
        view = buf.view(np.uint64, (3, n, 4))
        _fill(view)
        for i in range(reps + 1):
            t0 = time.thread_time()  # the copy's own time, as the CPU path records it
            work = [np.array(v, copy=True) for v in (view[0], view[1], view[2])]
            t1 = time.thread_time()
            if (len(kept) + 1) * nbytes <= KEEP_BYTES:
                kept.append(work)  # a task copies into fresh memory: so does every rep
            del work
            if i:  # the first copy is the warm-up
                times.append(t1 - t0)
    return times


def calibrate(device: str | None = None, min_log2: int = DEFAULT_MIN_LOG2, max_log2: int | None = None,
              reps: int = DEFAULT_REPS, host: str | None = None, store=None) -> list[dict]:
    """Measure the reference H2D rate at each size 2^min_log2..2^max_log2 and store the batch
    (when ``store`` is given). Returns the rows."""
    device = device or default_device()
    gpu = device.startswith("cuda")
    if max_log2 is None:
        max_log2 = DEFAULT_MAX_LOG2_GPU if gpu else DEFAULT_MAX_LOG2_CPU
    if max_log2 < min_log2:
        raise ValueError(f"max log2 {max_log2} < min log2 {min_log2}")
    host = host or host_name()
    batch = f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for k in range(min_log2, max_log2 + 1):
        nbytes = partition_bytes(k)
        if gpu:
            times = measure_gpu(nbytes, reps, int(device.split(":")[1]) if ":" in device else 0)
        else:
            times = measure_cpu(nbytes, reps)
        med = statistics.median(times)
        rows.append(dict(host=host, device=device, memory_kind="pinned" if gpu else "pageable",
                         method="cuda-h2d-3x" if gpu else "cpu-staging-copy-3x", bytes=nbytes, reps=reps,
                         median_ms=med * 1e3, best_ms=min(times) * 1e3,
                         gbps=nbytes / med / 1e9 if med > 0 else float("inf"), batch=batch, created_at=now))
    if store is not None:
        store.record_calibration(rows)
    return rows


def reference_gbps(calibration: list[dict], nbytes: int) -> float | None:
    """The calibrated rate at ``nbytes``: measured at that size, interpolated linearly in
    log(size) between the two nearest calibrated sizes, or the nearest end's rate outside."""
    pts = sorted((int(r["bytes"]), float(r["gbps"])) for r in calibration if r.get("gbps"))
    if not pts:
        return None
    if nbytes <= pts[0][0]:
        return pts[0][1]
    if nbytes >= pts[-1][0]:
        return pts[-1][1]
    for (b0, g0), (b1, g1) in zip(pts, pts[1:]):
        if b0 <= nbytes <= b1:
            w = (math.log(nbytes) - math.log(b0)) / (math.log(b1) - math.log(b0))
            return g0 + w * (g1 - g0)
    return pts[-1][1]


def print_rows(rows: list[dict]) -> None:
    if not rows:
        print("no calibration")
        return
    r0 = rows[0]
    print(f"calibration {r0['batch']}: host {r0['host']}, device {r0['device']}, {r0['memory_kind']} memory, "
          f"method {r0['method']}, {r0['reps']} reps")
    print(f"  {'bytes':>14}{'median ms':>12}{'best ms':>12}{'GB/s':>10}")
    for r in rows:
        print(f"  {r['bytes']:>14}{r['median_ms']:>12.4f}{r['best_ms']:>12.4f}{r['gbps']:>10.2f}")


# -- the CLI subcommand (registered by proofflow.cli) ----------------------------------------
def add_parser(sub) -> None:
    c = sub.add_parser("calibrate", help="measure this host's reference H2D rate for the H2D check",
                       description="Measure the host-to-device copy rate of this host and device at the sizes a "
                                   "proof run moves, and store it in the timing store's calibrations table "
                                   "(the reference of check_h2d).")
    c.add_argument("--device", default="auto", help="auto (the GPU if one is visible, else cpu), cpu, or cuda:N")
    c.add_argument("--min-log2", type=int, default=DEFAULT_MIN_LOG2, help="smallest partition size (log2)")
    c.add_argument("--max-log2", type=int, default=None,
                   help=f"largest partition size (default {DEFAULT_MAX_LOG2_GPU} on a GPU, "
                        f"{DEFAULT_MAX_LOG2_CPU} on the CPU)")
    c.add_argument("--reps", type=int, default=DEFAULT_REPS, help="timed copies per size (median kept)")
    c.add_argument("--host", help="host name to store it under (default: the name the tasks record)")
    c.add_argument("--show", action="store_true", help="print the latest stored calibration, measure nothing")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args) -> int:
    from proofflow.spec import MAX_LOG2
    from proofflow.timing.store import open_store
    device = default_device() if args.device == "auto" else args.device
    if device != "cpu" and not re.fullmatch(r"cuda(:\d+)?", device):
        print(f"error: unknown device {device!r}: use auto, cpu or cuda:N", file=sys.stderr)
        return 2
    if not args.show and not 1 <= args.min_log2 <= (args.max_log2 or args.min_log2) <= MAX_LOG2:
        print(f"error: --min-log2 and --max-log2 must satisfy 1 <= min <= max <= {MAX_LOG2}", file=sys.stderr)
        return 2
    store = open_store()
    if args.show:
        rows = store.calibration(args.host or host_name(), device)
    else:
        if args.reps < 1 or args.min_log2 < 1:
            print("error: --reps and --min-log2 must be positive", file=sys.stderr)
            return 2
        rows = calibrate(device, args.min_log2, args.max_log2, args.reps, host=args.host, store=store)
    if args.json:
        print(json.dumps(rows, default=str))
    else:
        print_rows(rows)
    return 0 if rows else 1
