"""CPU backend benchmark: NTT, synthesis, MSM (arkworks) and the H computation.

    python bench/cpu.py [--quick] [--out bench/results/cpu.json]

Prints a table and writes JSON (min and median of repeats after one warm-up run).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _env import environment, repeat, write  # noqa: E402

from proofflow.prover import points  # noqa: E402
from proofflow.prover.backend.cpu import CpuBackend  # noqa: E402
from proofflow.prover.circuits.by_name import get_circuit  # noqa: E402
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE  # noqa: E402
from proofflow.prover.field.fr import Fr  # noqa: E402
from proofflow.prover.groth16 import r1cs_to_qap  # noqa: E402
from proofflow.prover.polynomial.domain import Radix2Domain  # noqa: E402

fr = Fr.of(CURVE)


def distinct_points(group: str, n: int) -> points.PointTable:
    """G, 2G, 3G, ... by one addition each: n distinct points without n scalar multiplications."""
    g = CURVE.point_class(group)()
    pts, acc = [], g
    for _ in range(n):
        pts.append(acc)
        acc = acc + g
    return points.PointTable.from_points(CURVE, group, pts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cpu.json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ntt_sizes = [12, 14] if args.quick else [16, 18, 20, 22]
    msm_sizes = [10, 12] if args.quick else [14, 16, 18]
    h_sizes = [12] if args.quick else [16, 18, 20]
    syn_sizes = [12] if args.quick else [16, 20]
    res = {"environment": environment(), "ntt_ms": {}, "h_ms": {}, "msm_g1_ms": {}, "msm_g2_ms": {},
           "synthesis": {}, "detail": {}}

    def record(kind: str, log2: int, stats: dict):
        res[kind][str(log2)] = round(stats["median_s"] * 1e3, 3)
        res["detail"][f"{kind}/{log2}"] = stats
        print(f"{kind:<12} 2^{log2:<3} min {stats['min_s'] * 1e3:10.1f} ms   median {stats['median_s'] * 1e3:10.1f} ms",
              flush=True)

    for k in ntt_sizes:
        d = Radix2Domain(k, CURVE)
        x = fr.random(d.size, rng)
        d.twiddles()
        record("ntt_ms", k, repeat(lambda: d.ntt(x), args.repeats))

    backend = CpuBackend()
    for k in h_sizes:
        circuit = get_circuit("mimc", k)
        abc = r1cs_to_qap.witness_map(circuit.constraint_system, circuit.instance(0, 0).witness)
        d = r1cs_to_qap.domain_for(circuit.constraint_system)
        record("h_ms", k, repeat(lambda: backend.compute_h(d, *abc), args.repeats))

    for k in syn_sizes:
        circuit = get_circuit("mimc", k)
        cs = circuit.constraint_system
        stats = repeat(lambda: r1cs_to_qap.witness_map(cs, circuit.instance(0, 1).witness), args.repeats)
        stats["constraints_per_s"] = cs.num_constraints / stats["median_s"]
        res["synthesis"][str(k)] = {"median_s": stats["median_s"], "constraints_per_s": round(stats["constraints_per_s"])}
        res["detail"][f"synthesis/{k}"] = stats
        print(f"{'synthesis':<12} 2^{k:<3} {stats['median_s']:.3f} s  = {stats['constraints_per_s']:,.0f} constraints/s", flush=True)

    for k in msm_sizes:
        scalars = fr.random(1 << k, rng)
        for group, kind in (("g1", "msm_g1_ms"), ("g2", "msm_g2_ms")):
            table = distinct_points(group, 1 << k)
            record(kind, k, repeat(lambda: points.msm(table, scalars), args.repeats if k < 18 else 1))

    write(args.out, res)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
