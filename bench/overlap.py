"""Does an upload that overlaps kernels run at the idle line rate? The prover service uploads
the next partition's a/b/c on a copy stream while the device computes the partition before;
check_h2d compares each upload with a calibration measured on an idle device.

    python -m bench.overlap [--log2 24] [--reps 5] [--out bench/results/overlap-h200.json]

A 2^log2 partition's a/b/c (3 x 2^log2 Fr elements) copied from page-locked memory on a
non-blocking stream, CUDA-event timed: alone, then while 2^log2 NTTs (memory-bound) run back
to back on the default stream. Min and median of --reps after one discarded copy. Needs a GPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
from pathlib import Path

import numpy as np

from bench import _env

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.overlap", description=__doc__.split("\n\n")[0])
    p.add_argument("--log2", type=int, default=24)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", type=Path, default=RESULTS / "overlap-h200.json")
    args = p.parse_args(argv)
    from proofflow.prover import device
    if not device.available():
        print("bench.overlap needs a GPU", file=sys.stderr)
        return 2
    import cupy as cp
    from proofflow import settings
    from proofflow.prover.backend.by_name import device_options
    from proofflow.prover.curves.bls12_381 import BLS12_381
    from proofflow.prover.device.backend import GpuBackend
    from proofflow.prover.polynomial.domain import Radix2Domain
    n = 1 << args.log2
    nbytes = 3 * n * 32
    host = np.frombuffer(device.pinned(nbytes), dtype=np.uint64).reshape(3 * n, 4)
    host[:] = np.random.default_rng(1).integers(0, 1 << 63, size=host.shape, dtype=np.uint64)
    dev = cp.empty(host.shape, dtype=cp.uint64)
    copy = device.copy_stream()

    def upload_ms() -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(copy)
        dev.set(host, stream=copy)
        end.record(copy)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end)

    def rounds() -> list[float]:
        return [upload_ms() for _ in range(args.reps + 1)][1:]

    backend, domain = GpuBackend(device_options(settings.current())), Radix2Domain(args.log2, BLS12_381)
    x = cp.asarray(domain.fr.random(n, np.random.default_rng(2)))
    backend.ntt_device(domain, x)  # compiled, tables made
    cp.cuda.Device().synchronize()
    idle = rounds()
    stop, ntts = threading.Event(), [0]

    def busy():
        device.use(0)
        while not stop.is_set():
            backend.ntt_device(domain, x)
            cp.cuda.get_current_stream().synchronize()
            ntts[0] += 1
    worker = threading.Thread(target=busy)
    worker.start()
    try:
        overlapped = rounds()
    finally:
        stop.set()
        worker.join()

    def stats(ms: list[float]) -> dict:
        return {"min_ms": round(min(ms), 2), "median_ms": round(statistics.median(ms), 2),
                "gbps_median": round(nbytes / statistics.median(ms) / 1e6, 2)}
    out = {"environment": _env.environment(("numpy", "cupy", "cupy-cuda13x")), "device": device.name(),
           "log2": args.log2, "bytes": nbytes, "reps": args.reps, "idle": stats(idle),
           "overlapping_ntts": {**stats(overlapped), "ntts_run": ntts[0]}}
    out["overlapped_vs_idle"] = round(statistics.median(overlapped) / statistics.median(idle), 3)
    _env.write(args.out, out)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
