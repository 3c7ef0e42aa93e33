"""Where an MSM's time goes: each kernel timed with CUDA events, for several window widths
or plans with precomputed copies, at one size (default G1, 2^24). A profiling aid for the
MSM kernels (bench/device.sh session runs it under Nsight Compute) and the data that
pippenger's cost model is fitted to (``--plan``: each plan's copies built once, timed, then
its phases and the median wall time of 3 MSMs).

    python -m bench.msm_phases [--group g1|g2] [--log2 24] [--c 12 13 14 15 16] [--piece 256] [--note TEXT]
    python -m bench.msm_phases --log2 24 --plan 16,1 16,4 20,13 22,12
    python -m bench.msm_phases --log2 22 --c 16 --variant wide --no-balanced   # another variant, in pieces
    python -m bench.msm_phases --curve bn254 --log2 24 --plan 16,1 20,7        # another curve's kernels

Each line names its curve (lines without one are BLS12-381's: they predate curves).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import cupy as cp
import numpy as np

from proofflow import settings
from proofflow.prover import points
from proofflow.prover.backend.by_name import device_options
from proofflow.prover.curves import registry as curves
from proofflow.prover.device import msm as gpu_msm, pippenger, source as kernels
from proofflow.prover.field.fr import Fr


def main() -> None:
    configured = device_options(settings.current())
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--group", choices=("g1", "g2"), default="g1")
    ap.add_argument("--curve", choices=curves.NAMES, default=curves.DEFAULT)
    ap.add_argument("--log2", type=int, default=24)
    ap.add_argument("--c", type=int, nargs="+", default=[12, 13, 14, 15, 16])
    ap.add_argument("--piece", type=int, nargs="+", default=[gpu_msm.PIECE], help="most bucket entries a thread adds")
    ap.add_argument("--plan", nargs="+", metavar="C,K", help="time these plans (c, precomputed copies) instead")
    ap.add_argument("--note", help="recorded with each line")
    ap.add_argument("--distinct-log2", type=int, default=16, help="log2 of the distinct points the table repeats")
    ap.add_argument("--variant", choices=kernels.CURVE_VARIANTS, default=configured.curve_variant,
                    help="the curve kernels' product variant (default: PROOFFLOW_CURVE_VARIANT, else the group's best)")
    ap.add_argument("--balanced", action=argparse.BooleanOptionalAction, default=configured.msm_balanced,
                    help="the accumulation in balanced spans, or in pieces (default: PROOFFLOW_MSM_BALANCED)")
    args = ap.parse_args()
    args.variant = kernels.curve_variant(args.curve, args.group, args.variant)
    options = dataclasses.replace(configured, curve_variant=args.variant, msm_balanced=args.balanced)
    curve = curves.get_curve(args.curve)
    rng = np.random.default_rng(1)
    g = curve.point_class(args.group)()
    pts, acc = [], g
    for _ in range(1 << args.distinct_log2):
        pts.append(acc)
        acc = acc + g
    n = 1 << args.log2
    base = points.PointTable.from_points(curve, args.group, pts)
    table = points.PointTable(curve, args.group, np.tile(base.xy, (max(1, n >> args.distinct_log2), 1))[:n])
    s = cp.asarray(Fr.of(curve).random(n, rng))
    gpu_msm.device_points(table, options)
    if args.plan:
        for text in args.plan:
            line = {"curve": curve.name, "group": args.group, "log2": args.log2, "distinct_log2": args.distinct_log2,
                    "variant": args.variant, "balanced": args.balanced}
            line.update(_time_plan(table, s, pippenger.Plan(*map(int, text.split(","))), options))
            if args.note:
                line["note"] = args.note
            print(json.dumps(line), flush=True)
        return
    for c in args.c:
        for piece in args.piece:
            gpu_msm.msm(table, s, options, c=c, piece=piece)  # warm-up
            spans = {}
            gpu_msm.msm(table, s, options, c=c, spans=spans, piece=piece)
            line = {"curve": curve.name, "group": args.group, "log2": args.log2, "distinct_log2": args.distinct_log2,
                    "c": c, "piece": piece,
                    "variant": args.variant, "balanced": args.balanced, "ms": {k: round(v, 2) for k, v in spans.items()}}
            if args.note:
                line["note"] = args.note
            print(json.dumps(line), flush=True)


def _time_plan(table, s, plan, options) -> dict:
    """One plan's copies built (seconds), its MSM's phases (ms) and its median wall ms."""
    sync = cp.cuda.get_current_stream().synchronize
    sync()
    t0 = time.perf_counter()
    gpu_msm.device_points(table, options, plan)
    sync()
    build = time.perf_counter() - t0
    gpu_msm.msm(table, s, options, plan=plan)  # warm-up
    spans = {}
    gpu_msm.msm(table, s, options, plan=plan, spans=spans)
    walls = []
    for _ in range(3):
        sync()
        t0 = time.perf_counter()
        gpu_msm.msm(table, s, options, plan=plan)
        walls.append((time.perf_counter() - t0) * 1e3)
    return {"c": plan.c, "shifts": plan.shifts, "groups": plan.groups, "build_s": round(build, 2),
            "wall_ms": round(statistics.median(walls), 1), "ms": {k: round(v, 1) for k, v in spans.items()}}


if __name__ == "__main__":
    main()
