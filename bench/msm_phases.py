"""Where an MSM's time goes: each kernel timed with CUDA events, for several window widths,
at one size (default G1, 2^24). A profiling aid for the MSM kernels (bench/gpu_session.sh
runs it under Nsight Compute).

    python -m bench.msm_phases [--group g1|g2] [--log2 24] [--c 12 13 14 15 16] [--piece 256] [--note TEXT]
"""
from __future__ import annotations

import argparse
import json

import cupy as cp
import numpy as np

from proofflow.prover import curve
from proofflow.prover.device import msm as gpu_msm
from proofflow.prover.field import fr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--group", choices=("g1", "g2"), default="g1")
    ap.add_argument("--log2", type=int, default=24)
    ap.add_argument("--c", type=int, nargs="+", default=[12, 13, 14, 15, 16])
    ap.add_argument("--piece", type=int, nargs="+", default=[gpu_msm.PIECE], help="most bucket entries a thread adds")
    ap.add_argument("--note", help="recorded with each line")
    ap.add_argument("--distinct-log2", type=int, default=16, help="log2 of the distinct points the table repeats")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    g = curve.point_class(args.group)()
    pts, acc = [], g
    for _ in range(1 << args.distinct_log2):
        pts.append(acc)
        acc = acc + g
    n = 1 << args.log2
    base = curve.PointTable.from_points(args.group, pts)
    table = curve.PointTable(args.group, np.tile(base.xy, (max(1, n >> args.distinct_log2), 1))[:n])
    s = cp.asarray(fr.random(n, rng))
    gpu_msm.device_points(table)
    for c in args.c:
        for piece in args.piece:
            gpu_msm.msm(table, s, c=c, piece=piece)  # warm-up
            spans = {}
            gpu_msm.msm(table, s, c=c, spans=spans, piece=piece)
            line = {"group": args.group, "log2": args.log2, "distinct_log2": args.distinct_log2, "c": c, "piece": piece,
                    "ms": {k: round(v, 2) for k, v in spans.items()}}
            if args.note:
                line["note"] = args.note
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
