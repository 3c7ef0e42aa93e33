"""A partition's synthesis: the MiMC witness chain and the a/b/c vectors, as proof_run's
synthesize step makes them, against the way it made them before, in the same run.

    python -m bench.synthesis [--sizes 20 22 24] [--threads 2] [--out bench/results/synthesis-cpu.json]

* proofflow: ``pipeline.synthesize`` into a (reused) staging buffer: the chain in the C
  kernels straight into the witness, a/b/c written row by row from the chain's structure
  (OpenMP), every row checked. Min and median of the repeats after one warm-up.
* baseline: the chain in Python integers and a/b/c by the constraint system's sparse
  products (``r1cs_to_qap.witness_map``), the constraint system built first, as every task
  process did before (one run each: it takes tens of seconds at 2^24).

OMP_NUM_THREADS bounds the C kernels' threads (--threads sets it before they load).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _python_chain(circuit, seed: int, partition: int):
    """The chain in plain Python integers, as the tasks ran it before: the witness vector."""
    from tests.helpers.mimc_reference import reference_trace
    k, x0 = circuit.key(seed), circuit.plaintext(seed, partition)
    trace = reference_trace(circuit.rounds, k, x0)
    return circuit.fr.from_ints([1, x0, trace.pop(), k] + trace)


def bench_size(log2: int, repeats: int, baseline: bool) -> dict:
    import numpy as np
    from proofflow.prover import pipeline
    from proofflow.prover.circuits.mimc import MimcChain
    from proofflow.prover.curves.bls12_381 import BLS12_381
    from proofflow.prover.groth16 import r1cs_to_qap
    from proofflow.prover.staging.pool import StagingPool
    circuit = MimcChain(log2, BLS12_381)
    n = circuit.domain_size
    pool = StagingPool(StagingPool.block_size(pipeline.segment_bytes(n, circuit.num_variables)), pinned=False)
    t0 = time.perf_counter()
    circuit.round_constants  # noqa: B018 - the cached constants, mapped (or derived once per machine)
    out = {"log2": log2, "constraints": circuit.num_constraints, "constants_s": round(time.perf_counter() - t0, 3)}
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        with pipeline.synthesize(circuit, 0, i, pool):
            pass
        if i:
            times.append(time.perf_counter() - t0)
    out["proofflow_s"] = {"min": round(min(times), 4), "median": round(statistics.median(times), 4),
                          "repeats": repeats, "warmup": 1}
    print(f"2^{log2}: proofflow {out['proofflow_s']['median']} s", flush=True)
    if baseline:
        t0 = time.perf_counter()
        cs = circuit._build()
        t1 = time.perf_counter()
        witness = _python_chain(circuit, 0, repeats)
        t2 = time.perf_counter()
        abc = r1cs_to_qap.witness_map(cs, witness)
        t3 = time.perf_counter()
        same = np.array_equal(witness, circuit.instance(0, repeats).witness) and \
            all(np.array_equal(x, y) for x, y in zip(abc, circuit.witness_map(witness)))
        out["baseline_s"] = {"constraint_system": round(t1 - t0, 3), "chain": round(t2 - t1, 3),
                             "witness_map": round(t3 - t2, 3), "total": round(t3 - t0, 3)}
        out["same_witness_and_abc"] = same
        out["speedup"] = round(out["baseline_s"]["total"] / out["proofflow_s"]["median"], 1)
        print(f"  baseline {out['baseline_s']}; speedup {out['speedup']}x; same witness and a/b/c: {same}", flush=True)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 22, 24])
    ap.add_argument("--threads", type=int, default=2, help="OpenMP threads of the C kernels (default 2)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-baseline", action="store_true", help="skip the old way (slow at 2^24)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "synthesis-cpu.json")
    args = ap.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # read when the C kernels load, below
    from bench import _env
    result = {"environment": _env.environment(), "omp_threads": args.threads, "sizes": {}}
    for log2 in args.sizes:
        result["sizes"][str(log2)] = bench_size(log2, args.repeats, not args.no_baseline)
        _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
