"""GPU benchmarks: Fr product rate, NTT, the H polynomial, a/b/c uploads and the G1 MSM.

    python -m bench.gpu [--out bench/results/gpu-h200.json] [--quick]

Every GPU figure is timed with CUDA events after warm-up runs (module load, NVRTC
compile and table generation stay out) and reported as the min and the median of the
repeats; ``ntt_ms`` and ``h_ms`` hold the medians, keyed by log2 of the size. Before
timing, the 2^20 NTT and H are checked against the CPU backend bit for bit. Each section
is one function returning its part of the JSON, so later ones (a G1 MSM) slot into
``SECTIONS``.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

import prover
from prover.backend.cpu import CpuBackend
from prover.backend.gpu import GpuBackend, h2d
from prover.field import fr
from prover.polynomial.domain import Radix2Domain
from prover.staging import StagingPool

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "gpu-h200.json"


def gpu_times(fn, repeats: int, warmup: int = 2) -> list[float]:
    """Milliseconds of device time for each of ``repeats`` calls of ``fn``."""
    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end))
    return out


def summary(times: list[float]) -> dict:
    return {"min": round(min(times), 3), "median": round(statistics.median(times), 3), "repeats": len(times)}


def random_device(n: int, rng) -> cp.ndarray:
    return cp.asarray(fr.random(n, rng))


def check_against_cpu(gpu: GpuBackend, rng) -> dict:
    d, cpu = Radix2Domain(20), CpuBackend()
    a, b, c = (fr.random(d.size, rng) for _ in range(3))
    ok_ntt = np.array_equal(gpu.ntt(d, a), cpu.ntt(d, a))
    ok_h = np.array_equal(gpu.compute_h(d, a, b, c), cpu.compute_h(d, a, b, c))
    if not (ok_ntt and ok_h):
        sys.exit(f"GPU result differs from the CPU at 2^20 (ntt ok: {ok_ntt}, h ok: {ok_h}): not timing a wrong kernel")
    return {"checked_2^20_against_cpu": True}


def bench_fr_mul(args, rng) -> dict:
    """Montgomery products per second, dependent squaring chains over 2^22 elements."""
    n, iters = 1 << 22, 256
    out = {}
    for variant in ("mul32", "mul64"):
        gpu, x = GpuBackend(variant), random_device(n, rng)
        t = gpu_times(lambda: gpu.square_chain_device(x, iters), args.repeats)
        out[variant] = float(f"{n * iters / (min(t) / 1e3):.3g}")
    return {"fr_mul_per_s": out}


def bench_ntt(args, rng) -> dict:
    gpu = GpuBackend(args.variant)
    res, detail = {}, {}
    for log_n in args.ntt_sizes:
        d = Radix2Domain(log_n)
        x = random_device(d.size, rng)
        s = summary(gpu_times(lambda: gpu.ntt_device(d, x), args.repeats))
        res[str(log_n)], detail[str(log_n)] = s["median"], s
    out = {"ntt_ms": res, "ntt_detail": detail}
    # the other product routine at the largest size, to show what the PTX chains buy
    other = "mul64" if args.variant == "mul32" else "mul32"
    log_n = max(args.ntt_sizes)
    d, x, g2 = Radix2Domain(log_n), random_device(1 << log_n, rng), GpuBackend(other)
    out["ntt_ms_" + other] = {str(log_n): summary(gpu_times(lambda: g2.ntt_device(d, x), args.repeats))["median"]}
    return out


def bench_h(args, rng) -> dict:
    gpu = GpuBackend(args.variant)
    res, detail = {}, {}
    for log_n in args.h_sizes:
        d = Radix2Domain(log_n)
        a, b, c = (random_device(d.size, rng) for _ in range(3))
        s = summary(gpu_times(lambda: gpu.compute_h_device(d, a, b, c), args.repeats))
        res[str(log_n)], detail[str(log_n)] = s["median"], s
        del a, b, c
        cp.get_default_memory_pool().free_all_blocks()
    return {"h_ms": res, "h_detail": detail}


def _upload_abc(hosts, devs) -> float:
    return sum(h2d(h, out=dv)[1].ms for h, dv in zip(hosts, devs))


def bench_h2d(args, rng) -> dict:
    """a, b and c of one partition, host to device: from the pinned pool vs plain numpy."""
    n = 1 << args.h2d_log
    nbytes = n * 32
    devs = [cp.empty((n, 4), dtype=cp.uint64) for _ in range(3)]
    fill = rng.integers(0, 2**63, size=(n, 4), dtype=np.uint64)  # content is irrelevant to a copy
    pool = StagingPool(3 * nbytes, pinned=True)
    bufs = [pool.acquire(nbytes, timeout=60) for _ in range(3)]
    try:
        pinned = [b.fr_vector(n) for b in bufs]
        pageable = [np.empty((n, 4), dtype=np.uint64) for _ in range(3)]
        for h in pinned + pageable:
            h[:] = fill
        out = {}
        for kind, hosts in (("pinned", pinned), ("pageable", pageable)):
            _upload_abc(hosts, devs)  # warm-up
            times = [_upload_abc(hosts, devs) for _ in range(args.repeats_h2d)]
            s = summary(times)
            out[f"h2d_{kind}_gbps"] = round(3 * nbytes / (s["median"] * 1e6), 2)
            out[f"h2d_{kind}_ms"] = s
        assert np.array_equal(devs[0].get(), fill)
    finally:
        for b in bufs:
            b.release()
    out["h2d_ratio"] = round(out["h2d_pinned_gbps"] / out["h2d_pageable_gbps"], 2)
    out["h2d_bytes"] = 3 * nbytes
    return out


def bench_msm(args, rng) -> dict:
    """G1 MSM with the table resident on the device. The table repeats 2^16 distinct
    points (making 2^24 distinct ones on the CPU would take minutes; bucket work does not
    depend on repeats). The largest size is checked against arkworks on the CPU first."""
    from prover import curve
    from prover.backend import gpu_msm
    g = curve.point_class("g1")()
    pts, acc = [], g
    for _ in range(1 << 16):  # G, 2G, 3G, ...: one addition each
        pts.append(acc)
        acc = acc + g
    base = curve.PointTable.from_points("g1", pts)
    res, detail, cpu_ms = {}, {}, {}
    for log_n in args.msm_sizes:
        n = 1 << log_n
        table = curve.PointTable("g1", np.tile(base.xy, (max(1, n >> 16), 1))[:n])
        s = random_device(n, rng)
        gpu_msm.device_points(table)  # upload once: the SRS stays resident across partitions
        if log_n == args.msm_check:
            t0 = time.perf_counter()
            ref = curve.msm(table, cp.asnumpy(s))
            cpu_ms[str(log_n)] = round((time.perf_counter() - t0) * 1e3, 1)
            if gpu_msm.msm_g1(table, s) != ref:
                sys.exit(f"GPU MSM differs from arkworks at 2^{log_n}: not timing a wrong kernel")
        times = []
        for i in range(args.repeats_msm + 1):  # wall clock: the host combines the windows
            cp.cuda.get_current_stream().synchronize()
            t0 = time.perf_counter()
            gpu_msm.msm_g1(table, s)
            if i:
                times.append((time.perf_counter() - t0) * 1e3)
        sm = summary(times)
        res[str(log_n)], detail[str(log_n)] = sm["median"], sm
        print(f"  msm 2^{log_n}: {sm}", flush=True)
        if log_n == max(args.msm_sizes):
            skewed = _msm_skewed(table, rng, args.repeats_msm)
            print(f"  msm 2^{log_n} skewed scalars: {skewed}", flush=True)
            worst = max(skewed.values())
            if worst > 2 * sm["median"]:
                sys.exit(f"skewed scalars take {worst:.1f} ms at 2^{log_n}, over twice the uniform {sm['median']:.1f} ms")
        del table, s
        cp.get_default_memory_pool().free_all_blocks()
    return {"msm_g1_ms": res, "msm_g1_detail": detail, "cpu_msm_g1_ms": cpu_ms,
            "msm_g1_skewed_ms": {str(max(args.msm_sizes)): skewed}}


def _msm_skewed(table, rng, repeats: int) -> dict:
    """Median wall ms of the MSM under skewed scalars (correctness: tests/test_gpu_backend.py):
    90% ones and twos, and all scalars equal (every window's entries in one bucket)."""
    from prover.backend import gpu_msm
    n = len(table)
    ones_twos = cp.asarray(fr.from_ints([1, 2]))[cp.asarray(rng.integers(0, 2, n))]
    mostly_small = cp.where(cp.asarray(rng.random(n) < 0.9)[:, None], ones_twos, random_device(n, rng))
    cases = {"mostly_1_or_2": mostly_small, "all_equal": cp.tile(random_device(1, rng), (n, 1))}
    out = {}
    for name, s in cases.items():
        times = []
        for i in range(repeats + 1):
            cp.cuda.get_current_stream().synchronize()
            t0 = time.perf_counter()
            gpu_msm.msm_g1(table, s)
            if i:
                times.append((time.perf_counter() - t0) * 1e3)
        out[name] = round(statistics.median(times), 3)
    return out


def bench_cpu_ntt(args, rng) -> dict:
    d, cpu = Radix2Domain(args.cpu_log), CpuBackend()
    x = fr.random(d.size, rng)
    cpu.ntt(d, x)  # twiddles cached, kernels compiled
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        cpu.ntt(d, x)
        times.append((time.perf_counter() - t0) * 1e3)
    return {"cpu_ntt_ms": {str(args.cpu_log): round(statistics.median(times), 2)}}


SECTIONS = [bench_fr_mul, bench_ntt, bench_h, bench_h2d, bench_msm, bench_cpu_ntt]


def versions() -> dict:
    rt = cp.cuda.runtime
    return {"python": platform.python_version(), "numpy": np.__version__, "cupy": cp.__version__,
            "cuda_runtime": rt.runtimeGetVersion(), "cuda_driver": rt.driverGetVersion(),
            "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())), "proofflow": prover.__version__}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--variant", default="mul32", choices=("mul32", "mul64"))
    ap.add_argument("--only", nargs="+", metavar="SECTION", choices=[f.__name__ for f in SECTIONS],
                    help="run these sections only, updating their keys in an existing --out file")
    args = ap.parse_args(argv)
    big = 20 if args.quick else 24
    args.ntt_sizes = [16, 18, 20] if args.quick else [20, 22, 24]
    args.h_sizes = [18, 20] if args.quick else [22, 24]
    args.h2d_log, args.cpu_log = big, 20
    args.msm_sizes = [16, 18] if args.quick else [20, 22, 24]
    args.msm_check = 18 if args.quick else 20
    args.repeats, args.repeats_h2d, args.repeats_msm = 10, 5, 5

    rng = np.random.default_rng(2026)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    result = json.loads(args.out.read_text()) if args.only and args.out.exists() else {}
    result.update({"device": props["name"].decode(), "versions": versions(), "variant": args.variant})
    result.update(check_against_cpu(GpuBackend(args.variant), rng))
    for section in SECTIONS:
        if args.only and section.__name__ not in args.only:
            continue
        t0 = time.perf_counter()
        part = section(args, rng)
        print(f"{section.__name__} ({time.perf_counter() - t0:.1f} s): {json.dumps(part)}", flush=True)
        result.update(part)
    cpu20, gpu20 = result.get("cpu_ntt_ms", {}).get("20"), result.get("ntt_ms", {}).get("20")
    if cpu20 and gpu20:
        result["ntt_speedup_20"] = round(cpu20 / gpu20, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result.get(k) for k in ("ntt_ms", "h_ms", "h2d_pinned_gbps", "h2d_pageable_gbps",
                                                 "cpu_ntt_ms", "fr_mul_per_s", "msm_g1_ms", "cpu_msm_g1_ms")}))
    return result


if __name__ == "__main__":
    main()
