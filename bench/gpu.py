"""GPU benchmarks: Fr and Fq product rates, NTT, the H polynomial, a/b/c uploads, the G1 and
G2 MSMs (plain, over precomputed multiples of the table, in each product variant, and G1
with batch-affine rounds before its accumulation), the setup's fixed-base multiplications,
a bit-heavy circuit (``bits``) against a dense one: its witness MSM and a whole partition's
device phase, and that device phase with a proof's MSMs one after another, at once on
streams, or with B_G2 on the host (``bench_prove_overlap``).

    python -m bench.gpu [--out bench/results/gpu-h200.json] [--quick] [--only SECTION ...]
                        [--curve bls12_381|bn254] [--msm-logs LOG2 ...]

Every GPU figure is timed with CUDA events after warm-up runs (module load, NVRTC
compile and table generation stay out) and reported as the min and the median of the
repeats; ``ntt_ms`` and ``h_ms`` hold the medians, keyed by log2 of the size. Before
timing, the 2^20 NTT and H are checked against the CPU backend bit for bit, and each MSM
and fixed-base result against the curve's point library at a size the CPU reaches. Sizes
past the CPU's reach (2^26, 2^27) are checked by cheaper independent identities instead (NTT round trip,
linearity and monomials; H of monomials; MSMs over the table k * G, whose sum is
(sum s_k * k) * G), and skipped with a message where the device's memory would not hold
them. Each section is one function returning its part of the JSON (``SECTIONS``).

``--curve`` runs every section over that registered curve's kernels and points (default
BLS12-381). Its results are recorded under the curve's name in --out: BLS12-381's at the
file's top level (its keys predate curves), another curve's in an object under its name
(``"bn254": {...}``), the same keys inside; a run keeps the other curves' records.
"""
from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import cupy as cp
import numpy as np

import proofflow
from bench import _env
from proofflow import settings
from proofflow.prover import points
from proofflow.prover.backend.by_name import device_options
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.device import cache, source as kernels
from proofflow.prover.device.backend import GpuBackend, h2d
from proofflow.prover.field.fr import Fr
from proofflow.prover.polynomial.domain import Radix2Domain
from proofflow.prover.staging.pool import StagingPool

# The curve the sections run over, and its Fr: --curve's (``use_curve``), BLS12-381 unless told
CURVE = registry.get_curve(registry.DEFAULT)
fr = Fr.of(CURVE)

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "gpu-h200.json"


def use_curve(curve: Curve) -> None:
    """Run the sections over ``curve``."""
    global CURVE, fr
    CURVE, fr = curve, Fr.of(curve)


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
    """min, median and max (the run-to-run spread) of the repeats."""
    return {"min": round(min(times), 3), "median": round(statistics.median(times), 3), "max": round(max(times), 3),
            "repeats": len(times)}


def random_device(n: int, rng) -> cp.ndarray:
    return cp.asarray(fr.random(n, rng))


def free_memory() -> None:
    """Give cached device blocks and per-size tables back between sizes."""
    from proofflow.prover.device import backend as gpu_mod
    gpu_mod._tables.cache_clear()
    cp.get_default_memory_pool().free_all_blocks()


def host_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 1 << 62


def too_big(log_n: int, device_bytes: int, host_bytes: int = 0) -> str | None:
    """Why a size cannot run here (its estimated device and host bytes against what is
    free), or None when it fits."""
    free_memory()
    free, _ = cp.cuda.runtime.memGetInfo()
    if device_bytes > free:
        return f"2^{log_n} needs ~{device_bytes / 2**30:.1f} GiB of device memory, {free / 2**30:.1f} GiB free"
    if host_bytes > host_available():
        return f"2^{log_n} needs ~{host_bytes / 2**30:.1f} GiB of host memory, {host_available() / 2**30:.1f} GiB available"
    return None


def each_size(sizes, estimate, run) -> tuple[dict, dict]:
    """run(log_n) for each size that fits (estimate(log_n) = (device, host) bytes); a size
    that does not, or that runs out of memory all the same, is skipped with a message."""
    done, skipped = {}, {}
    for log_n in sizes:
        reason = too_big(log_n, *estimate(log_n))
        if reason is None:
            try:
                done[str(log_n)] = run(log_n)
            except cp.cuda.memory.OutOfMemoryError as exc:
                reason = f"2^{log_n}: out of device memory ({exc})"
        if reason:
            skipped[str(log_n)] = reason
            print(f"  skipped: {reason}", flush=True)
        free_memory()
    return done, skipped


def fr_sum(gpu: GpuBackend, x: cp.ndarray) -> int:
    """sum x_i in Fr, by halving additions on the device."""
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            x = cp.concatenate([x, cp.zeros((1, 4), dtype=cp.uint64)])
        half = x.shape[0] // 2
        x = gpu.add_device(CURVE, x[:half], x[half:])
    return fr.to_ints(cp.asnumpy(x))[0]


def check_ntt_large(gpu: GpuBackend, d: Radix2Domain, rng) -> None:
    """NTT checks that need no CPU transform: the inverse undoes it, it is linear, and the
    transform of the monomial X^k is (w^(jk))_j (from the independent powers kernel)."""
    from proofflow.prover.device.backend import powers
    a, b = random_device(d.size, rng), random_device(d.size, rng)
    fa = gpu.ntt_device(d, a)
    ok = bool(cp.array_equal(gpu.ntt_device(d, fa, inverse=True), a))
    ok &= bool(cp.array_equal(gpu.ntt_device(d, gpu.add_device(CURVE, a, b)),
                              gpu.add_device(CURVE, fa, gpu.ntt_device(d, b))))
    del fa, b
    for k in (1, int(rng.integers(2, d.size))):
        delta = cp.zeros((d.size, 4), dtype=cp.uint64)
        delta[k] = cp.asarray(fr.from_ints([1]))[0]
        monomial = powers(CURVE, pow(d.omega, k, fr.MODULUS), d.size, gpu.options.kernel_dir)
        ok &= bool(cp.array_equal(gpu.ntt_device(d, delta), monomial))
    if not ok:
        sys.exit(f"GPU NTT fails its round-trip/linearity/monomial checks at 2^{d.log_n}: not timing a wrong kernel")


def check_h_large(gpu: GpuBackend, d: Radix2Domain, rng) -> None:
    """H of monomials: with A = X^k, B = X^m (k + m >= n) and C = X^(k+m-n) on the domain,
    A*B - C = X^(k+m-n) * Z exactly, so H is the single coefficient X^(k+m-n)."""
    from proofflow.prover.device.backend import powers
    n, p = d.size, fr.MODULUS
    k, m = int(rng.integers(n // 2, n)), int(rng.integers(n // 2, n))
    a, b, c = (powers(CURVE, pow(d.omega, e, p), n, gpu.options.kernel_dir) for e in (k, m, k + m - n))
    want = cp.zeros((n, 4), dtype=cp.uint64)
    want[k + m - n] = cp.asarray(fr.from_ints([1]))[0]
    if not cp.array_equal(gpu.compute_h_device(d, a, b, c), want):
        sys.exit(f"GPU H of monomials is wrong at 2^{d.log_n}: not timing a wrong kernel")


def check_against_cpu(gpu: GpuBackend, rng) -> dict:
    d, cpu = Radix2Domain(20, CURVE), CpuBackend()
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
    for variant in kernels.PRODUCT_VARIANTS:
        gpu, x = GpuBackend(args.options, variant), random_device(n, rng)
        t = gpu_times(lambda: gpu.square_chain_device(CURVE, x, iters), args.repeats)
        out[variant] = float(f"{n * iters / (min(t) / 1e3):.3g}")
    return {"fr_mul_per_s": out}


def _fq_ints(rows) -> list[int]:
    return [int.from_bytes(r.tobytes(), "little") for r in cp.asnumpy(rows).reshape(-1, CURVE.fq.limbs)]


def _fq_random(n: int, rng) -> cp.ndarray:
    """n random elements of Fq as rows of its u64 limbs: the top limb below q's, so all are < q."""
    w = CURVE.fq.limbs
    x = rng.integers(0, 2**64, size=(n, w), dtype=np.uint64)
    x[:, w - 1] %= np.uint64(CURVE.fq.modulus >> (64 * (w - 1)))
    return cp.asarray(x)


def bench_fq_mul(args, rng) -> dict:
    """Fq Montgomery products and squares per second in each product variant (12 words an
    element on BLS12-381, 8 on BN254): field.cu's dependent chains (x * y^k, x^(2^k)) over
    2^22 elements, as the Fr rate, each variant's chains first checked against Python integers."""
    Q = CURVE.fq.modulus
    n, iters, r_inv = 1 << 22, 256, pow(CURVE.fq.montgomery_r, -1, Q)
    x0, y = _fq_random(n, rng), _fq_random(n, rng)
    grid, nn = (max(1, min(-(-n // 128), 132 * 64)),), np.uint64(n)
    out = {}
    for variant in kernels.PRODUCT_VARIANTS:
        mod = cache.load(CURVE, variant, "field.cu", kernel_dir=args.options.kernel_dir)
        mul, sqr = mod.get_function("fq_mul_chain"), mod.get_function("fq_sqr_chain")
        x = x0.copy()
        mul(grid, (128,), (x, y, nn, np.int32(3)))
        sqr(grid, (128,), (x, nn, np.int32(2)))
        want = [v * pow(w * r_inv, 3, Q) % Q for v, w in zip(_fq_ints(x0[:64]), _fq_ints(y[:64]))]
        for _ in range(2):
            want = [v * v * r_inv % Q for v in want]
        if _fq_ints(x[:64]) != want:
            sys.exit(f"the {variant} Fq products differ from Python's: not timing a wrong kernel")
        rates = {}
        for name, run in (("mul", lambda: mul(grid, (128,), (x, y, nn, np.int32(iters)))),
                          ("sqr", lambda: sqr(grid, (128,), (x, nn, np.int32(iters))))):
            rates[name] = float(f"{n * iters / (min(gpu_times(run, args.repeats)) / 1e3):.3g}")
        out[variant] = rates
        print(f"  fq {variant}: {rates} products/s", flush=True)
    return {"fq_mul_per_s": out}


def bench_ntt(args, rng) -> dict:
    gpu = GpuBackend(args.options, args.variant)

    def run(log_n):
        d = Radix2Domain(log_n, CURVE)
        if log_n > args.cpu_checked_log:
            check_ntt_large(gpu, d, rng)
        x = random_device(d.size, rng)
        return summary(gpu_times(lambda: gpu.ntt_device(d, x), args.repeats))

    # input, output, the validation's vectors and the per-size tables (4n): ~12n elements
    detail, skipped = each_size(args.ntt_sizes, lambda k: (12 * 32 << k, 0), run)
    out = {"ntt_ms": {k: v["median"] for k, v in detail.items()}, "ntt_detail": detail}
    if skipped:
        out["ntt_skipped"] = skipped
    # the other product routine at 2^24, to show what the PTX chains buy
    other = "mul64" if args.variant == "mul32" else "mul32"
    log_n = min(max(args.ntt_sizes), 24)
    d, x, g2 = Radix2Domain(log_n, CURVE), random_device(1 << log_n, rng), GpuBackend(args.options, other)
    out["ntt_ms_" + other] = {str(log_n): summary(gpu_times(lambda: g2.ntt_device(d, x), args.repeats))["median"]}
    return out


def bench_h(args, rng) -> dict:
    gpu = GpuBackend(args.options, args.variant)

    def run(log_n):
        d = Radix2Domain(log_n, CURVE)
        if log_n > args.cpu_checked_log:
            check_h_large(gpu, d, rng)
        a, b, c = (random_device(d.size, rng) for _ in range(3))
        return summary(gpu_times(lambda: gpu.compute_h_device(d, a, b, c), args.repeats))

    # a, b, c, three coset evaluations, a scratch vector and the tables: ~11n elements
    detail, skipped = each_size(args.h_sizes, lambda k: (11 * 32 << k, 0), run)
    out = {"h_ms": {k: v["median"] for k, v in detail.items()}, "h_detail": detail}
    if skipped:
        out["h_skipped"] = skipped
    return out


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


def multiples_table(group: str, distinct: int = 1 << 16) -> points.PointTable:
    """k * G for k = 1 .. distinct: one addition each (making 2^24 distinct points on the
    CPU would take minutes; bucket work does not depend on repeats)."""
    g = CURVE.point_class(group)()
    pts, acc = [], g
    for _ in range(distinct):
        pts.append(acc)
        acc = acc + g
    return points.PointTable.from_points(CURVE, group, pts)


def tiled(base: points.PointTable, n: int) -> points.PointTable:
    return points.PointTable(CURVE, base.group, np.tile(base.xy, (max(1, n // len(base)), 1))[:n])


def expected_msm(gpu: GpuBackend, group: str, s: cp.ndarray, distinct: int):
    """sum s_i * table[i] for the tiled table of ``multiples_table``: (sum s_i * k_i) * G
    with k_i = i mod distinct + 1, computed with the Fr kernels alone."""
    n = s.shape[0]
    k = cp.asarray(fr.from_ints(range(1, min(n, distinct) + 1)))
    total = fr_sum(gpu, gpu.mul_device(CURVE, s, cp.tile(k, (n // len(k), 1))))
    return CURVE.point_class(group)() * CURVE.scalar(total)


def _wall_ms(fn, repeats: int) -> list[float]:
    """Wall-clock ms of ``fn`` (the host combines an MSM's windows) after one warm-up."""
    times = []
    for i in range(repeats + 1):
        cp.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        fn()
        if i:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def _bench_msm_group(args, rng, group: str, sizes, check_log: int) -> tuple[dict, dict, dict]:
    """One group's MSM at each size, the table resident on the device. Checked against the
    CPU (the curve's point library) at ``check_log`` and against the scalar-sum identity at
    every size."""
    from proofflow.prover.device import msm as gpu_msm
    gpu = GpuBackend(args.options)
    base = multiples_table(group)
    cpu_ms = {}
    width = CURVE.xy_bytes(group)

    def run(log_n):
        n = 1 << log_n
        table = tiled(base, n)
        s = random_device(n, rng)
        gpu_msm.device_points(table, args.options)  # upload once: the SRS stays resident across partitions
        if log_n == check_log:
            t0 = time.perf_counter()
            ref = points.msm(table, cp.asnumpy(s))
            cpu_ms[str(log_n)] = round((time.perf_counter() - t0) * 1e3, 1)
            if gpu_msm.msm(table, s, args.options) != ref:
                sys.exit(f"GPU {group} MSM differs from the CPU's at 2^{log_n}: not timing a wrong kernel")
        if gpu_msm.msm(table, s, args.options) != expected_msm(gpu, group, s, len(base)):
            sys.exit(f"GPU {group} MSM differs from (sum s_k * k) * G at 2^{log_n}: not timing a wrong kernel")
        sm = summary(_wall_ms(lambda: gpu_msm.msm(table, s, args.options), args.repeats_msm))
        print(f"  msm {group} 2^{log_n}: {sm}", flush=True)
        return sm

    def estimate(log_n):
        # table, scalars, 16 digit entries a scalar, piece sums, the check's two vectors
        n = 1 << log_n
        return n * (width + 32 + 64 + 2 * width + 64) + (1 << 28), n * width

    detail, skipped = each_size(sizes, estimate, run)
    return detail, skipped, cpu_ms


def bench_msm(args, rng) -> dict:
    """G1 MSM (table of 2^16 distinct points repeated), with skewed scalars at the largest
    size that ran."""
    detail, skipped, cpu_ms = _bench_msm_group(args, rng, "g1", args.msm_sizes, args.msm_check)
    out = {"msm_g1_ms": {k: v["median"] for k, v in detail.items()}, "msm_g1_detail": detail, "cpu_msm_g1_ms": cpu_ms}
    if skipped:
        out["msm_g1_skipped"] = skipped
    skew_log = max((int(k) for k in detail if int(k) <= 24), default=None)
    if skew_log is not None:
        from proofflow.prover.device import msm as gpu_msm
        n = 1 << skew_log
        table = tiled(multiples_table("g1"), n)
        gpu_msm.device_points(table, args.options)
        skewed = _msm_skewed(table, rng, args.repeats_msm, args.options)
        print(f"  msm 2^{skew_log} skewed scalars: {skewed}", flush=True)
        worst, uniform = max(skewed.values()), detail[str(skew_log)]["median"]
        if worst > 2 * uniform:
            sys.exit(f"skewed scalars take {worst:.1f} ms at 2^{skew_log}, over twice the uniform {uniform:.1f} ms")
        out["msm_g1_skewed_ms"] = {str(skew_log): skewed}
        del table
        free_memory()
    return out


def _msm_skewed(table, rng, repeats: int, options) -> dict:
    """Median wall ms of the MSM under skewed scalars (correctness: tests/device/test_gpu_backend.py):
    90% ones and twos, and all scalars equal (every window's entries in one bucket)."""
    from proofflow.prover.device import msm as gpu_msm
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
            gpu_msm.msm_g1(table, s, options)
            if i:
                times.append((time.perf_counter() - t0) * 1e3)
        out[name] = round(statistics.median(times), 3)
    return out


def _key_plan(group: str, n: int, args):
    """The plan ``key_plans`` gives one table of n points with ``args.precompute_bytes`` of room."""
    from proofflow.prover.device import pippenger
    return pippenger.key_plans(CURVE, ((group, n),), args.precompute_bytes)[0]


def _plan_row(plan) -> dict:
    return {"c": plan.c, "shifts": plan.shifts, "windows": plan.windows, "groups": plan.groups}


def _bench_msm_precomputed_group(args, rng, group: str) -> tuple[dict, dict]:
    """One group's MSM over the precomputed copies of ``key_plans``' plan for a table of
    each size with ``args.precompute_bytes`` of room: the one-time precompute from the
    resident plain points (device time), then the MSM and the plain one on the same
    scalars (wall time, as the plain rows), after checking both against (sum s_k * k) * G."""
    from proofflow.prover.device import msm as gpu_msm, pippenger
    gpu = GpuBackend(args.options)
    base = multiples_table(group)
    width = CURVE.xy_bytes(group)

    def run(log_n):
        n = 1 << log_n
        table = tiled(base, n)
        plan = _key_plan(group, n, args)
        s = random_device(n, rng)
        pts = gpu_msm.device_points(table, args.options)
        build = gpu_times(lambda: pippenger.precompute(gpu_msm.executor(CURVE, group, args.options), group, pts, plan),
                          args.repeats_precompute, warmup=0)
        gpu_msm.device_points(table, args.options, plan)
        want = expected_msm(gpu, group, s, len(base))
        for p in (plan, pippenger.plain(n)):
            if gpu_msm.msm(table, s, args.options, plan=p) != want:
                sys.exit(f"GPU {group} MSM under {p} differs from (sum s_k * k) * G at 2^{log_n}: not timing it")
        row = {"plan": _plan_row(plan),
               "copies_gib": round((plan.shifts - 1) * n * width / 2**30, 2),
               "precompute_s": {k: round(v / 1e3, 3) if k != "repeats" else v for k, v in summary(build).items()},
               "msm_ms": summary(_wall_ms(lambda: gpu_msm.msm(table, s, args.options, plan=plan), args.repeats_msm)),
               "plain_ms": summary(_wall_ms(lambda: gpu_msm.msm(table, s, args.options, plan=pippenger.plain(n)),
                                           args.repeats_msm))}
        row["speedup"] = round(row["plain_ms"]["median"] / row["msm_ms"]["median"], 3)
        print(f"  msm {group} 2^{log_n} precomputed: {row}", flush=True)
        return row

    def estimate(log_n):
        # as the plain rows', plus the copies twice (resident, and one being timed) and the
        # precompute's XYZZ scratch
        n, most = 1 << log_n, _key_plan(group, 1 << log_n, args).shifts
        return n * (width * (2 * most + 1) + 32 + 64 + 2 * width + 64) + (1 << 28) + 2 * width * pippenger.SHIFT_CHUNK, \
            n * width

    return each_size(args.msm_precomputed_sizes, estimate, run)


def bench_msm_variants(args, rng) -> dict:
    """The G1 (and G2) MSM with msm.cu compiled in each curve variant (mul32, wide, call), each with the
    accumulation in pieces a bucket and in balanced spans (``+spans``), the plain plan on
    the same resident table and scalars: median wall ms of the repeats, and one run's device
    ms of each step (the accumulation is where the products are). Each result checked
    against (sum s_k * k) * G first; speedups against mul32 in pieces."""
    from proofflow.prover.device import msm as gpu_msm, pippenger
    gpu, out = GpuBackend(args.options), {}
    for group, sizes in (("g1", args.msm_variant_sizes), ("g2", args.msm_variant_g2_sizes)):
        base, width = multiples_table(group), CURVE.xy_bytes(group)
        executors = {v: gpu_msm.CupyExecutor(CURVE, "msm.cu", group, args.options, v) for v in kernels.CURVE_VARIANTS}

        def run(log_n):
            n = 1 << log_n
            table = tiled(base, n)
            pts, s = gpu_msm.device_points(table, args.options), random_device(n, rng)
            want, row = expected_msm(gpu, group, s, len(base)), {}
            for (variant, ex), balanced in itertools.product(executors.items(), (False, True)):
                name = variant + ("+spans" if balanced else "")

                def msm(spans=None, ex=ex, balanced=balanced):
                    return pippenger.msm(ex, group, pts, s, mark=gpu_msm._Spans(spans).mark, balanced=balanced)
                if msm() != want:
                    sys.exit(f"the {name} {group} MSM differs from (sum s_k * k) * G at 2^{log_n}: not timing it")
                spans = {}
                msm(spans)
                row[name] = {"ms": summary(_wall_ms(msm, args.repeats_msm)),
                             "steps_ms": {k: round(v, 2) for k, v in spans.items()}}
            base_ms = row["mul32"]["ms"]["median"]
            row["speedup"] = {k: round(base_ms / v["ms"]["median"], 3) for k, v in row.items() if k != "mul32"}
            print(f"  msm {group} 2^{log_n} by variant: {row}", flush=True)
            return row

        def estimate(log_n):  # as _bench_msm_group's
            n = 1 << log_n
            return n * (width + 32 + 64 + 2 * width + 64) + (1 << 28), n * width

        detail, skipped = each_size(sizes, estimate, run)
        out[f"msm_{group}_variants"] = detail
        if skipped:
            out[f"msm_{group}_variants_skipped"] = skipped
    return out


def bench_msm_density(args, rng) -> dict:
    """A table with every third row at infinity (as a MiMC key's B tables: ``device.density``),
    its MSM over the rows the device keeps against the same table kept whole (its infinity
    rows sorted into buckets and skipped by the adding lanes), on the same scalars, each
    checked against (sum s_k * k) * G over the finite rows first: median wall ms and the
    speedup. G1 at --msm-variant sizes, G2 at the G2 variant sizes."""
    from proofflow.prover.device import density, msm as gpu_msm
    gpu, out = GpuBackend(args.options), {}
    for group, sizes in (("g1", args.msm_variant_sizes), ("g2", args.msm_variant_g2_sizes)):
        base, width = multiples_table(group), CURVE.xy_bytes(group)

        def run(log_n):
            n = 1 << log_n
            xy = tiled(base, n).xy.copy()
            xy[2::3] = 0
            kept, whole = points.PointTable(CURVE, group, xy), points.PointTable(CURVE, group, xy)
            gpu_msm.device_points(kept, args.options)
            rule, density.kept_rows = density.kept_rows, lambda xp, points: None
            try:
                gpu_msm.device_points(whole, args.options)
            finally:
                density.kept_rows = rule
            s = random_device(n, rng)
            finite = s.copy()
            finite[2::3] = 0
            want, row = expected_msm(gpu, group, finite, len(base)), {}
            for name, table in (("whole", whole), ("kept", kept)):
                if gpu_msm.msm(table, s, args.options) != want:
                    sys.exit(f"the {group} MSM over the {name} table differs from (sum s_k * k) * G at 2^{log_n}")
                row[name] = {"rows": int(gpu_msm.device_points(table, args.options).shape[0]),
                             "ms": summary(_wall_ms(lambda t=table: gpu_msm.msm(t, s, args.options),
                                                    args.repeats_msm))}
            row["speedup"] = round(row["whole"]["ms"]["median"] / row["kept"]["ms"]["median"], 3)
            print(f"  msm {group} 2^{log_n} over kept rows: {row}", flush=True)
            return row

        def estimate(log_n):  # two tables resident, and one MSM's scalars and scratch
            n = 1 << log_n
            return n * (2 * width + 2 * 32 + 64 + 2 * width + 64) + (1 << 28), n * width

        detail, skipped = each_size(sizes, estimate, run)
        out[f"msm_{group}_density"] = detail
        if skipped:
            out[f"msm_{group}_density_skipped"] = skipped
    return out


def bench_msm_precomputed(args, rng) -> dict:
    """G1 and G2 MSMs over precomputed multiples of the table (pippenger's plans), beside
    the plain MSM, with the one-time precompute."""
    out = {}
    for group in ("g1", "g2"):
        detail, skipped = _bench_msm_precomputed_group(args, rng, group)
        out[f"msm_{group}_precomputed_ms"] = {k: v["msm_ms"]["median"] for k, v in detail.items()}
        out[f"msm_{group}_precomputed_detail"] = detail
        if skipped:
            out[f"msm_{group}_precomputed_skipped"] = skipped
    out["msm_precompute_budget_bytes"] = args.precompute_bytes
    return out


def _median_spans(fn, repeats: int) -> dict:
    """Each step's median device ms over ``repeats`` calls of fn(spans), and the rounds'
    sum as ``affine`` (pippenger's marks: ``affine 0``, ``affine 1``, ...)."""
    runs = []
    for _ in range(repeats):
        spans = {}
        fn(spans)
        spans["affine"] = sum(v for k, v in spans.items() if k.startswith("affine "))
        runs.append(spans)
    return {k: round(statistics.median(r.get(k, 0.0) for r in runs), 3) for k in runs[0]}


def bench_msm_affine(args, rng) -> dict:
    """The G1 and G2 MSMs with batch-affine rounds before the accumulation (``affine_rounds``
    of ``args.affine_rounds``; 0: the XYZZ accumulation alone, also in balanced spans:
    ``rounds_0+spans``) under the plan ``key_plans`` gives a table of each size with
    ``args.precompute_bytes`` of room, its copies resident: for each round count the median
    wall ms and each step's median device ms, after checking the result against
    (sum s_k * k) * G. An affine addition takes ~5 products and a square against the XYZZ
    one's 8 and 2, which weighs most in G2's Fq2."""
    out = {}
    for group, sizes in (("g1", args.msm_affine_sizes), ("g2", args.msm_affine_g2_sizes)):
        detail, skipped = _bench_msm_affine_group(args, rng, group, sizes)
        out[f"msm_{group}_affine_ms"] = {k: {r: v[r]["wall_ms"]["median"] for r in v if r.startswith("rounds_")}
                                         for k, v in detail.items()}
        out[f"msm_{group}_affine_detail"] = detail
        if skipped:
            out[f"msm_{group}_affine_skipped"] = skipped
    return out


def _bench_msm_affine_group(args, rng, group: str, sizes):
    from proofflow.prover.device import msm as gpu_msm
    gpu = GpuBackend(args.options)
    base = multiples_table(group)
    width = CURVE.xy_bytes(group)

    def run(log_n):
        n = 1 << log_n
        table = tiled(base, n)
        plan = _key_plan(group, n, args)
        s = random_device(n, rng)
        gpu_msm.device_points(table, args.options, plan)
        want = expected_msm(gpu, group, s, len(base))
        row = {"plan": _plan_row(plan)}
        runs = [(f"rounds_{r}", r, False) for r in args.affine_rounds] + [("rounds_0+spans", 0, True)]
        for label, rounds, balanced in runs:
            def msm(spans=None, rounds=rounds, balanced=balanced):
                return gpu_msm.msm(table, s, args.options, plan=plan, spans=spans, affine_rounds=rounds,
                                   balanced=balanced)
            if msm() != want:
                sys.exit(f"{group} MSM {label} differs from (sum s_k * k) * G at 2^{log_n}: not timing it")
            row[label] = {"wall_ms": summary(_wall_ms(msm, args.repeats_msm)),
                          "steps_ms": _median_spans(msm, args.repeats_msm)}
        plain_ms = row["rounds_0"]["wall_ms"]["median"]
        row["speedup"] = {k: round(plain_ms / v["wall_ms"]["median"], 3) for k, v in row.items() if k.startswith("rounds_")}
        print(f"  msm {group} 2^{log_n} affine rounds: {row}", flush=True)
        return row

    def estimate(log_n):
        # the copies, scalars, entries and piece sums as the precomputed rows', and the
        # rounds' scratch (pippenger: ~80 bytes a bucket entry for G1, ~150 for G2)
        n = 1 << log_n
        plan = _key_plan(group, n, args)
        rounds = {"g1": 80, "g2": 150}[group] * plan.windows
        return n * (width * plan.shifts + 32 + 64 + 2 * width + 64 + rounds) + (1 << 28), n * width

    return each_size(sizes, estimate, run)


def bench_msm_g2(args, rng) -> dict:
    """G2 MSM on the GPU, the same method and checks as G1."""
    detail, skipped, cpu_ms = _bench_msm_group(args, rng, "g2", args.msm_g2_sizes, args.msm_g2_check)
    out = {"msm_g2_ms": {k: v["median"] for k, v in detail.items()}, "msm_g2_detail": detail, "cpu_msm_g2_ms": cpu_ms}
    if skipped:
        out["msm_g2_skipped"] = skipped
    return out


def _bits_witness(log_n: int) -> np.ndarray:
    """A ``bits`` partition's witness, ~99% 0 or 1, zero-padded to 2^log_n (a few hundred
    zeros at most) so that it fits the tiled tables and their scalar-sum check."""
    from proofflow.prover.circuits.by_name import get_circuit
    w = get_circuit("bits", log_n, CURVE.name).instance(0, 0).witness
    return np.concatenate([w, fr.zeros((1 << log_n) - len(w))])


def bench_msm_bits(args, rng) -> dict:
    """A bit-heavy witness MSM against a dense one of the same size, on the same resident
    table: a ``bits`` partition's witness split by value (``GpuBackend.msm_witness``, as the
    prover runs A, B and L), the same witness through Pippenger alone, and uniform scalars
    (a dense circuit's witness). Each result checked against (sum s_k * k) * G."""
    from proofflow.prover.device import msm as gpu_msm
    gpu = GpuBackend(args.options)
    out = {}
    for group, sizes in (("g1", args.msm_bits_sizes), ("g2", args.msm_bits_g2_sizes)):
        base = multiples_table(group)
        width = CURVE.xy_bytes(group)

        def run(log_n):
            table = tiled(base, 1 << log_n)
            gpu_msm.device_points(table, args.options)
            w = _bits_witness(log_n)
            pippenger_msm = partial(gpu_msm.msm, options=args.options)
            cases = {"bits_split": (gpu.msm_witness, cp.asarray(w)), "bits_pippenger": (pippenger_msm, cp.asarray(w)),
                     "uniform": (pippenger_msm, random_device(1 << log_n, rng))}
            row = {"bit_share": round(float(np.mean(np.all(w == 0, axis=1) | np.all(w == fr.one(), axis=1))), 4)}
            for name, (fn, s) in cases.items():
                if fn(table, s) != expected_msm(gpu, group, s, len(base)):
                    sys.exit(f"{name} {group} MSM differs from (sum s_k * k) * G at 2^{log_n}: not timing a wrong kernel")
                row[f"{name}_ms"] = summary(_wall_ms(lambda: fn(table, s), args.repeats_msm))["median"]
            row["bits_split_parts_ms"] = _split_parts(table, cp.asarray(w), args.repeats_msm, args.options)
            row["speedup_vs_uniform"] = round(row["uniform_ms"] / row["bits_split_ms"], 1)
            row["speedup_vs_pippenger"] = round(row["bits_pippenger_ms"] / row["bits_split_ms"], 1)
            print(f"  msm {group} 2^{log_n} bits vs dense: {row}", flush=True)
            return row

        def estimate(log_n):
            # the table, three scalar vectors, Pippenger's scratch and the split's copies
            n = 1 << log_n
            return n * (width + 3 * 32 + 64 + 2 * width + 64) + (1 << 28), n * (width + 3 * 32)

        detail, skipped = each_size(sizes, estimate, run)
        out[f"msm_{group}_bits_vs_dense"] = detail
        if skipped:
            out[f"msm_{group}_bits_vs_dense_skipped"] = skipped
    return out


ONES_ROUNDS = (2, 4, 8, 32)  # batch-affine rounds before the ones' tree sum (sparse.ONES_AFFINE_ROUNDS)


def _split_parts(table: points.PointTable, s: cp.ndarray, repeats: int, options) -> dict:
    """Where the split's time goes (median wall ms): classifying the scalars and gathering
    the indices, summing the ones' points (by the tree alone, and after ``ONES_ROUNDS``
    batch-affine rounds, each checked against the tree's sum), Pippenger over the
    compacted rest."""
    from proofflow.prover.device import msm as gpu_msm, pippenger, sparse
    from proofflow.prover.device.backend import _bitsum_executor
    group, pts = table.group, gpu_msm.device_points(table, options)
    ex = _bitsum_executor(cp.cuda.runtime.getDevice(), CURVE, group, options)

    def indices():
        cls = sparse.classify(ex, s)
        out = cp.flatnonzero(cls == sparse.ONE).astype(cp.uint32), cp.flatnonzero(cls == sparse.OTHER)
        cp.cuda.get_current_stream().synchronize()
        return out
    ones, other = indices()
    msm_ex = gpu_msm.executor(CURVE, group, options)
    parts = {"classify": indices, "ones_sum": lambda: sparse.point_sum(ex, group, pts, ones),
             "rest_pippenger": lambda: pippenger.msm(msm_ex, group, pts[other], s[other],
                                                     balanced=options.msm_balanced)}
    want = parts["ones_sum"]()
    for r in ONES_ROUNDS:  # the ones paired up by batch-affine rounds before the tree sum
        parts[f"ones_sum_rounds_{r}"] = fn = partial(sparse.point_sum, ex, group, pts, ones, msm_ex, r)
        if fn() != want:
            sys.exit(f"the {group} ones' sum after {r} batch-affine rounds differs from the tree sum alone")
    return {name: summary(_wall_ms(fn, repeats))["median"] for name, fn in parts.items()}


def _partition(gpu: GpuBackend, name: str, log_n: int):
    """A partition of circuit ``name`` at 2^log_n ready for ``prover.prove_qap``: its key set
    up on the GPU and resident (with the copies a prover service would plan for it within the
    device's key budget, PROOFFLOW_MSM_PRECOMPUTE), its instance, a/b/c,
    domain and number of instance variables."""
    from proofflow.prover import device
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.device import pippenger
    from proofflow.prover.groth16 import generator
    circuit = get_circuit(name, log_n, CURVE.name)
    pk = generator.setup(circuit, 1, backend=gpu)
    budget = settings.current().key_budget.of(device.memory_bytes())
    gpu.prepare(pk, pippenger.proving_key_plans(pk, budget, gpu.options.msm_precompute))
    inst = circuit.instance(0, 0)
    domain = Radix2Domain.for_size(circuit.domain_size, CURVE)
    return pk, inst, circuit.witness_map(inst.witness), domain, circuit.num_public + 1


def bench_prove_bits(args, rng) -> dict:
    """A whole partition's device phase (H's NTTs and the five MSMs, the vectors uploaded
    beforehand as the prover service does) for a ``bits`` partition against a ``mimc`` one of
    the same size, keys set up and resident on the GPU; the first proof of each verified."""
    from proofflow.prover.groth16 import prover, verifier
    from proofflow.prover.timing import PhaseTimer
    gpu, log_n, out = GpuBackend(args.options), args.prove_bits_log, {}
    for name in ("mimc", "bits"):
        pk, inst, abc, domain, k = _partition(gpu, name, log_n)
        uploaded = prover.upload(gpu, abc, inst.witness)
        phases = []
        for i in range(args.repeats_msm + 1):
            timer = PhaseTimer()
            proof = prover.prove_qap(pk, domain, k, inst.witness, abc, gpu, timer=timer,
                                     uploaded=uploaded).finish(timer)
            if i == 0 and not verifier.verify(pk.vk, inst.public_inputs, proof):
                sys.exit(f"a {name} proof from the GPU does not verify at 2^{log_n}: not timing a wrong prover")
            if i:
                phases.append(timer.totals())
        out[name] = {k: round(statistics.median(p[k] for p in phases) * 1e3, 2) for k in ("ntt", "msm")}
        out[name]["device_ms"] = round(out[name]["ntt"] + out[name]["msm"], 2)
        print(f"  {name} 2^{log_n} device phase: {out[name]}", flush=True)
        del pk, uploaded
        free_memory()
    out["speedup"] = round(out["mimc"]["device_ms"] / out["bits"]["device_ms"], 1)
    return {"prove_bits_vs_mimc_ms": {str(log_n): out}}


# The ways bench_prove_overlap runs a proof's MSMs (GpuBackend's options)
OVERLAP_WAYS = {"sequential": {}, "overlapped": {"overlap": True}, "g2_host": {"g2_on_gpu": False},
                "g2_host_overlapped": {"g2_on_gpu": False, "overlap": True}}


def _overlap_proof(pk, part, backend: GpuBackend, uploaded) -> tuple[bytes, dict]:
    """One proof of an uploaded partition through ``prove_qap`` and ``finish`` (r and s from a
    fixed seed, so every way's proof has the same bytes): the bytes and its times in ms."""
    from proofflow.prover.groth16 import prover
    from proofflow.prover.timing import PhaseTimer
    inst, abc, domain, k = part
    timer = PhaseTimer()
    cp.cuda.Device().synchronize()
    t0, cpu0 = time.perf_counter(), time.process_time()
    proof = prover.prove_qap(pk, domain, k, inst.witness, abc, backend, np.random.default_rng(0), timer,
                             uploaded=uploaded).finish(timer)
    wall, cpu = (time.perf_counter() - t0) * 1e3, (time.process_time() - cpu0) * 1e3
    ms = {phase: s * 1e3 for phase, s in timer.totals().items()}
    device = ms["ntt"] + ms["msm"]
    return proof.to_bytes(), {"ntt": ms["ntt"], "msm": ms["msm"], "device_ms": device,
                              "g2_wait": ms.get("msm_g2_wait", 0.0), "proof_ms": wall,
                              "stream_bound_ms": max(device, wall - ms["assemble"]), "host_cpu_ms": cpu}


def bench_prove_overlap(args, rng) -> dict:
    """A whole partition's device phase (H's NTTs and the five MSMs; the vectors uploaded
    beforehand, as the prover service does) for each circuit of ``--overlap-circuits`` at
    each size of ``--overlap-logs``, the ways of ``--overlap-ways`` (OVERLAP_WAYS): the MSMs
    one after another (``sequential``), at once on streams of their own (``overlapped``:
    GpuBackend(overlap=True)), B_G2 on the host through arkworks beside the device's work
    (``g2_host``), and that with the G1 MSMs at once (``g2_host_overlapped``). The key is
    set up on the GPU and resident (with ``_partition``'s copies). The ways'
    proofs must have the same bytes (the first also verifies); the ways alternate within a
    repeat, after one warm-up proof each. Medians (ms) of: ntt, msm, device_ms (ntt + msm:
    how long a proof holds the device), g2_wait (the host's G2 MSM still running after it),
    proof_ms (one proof's latency, assembly included), stream_bound_ms (max of device_ms and
    the time to the G2 result: in a stream of proofs a host G2 MSM overlaps the next proof's
    device phase, so this bounds the rate), host_cpu_ms (the process's CPU time in the proof,
    every thread: arkworks' on the host, and any thread spinning while it waits for the
    device). One key per circuit and size, ``prove_overlap_<circuit>_2p<log>``, so sizes and
    circuits may run in separate invocations."""
    from proofflow.prover import device, resources
    from proofflow.prover.device import msm as gpu_msm
    from proofflow.prover.groth16 import prover, verifier
    from proofflow.prover.groth16.data_structures import PK_TABLES, Proof
    ways = {name: GpuBackend(args.options, **{"overlap": False, **OVERLAP_WAYS[name]}) for name in args.overlap_ways}
    for backend in ways.values():
        backend.warm_up()
    out = {}
    for circuit in args.overlap_circuits:
        def run(log_n):
            pk, inst, abc, domain, k = _partition(ways[args.overlap_ways[0]], circuit, log_n)
            part, uploaded = (inst, abc, domain, k), prover.upload(ways[args.overlap_ways[0]], abc, inst.witness)
            want = None
            rows = {name: [] for name in ways}
            for i in range(args.repeats_overlap + 1):
                for name, backend in ways.items():
                    got, row = _overlap_proof(pk, part, backend, uploaded)
                    want = want or got
                    if got != want:
                        sys.exit(f"{circuit} 2^{log_n}: the {name} proof differs from the {args.overlap_ways[0]} one")
                    if i:
                        rows[name].append(row)
                if i == 0 and not verifier.verify(pk.vk, inst.public_inputs, Proof.from_bytes(pk.curve, want)):
                    sys.exit(f"a {circuit} proof from the GPU does not verify at 2^{log_n}: not timing a wrong prover")
            result = {name: {key: round(statistics.median(r[key] for r in rs), 2) for key in rs[0]}
                      for name, rs in rows.items()}
            first = result[args.overlap_ways[0]]
            for name, r in result.items():
                r["device_speedup"] = round(first["device_ms"] / r["device_ms"], 3)
                r["stream_speedup"] = round(first["stream_bound_ms"] / r["stream_bound_ms"], 3)
            result["plans"] = {t: [gpu_msm.resident_plan(getattr(pk, t)).c, gpu_msm.resident_plan(getattr(pk, t)).shifts]
                               for t in PK_TABLES}
            precompute = args.options.msm_precompute
            result["msm_precompute"] = "auto" if precompute is None else precompute
            result["repeats"] = args.repeats_overlap
            print(f"  {circuit} 2^{log_n} device phase by way: {result}", flush=True)
            return result

        def estimate(log_n):
            # the key's tables and copies, the NTT tables, a proof's vectors, and its five MSMs'
            # scratch at once (more than H's coset evaluations)
            shape = resources.Shape(1 << log_n, 1 << log_n, 2, CURVE)
            per_point = 576 + resources.DEVICE_NTT_TABLES + resources.DEVICE_VECTORS
            total = device.memory_bytes()
            device_bytes = (per_point << log_n) + sum(resources.msm_scratch_bytes(shape, total)) \
                + resources.key_copy_bytes(shape, total)
            return device_bytes, (384 + 576 + 4 * 32 + 240) << log_n

        done, skipped = each_size(args.overlap_logs, estimate, run)
        for log_n, row in done.items():
            out[f"prove_overlap_{circuit}_2p{log_n}"] = row
        for log_n, reason in skipped.items():
            out[f"prove_overlap_{circuit}_2p{log_n}"] = {"skipped": reason}
    return out


def bench_setup(args, rng) -> dict:
    """The setup's fixed-base multiplications on the GPU (points/s, each group checked
    byte for byte against arkworks first), the CPU path's rate on a sample, and whole
    setups: GPU and CPU at a size the CPU reaches (keys compared byte for byte), then GPU
    alone at the large sizes."""
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator
    gpu = GpuBackend(args.options)
    rates, cpu_rates = {}, {}
    for group in ("g1", "g2"):
        sample = fr.random(args.fb_cpu_points, rng)
        t0 = time.perf_counter()
        want = generator.fixed_base(CURVE, group, sample).xy
        cpu_rates[group] = round(len(sample) / (time.perf_counter() - t0))
        if not np.array_equal(gpu.fixed_base(CURVE, group, sample).xy, want):
            sys.exit(f"GPU fixed-base {group} differs from the CPU's: not timing a wrong kernel")
        s = fr.random(1 << args.fb_log, rng)
        times = []
        for i in range(4):
            t0 = time.perf_counter()
            gpu.fixed_base(CURVE, group, s)
            if i:
                times.append(time.perf_counter() - t0)
        rates[group] = round(len(s) / statistics.median(times))
        print(f"  fixed-base {group}: {rates[group]:.3g} points/s on the GPU, {cpu_rates[group]:.3g} on the CPU", flush=True)

    def timed_setup(log2, backend):
        t0 = time.perf_counter()
        pk = generator.setup(get_circuit("mimc", log2, CURVE.name), 1, backend=backend)
        return pk, round(time.perf_counter() - t0, 2)

    setup_s, cpu_setup_s = {}, {}
    log2 = args.setup_cpu_log
    pk_cpu, cpu_setup_s[str(log2)] = timed_setup(log2, None)
    pk_gpu, setup_s[str(log2)] = timed_setup(log2, gpu)
    same = all(np.array_equal(getattr(pk_cpu, t).xy, getattr(pk_gpu, t).xy)
               for t in ("a_query", "b_g1_query", "b_g2_query", "h_query", "l_query"))
    if not (same and pk_cpu.vk.to_json() == pk_gpu.vk.to_json()):
        sys.exit(f"the GPU setup's key differs from the CPU's at 2^{log2}")
    del pk_cpu, pk_gpu
    for log2 in args.setup_sizes:
        _, setup_s[str(log2)] = timed_setup(log2, gpu)
        print(f"  setup 2^{log2} on the GPU: {setup_s[str(log2)]} s", flush=True)
        free_memory()
    return {"fixed_base_points_per_s": rates, "cpu_fixed_base_points_per_s": cpu_rates,
            "setup_s": setup_s, "cpu_setup_s": cpu_setup_s}


def bench_cpu_ntt(args, rng) -> dict:
    d, cpu = Radix2Domain(args.cpu_log, CURVE), CpuBackend()
    x = fr.random(d.size, rng)
    cpu.ntt(d, x)  # twiddles cached, kernels compiled
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        cpu.ntt(d, x)
        times.append((time.perf_counter() - t0) * 1e3)
    return {"cpu_ntt_ms": {str(args.cpu_log): round(statistics.median(times), 2)}}


SECTIONS = [bench_fr_mul, bench_ntt, bench_h, bench_h2d, bench_msm_g2, bench_setup, bench_msm, bench_msm_precomputed,
            bench_msm_affine, bench_cpu_ntt, bench_msm_bits, bench_prove_bits, bench_prove_overlap, bench_fq_mul,
            bench_msm_variants, bench_msm_density]


# The issue's bounds on a curve's MSMs at 2^24 on the H200, median ms (#37: BN254's), held against
# the plain MSM and against the one a proof runs, over its key's precomputed copies
MSM_TARGET_LOG2 = 24
MSM_TARGETS_MS = {"bn254": {"msm_g1_ms": 60.0, "msm_g2_ms": 200.0,
                            "msm_g1_precomputed_ms": 60.0, "msm_g2_precomputed_ms": 200.0}}


def msm_targets(result: dict, bounds: dict) -> dict:
    """Each bound of ``bounds`` (a result key: ms) against the median it bounds at
    2^MSM_TARGET_LOG2 (met: None where that size did not run)."""
    out = {}
    for key, bound in bounds.items():
        median = result.get(key, {}).get(str(MSM_TARGET_LOG2))
        out[key] = {"log2": MSM_TARGET_LOG2, "target_ms": bound, "median_ms": median,
                    "met": None if median is None else median <= bound}
    return out


def versions() -> dict:
    rt = cp.cuda.runtime
    return {"python": platform.python_version(), "numpy": np.__version__, "cupy": cp.__version__,
            "cuda_runtime": rt.runtimeGetVersion(), "cuda_driver": rt.driverGetVersion(),
            "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())), "proofflow": proofflow.__version__}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--variant", default="mul32", choices=kernels.VARIANTS)
    ap.add_argument("--curve", default=registry.DEFAULT, choices=registry.NAMES,
                    help="the curve whose kernels run, its results recorded under its name (default %(default)s)")
    ap.add_argument("--msm-logs", nargs="+", type=int, metavar="LOG2",
                    help="the plain G1 and G2 MSMs' sizes (default G1 20 22 24 26 27, G2 20 22 24; "
                    "--quick: 16 18, 14 16)")
    ap.add_argument("--only", nargs="+", metavar="SECTION", choices=[f.__name__ for f in SECTIONS],
                    help="run these sections only, updating their keys in an existing --out file")
    ap.add_argument("--overlap-logs", nargs="+", type=int, metavar="LOG2",
                    help="bench_prove_overlap's sizes (default 22 24; --quick: 12)")
    ap.add_argument("--overlap-circuits", nargs="+", default=["mimc", "bits"], choices=["mimc", "bits"])
    ap.add_argument("--overlap-ways", nargs="+", default=["sequential", "overlapped", "g2_host"],
                    choices=list(OVERLAP_WAYS), help="the first is the others' reference")
    args = ap.parse_args(argv)
    use_curve(registry.get_curve(args.curve))
    big = 20 if args.quick else 24
    args.ntt_sizes = [16, 18, 20, 21] if args.quick else [20, 22, 24, 26, 27]
    args.h_sizes = [18, 20, 21] if args.quick else [22, 24, 26, 27]
    args.cpu_checked_log = 20  # larger NTT/H sizes get the independent checks
    args.h2d_log, args.cpu_log = big, 20
    args.msm_sizes = [16, 18] if args.quick else [20, 22, 24, 26, 27]
    args.msm_check = 16 if args.quick else 20
    args.msm_g2_sizes = [14, 16] if args.quick else [20, 22, 24]
    if args.msm_logs:
        args.msm_sizes = args.msm_g2_sizes = sorted(set(args.msm_logs))
    args.msm_g2_check = 14 if args.quick else 16
    args.msm_precomputed_sizes = [16, 18] if args.quick else [22, 24]
    args.precompute_bytes = 64 << 30  # room for one table's copies: the plans stop short of it at 2^24
    args.msm_affine_sizes = [16, 18] if args.quick else [22, 24]
    args.msm_affine_g2_sizes = [14] if args.quick else [22]
    args.affine_rounds = [0, 3, 6, 32]  # 0 first: the plain accumulation the others are measured against
    args.fb_log, args.fb_cpu_points = (16, 4096) if args.quick else (20, 16384)
    args.setup_cpu_log = 12 if args.quick else 16
    args.setup_sizes = [16] if args.quick else [20, 22]
    args.msm_variant_sizes = [16, 18] if args.quick else [22, 24]
    args.msm_variant_g2_sizes = [14] if args.quick else [22]
    args.msm_bits_sizes = [16, 18] if args.quick else [22, 24]
    args.msm_bits_g2_sizes = [14] if args.quick else [22]
    args.prove_bits_log = 12 if args.quick else 22
    args.overlap_logs = args.overlap_logs or ([12] if args.quick else [22, 24])
    args.repeats, args.repeats_h2d, args.repeats_msm, args.repeats_precompute = 10, 5, 5, 3
    args.repeats_overlap = 2 if args.quick else 5
    args.options = device_options(settings.current())  # the kernels' and MSMs' options, as a prover's

    rng = np.random.default_rng(2026)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    whole, result = _env.curve_record(args.out, CURVE.name, keep=bool(args.only))  # --only merges
    result.update({"device": props["name"].decode(), "versions": versions(), "curve": CURVE.name,
                   "variant": args.variant,
                   "curve_variant": {g: kernels.curve_variant(CURVE.name, g, args.options.curve_variant)
                                     for g in kernels.GROUPS},
                   "msm_balanced": args.options.msm_balanced})
    result.update(check_against_cpu(GpuBackend(args.options, args.variant), rng))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = result.setdefault("sections_done", [])
    for section in SECTIONS:
        if args.only and section.__name__ not in args.only:
            continue
        t0 = time.perf_counter()
        part = section(args, rng)
        print(f"{section.__name__} ({time.perf_counter() - t0:.1f} s): {json.dumps(part)}", flush=True)
        result.update(part)
        done.append(section.__name__)
        args.out.write_text(json.dumps(whole, indent=2) + "\n")  # after each: a cut-short run keeps its part
    cpu20, gpu20 = result.get("cpu_ntt_ms", {}).get("20"), result.get("ntt_ms", {}).get("20")
    if cpu20 and gpu20:
        result["ntt_speedup_20"] = round(cpu20 / gpu20, 1)
    if CURVE.name in MSM_TARGETS_MS:
        result["msm_targets"] = msm_targets(result, MSM_TARGETS_MS[CURVE.name])
    args.out.write_text(json.dumps(whole, indent=2) + "\n")
    print(json.dumps({k: result.get(k) for k in ("curve", "ntt_ms", "h_ms", "h2d_pinned_gbps", "h2d_pageable_gbps",
                                                 "cpu_ntt_ms", "fr_mul_per_s", "fq_mul_per_s", "msm_g1_ms",
                                                 "cpu_msm_g1_ms",
                                                 "msm_g2_ms", "cpu_msm_g2_ms", "msm_g1_precomputed_ms",
                                                 "msm_g2_precomputed_ms", "fixed_base_points_per_s",
                                                 "setup_s", "cpu_setup_s", "msm_targets")}))
    return result


if __name__ == "__main__":
    main()
