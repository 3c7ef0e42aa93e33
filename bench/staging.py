"""Staging benchmark: how fast a partition's a/b/c reach the device from where synthesis wrote
them, the shared-memory segment, page-locked in place, against the same segment unpinned
(pageable) and against a CuPy pinned buffer (the line-rate reference), in one run.

    python -m bench.staging [--log2 24 26] [--reps 5] [--out bench/results/staging-h200.json]

Per size: the partition synthesized into shared staging (``pipeline.synthesize_shared``,
the product's path, real MiMC a/b/c), the seconds ``cudaHostRegister`` takes for the segment
(once per segment: released segments are leased again in place), then ``pipeline.upload``
(the prover service's call: a/b/c and the witness, CUDA-event timed) from the pinned
mapping, from a pageable mapping of the same segment, and from a CuPy pinned copy; min and
median of --reps after one discarded round. Host copies of a/b/c between synthesis and the
upload: 0 by construction (the upload reads the segment synthesis wrote), recorded as such.
Needs a GPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import _env

RESULTS = Path(__file__).resolve().parent / "results"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _uploads(staged, backend, reps: int) -> dict:
    from proofflow.prover import pipeline
    rounds = []
    for i in range(reps + 1):
        ups = pipeline.upload(staged, backend)
        ms = sum(t.ms for _, t in ups[:3])
        kinds = {t.kind for _, t in ups}
        nbytes = sum(t.nbytes for _, t in ups[:3])
        del ups
        if i:
            rounds.append(ms)
    return {"kind": kinds.pop() if len(kinds) == 1 else sorted(kinds), "abc_bytes": nbytes,
            "min_ms": round(min(rounds), 2), "median_ms": round(statistics.median(rounds), 2),
            "gbps_best": round(nbytes / min(rounds) / 1e6, 2), "gbps_median": round(nbytes / statistics.median(rounds) / 1e6, 2)}


def measure(log2: int, reps: int, root: Path) -> dict:
    from proofflow import settings
    from proofflow.prover import device, pipeline
    from proofflow.prover.staging.mapped import MappedSegments
    from proofflow.prover.staging.staged import Staged
    from proofflow.prover.backend.by_name import device_options
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.device.backend import GpuBackend
    from proofflow.prover.staging.shared import SharedStaging
    circuit = get_circuit("mimc", log2)
    staging = SharedStaging(root / f"shm-{log2}", 8 * (3 << log2) * 32)
    t0 = time.perf_counter()
    out = pipeline.synthesize_shared(circuit, 0, 0, staging, "bench/staging/p0000")
    synth_s = time.perf_counter() - t0
    backend = GpuBackend(device_options(settings.current()))
    res = {"log2": log2, "synthesis_s": round(synth_s, 2), "segment_bytes": staging.stats()["leased"],
           "host_copy_bytes": 0}
    pinned = MappedSegments(staging, pin=True)
    reg = pinned.stage(out["segment"])
    res["register_s"] = round(reg["seconds"], 3)
    res["register_s_per_gib"] = round(reg["seconds"] / (res["segment_bytes"] / 2**30), 3)
    again = pinned.stage(out["segment"])
    res["register_again_s"] = round(again["seconds"], 4)  # mapped and pinned already: a lookup
    with pinned.get(out["segment"]) as staged:
        res["registered_segment"] = _uploads(staged, backend, reps)
    pageable = MappedSegments(staging, pin=False)
    with pageable.get(out["segment"]) as staged:
        res["pageable_segment"] = _uploads(staged, backend, reps)
    with pinned.get(out["segment"]) as staged:  # the reference: CuPy's own pinned allocation
        mem = device.pinned(sum(v.nbytes for v in staged.abc) + staged.witness.nbytes)
        flat = np.frombuffer(mem, dtype=np.uint64)
        n = staged.abc[0].shape[0]
        block = flat[:3 * n * 4].reshape(3, n, 4)
        np.copyto(block, np.stack(staged.abc))
        witness = flat[3 * n * 4:].reshape(staged.witness.shape)
        np.copyto(witness, staged.witness)
        ref = Staged((block[0], block[1], block[2]), witness)
        res["cupy_pinned"] = _uploads(ref, backend, reps)
        del ref, block, witness, flat, mem
    pinned.close()
    pageable.close()
    staging.release(out["segment"])
    r, p = res["registered_segment"], res["pageable_segment"]
    res["pinned_vs_pageable"] = round(p["median_ms"] / r["median_ms"], 2)
    res["registered_vs_cupy_pinned"] = round(res["cupy_pinned"]["median_ms"] / r["median_ms"], 3)
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.staging", description=__doc__.split("\n\n")[0])
    p.add_argument("--log2", type=int, nargs="+", default=[24, 26])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", type=Path, default=RESULTS / "staging-h200.json")
    args = p.parse_args(argv)
    from proofflow.prover import device
    if not device.available():
        _say("bench.staging needs a GPU (CuPy and a visible device)")
        return 2
    result = {"environment": _env.environment(("numpy", "cupy", "cupy-cuda12x", "cupy-cuda13x")),
              "device": device.name(), "reps": args.reps, "sizes": []}
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        for log2 in args.log2:
            _say(f"2^{log2}: synthesizing into shared staging, then uploads")
            r = measure(log2, args.reps, Path(tmp))
            result["sizes"].append(r)
            _say(f"  registered {r['registered_segment']['gbps_median']} GB/s, pageable "
                 f"{r['pageable_segment']['gbps_median']} GB/s, CuPy pinned {r['cupy_pinned']['gbps_median']} GB/s; "
                 f"register {r['register_s']} s ({r['register_s_per_gib']} s/GiB)")
            _env.write(args.out, result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
