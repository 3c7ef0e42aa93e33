"""The CPU backend on one thread and on every core, and the r1cs reader at size.

    python -m bench.cpu_threads [--sizes 14 16] [--threads N] [--repeats 5]
                                [--r1cs-sizes 16 18 20] [--out bench/results/cpu-threads-cpu.json]

* Proofs: per size 2^k, bench.snarkjs's chain circuit (a circom .r1cs, its .wtns, a
  test-only zkey registered as a circuit) proved through the pipeline as a user's partition
  is (synthesis from the .wtns, the device phase, the host phase, the proof checked), on
  ``CpuBackend(1)`` and ``CpuBackend(N)`` (N: PROOFFLOW_CPU_THREADS, all cores by default)
  in turns, after a warm-up proof on each, every proof checked: min and median of the
  whole proof, of its MSM phase and of the process's CPU seconds, and the ratios of the
  medians, all in the same run. The host's load average before and after and the run's
  niceness are recorded: on a shared host other work takes cores from both sides.
* r1cs reading: a random file of 2^k - 3 constraints (``circom_files.random_r1cs``: 0-3
  terms a linear combination, about 4.5 a constraint) read by ``read_r1cs``: wall and CPU
  seconds, min and median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import _env
from proofflow import settings

HERE = Path(__file__).resolve().parent


def _stats(xs: list[float]) -> dict:
    return {"min": round(min(xs), 4), "median": round(statistics.median(xs), 4), "repeats": len(xs)}


def bench_proofs(log2: int, threads: int, repeats: int, work: Path, seed: int = 7) -> dict:
    from bench.snarkjs import write_chain_r1cs, write_chain_wtns
    from proofflow.phases import Phase
    from proofflow.prover import pipeline
    from proofflow.prover.backend.cpu import CpuBackend
    from proofflow.prover.circom import read_r1cs, registry, setup
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.keys import KeyCache
    from proofflow.prover.staging.pool import staging_pool
    from proofflow.prover.timing import PhaseTimer
    d = work / f"2p{log2}"
    d.mkdir(parents=True)
    r1cs, wtns, zkey = d / "chain.r1cs", d / "chain.wtns", d / "chain.zkey"
    constraints = write_chain_r1cs(r1cs, log2)
    write_chain_wtns(wtns, log2, x=3, c=11)
    t0 = time.perf_counter()
    setup.write_test_zkey(read_r1cs(r1cs), seed, zkey)
    name = f"chain{log2}"
    registry.add(name, r1cs, zkey, replace=True)
    print(f"2^{log2}: {constraints} constraints, test zkey {time.perf_counter() - t0:.1f} s", flush=True)
    circuit, pool = get_circuit(name, log2), staging_pool(pinned=False)
    key = KeyCache().get(registry.key_dir(name), name, log2)

    def prove(backend) -> dict:
        timer = PhaseTimer()
        t0, c0 = time.perf_counter(), time.process_time()
        with pipeline.synthesize(circuit, 0, 0, pool, timer, input=str(wtns)) as staged:
            pipeline.prove(key, staged, backend, timer)
        return {"proof_s": time.perf_counter() - t0, "msm_s": timer.totals()[Phase.MSM],
                "cpu_s": time.process_time() - c0}

    backends = {1: CpuBackend(1), threads: CpuBackend(threads)}
    for backend in backends.values():  # warm-up: the key's points decoded, the kernels loaded
        prove(backend)
    times: dict[int, dict[str, list]] = {t: {"proof_s": [], "msm_s": [], "cpu_s": []} for t in backends}
    for _ in range(repeats):
        for t, backend in backends.items():
            for kind, x in prove(backend).items():
                times[t][kind].append(x)
    out = {"constraints": constraints}
    for t, series in times.items():
        out[f"threads_{t}"] = {kind: _stats(xs) for kind, xs in series.items()}
    one, many = out["threads_1"], out[f"threads_{threads}"]
    out["speedup"] = round(one["proof_s"]["median"] / many["proof_s"]["median"], 2)
    out["msm_speedup"] = round(one["msm_s"]["median"] / many["msm_s"]["median"], 2)
    out["msm_share_1_thread"] = round(one["msm_s"]["median"] / one["proof_s"]["median"], 3)
    print(f"  1 thread {one['proof_s']['median']:.3f} s (msm {one['msm_s']['median']:.3f}); {threads} threads "
          f"{many['proof_s']['median']:.3f} s (msm {many['msm_s']['median']:.3f}): {out['speedup']}x, "
          f"msm {out['msm_speedup']}x", flush=True)
    registry.remove(name)
    return out


def bench_r1cs(log2: int, repeats: int, work: Path) -> dict:
    from circom_files import random_r1cs
    from proofflow.prover.circom import read_r1cs
    n = (1 << log2) - 3
    path = work / f"random-2p{log2}.r1cs"
    path.write_bytes(random_r1cs(n, 1 << log2, np.random.default_rng(log2)))
    wall, cpu = [], []
    for i in range(repeats + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        r = read_r1cs(path)
        if i:  # the first read compiles the walk's C kernel where it is not cached
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    terms = r.cs.a.nnz + r.cs.b.nnz + r.cs.c.nnz
    out = {"constraints": n, "terms": terms, "file_bytes": path.stat().st_size, "wall_s": _stats(wall),
           "cpu_s": _stats(cpu), "constraints_per_s": round(n / statistics.median(wall))}
    path.unlink()
    print(f"r1cs 2^{log2}: {n} constraints, {terms} terms, {path.name}: median {out['wall_s']['median']:.3f} s "
          f"({out['cpu_s']['median']:.3f} CPU-s)", flush=True)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[14, 16], help="log2 of the proofs' domains")
    ap.add_argument("--threads", type=int, default=None, help="the many-thread side (default PROOFFLOW_CPU_THREADS)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--r1cs-sizes", type=int, nargs="*", default=[16, 18, 20])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cpu-threads-cpu.json")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))
    threads = args.threads or settings.current().cpu_threads
    result = {"environment": _env.environment(), "threads": threads,
              "circuit": "chain: x_{i+1} = x_i (x_i + 1) + c, 2^k - 3 constraints", "proofs": {}, "r1cs": {}}
    # other work on the host takes cores from both sides: its load, and this run's priority
    result["load_before"], result["nice"] = os.getloadavg(), os.nice(0)
    with tempfile.TemporaryDirectory(prefix="proofflow-bench-threads-") as tmp:
        os.environ.setdefault("PROOFFLOW_HOME", str(Path(tmp) / "home"))  # the registry of this run
        settings.reload()
        for log2 in args.r1cs_sizes:
            result["r1cs"][str(log2)] = bench_r1cs(log2, args.repeats, Path(tmp))
            _env.write(args.out, result)
        for log2 in args.sizes:
            result["proofs"][str(log2)] = bench_proofs(log2, threads, args.repeats, Path(tmp))
            result["load_after"] = os.getloadavg()
            _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
