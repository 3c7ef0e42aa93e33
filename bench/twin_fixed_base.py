"""The setup's fixed-base kernel with one inversion a batch against one a point, on the
CPU twin (tests/helpers/kernel_twin.py: fixed_base.cu's per-thread body compiled by the
host's g++ and run one thread at a time). The twin runs the kernel's arithmetic, not the
GPU's schedule, so the ratio says how much work the batches save, not the H200's rate
(``bench.gpu --only bench_setup`` measures that). Both ways must give the same bytes.

    python -m bench.twin_fixed_base [--points 4096] [--repeats 3] [--out FILE]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from bench import _env
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import fixed_base
from proofflow.prover.field.fr import Fr
from tests.helpers import kernel_twin as twin

fr = Fr.of(CURVE)

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "fixed-base-twin-cpu.json"
BATCHES = (1, fixed_base.BATCH)  # one inversion a point (as before), one a batch


def rate(group: str, scalars: np.ndarray, batch: int, repeats: int) -> tuple[float, np.ndarray]:
    """Points a second (the best of ``repeats``, after a warm-up) and the points."""
    ex, table, saved = twin.TwinExecutor(), fixed_base.window_table(CURVE, group), fixed_base.BATCH
    fixed_base.BATCH = batch
    try:
        fixed_base.multiples(ex, group, table, scalars[:64])
        best, out = float("inf"), None
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = fixed_base.multiples(ex, group, table, scalars)
            best = min(best, time.perf_counter() - t0)
    finally:
        fixed_base.BATCH = saved
    return len(scalars) / best, out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=4096, help="G1 points; G2 takes a quarter")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    result = {"environment": _env.environment(), "repeats": args.repeats, "groups": {}}
    for group, n in (("g1", args.points), ("g2", max(1, args.points // 4))):
        s = fr.random(n, np.random.default_rng(7))
        rates = {b: rate(group, s, b, args.repeats) for b in BATCHES}
        (one, first), (batched, second) = rates[BATCHES[0]], rates[BATCHES[1]]
        if not np.array_equal(first, second):
            sys.exit(f"{group}: the batched inversion gives other points than one inversion a point")
        row = {"points": n, "batch": BATCHES[1], "speedup": round(batched / one, 2),
               "points_per_s": {"one_a_point": round(one), "one_a_batch": round(batched)}}
        result["groups"][group] = row
        print(f"{group}: {row}", flush=True)
    _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
