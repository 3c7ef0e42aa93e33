"""Fit pippenger's MSM cost model to timed plans (no GPU).

Input: bench.msm_phases ``--plan`` lines (JSON, one a line: group, log2, c, shifts,
wall_ms), e.g. bench/results/msm-phases-h200.jsonl. For each group the model

    wall ms = unit * (digits * (1 + DIVERGENCE / sqrt(digits / buckets)) + BUCKET_COST * buckets) + fixed

is fitted by least squares in (unit, unit * BUCKET_COST, fixed) for each DIVERGENCE of a
grid, and the DIVERGENCE with the smallest worst relative error is reported, with each
plan's error. Only the lines of one kernel configuration belong together: --curve, --variant
and --balanced pick them (lines without those fields are BLS12-381's old mul32 pieces).

    python -m bench.fit_msm_cost bench/results/msm-phases-h200.jsonl --variant call --balanced
    python -m bench.fit_msm_cost bench/results/msm-phases-h100.jsonl --curve bn254 --variant wide --balanced  # G1
    python -m bench.fit_msm_cost bench/results/msm-phases-h100.jsonl --curve bn254 --variant call --balanced  # G2
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from proofflow.prover.device import pippenger

DIVERGENCE_GRID = tuple(round(0.25 * k, 2) for k in range(41))  # 0 .. 10


def load(path: Path, variant: str, balanced: bool, curve: str = "bls12_381") -> list[dict]:
    """The plan lines of one kernel configuration over ``curve``."""
    rows = []
    for text in path.read_text().splitlines():
        line = json.loads(text) if text.strip() else {}
        if "wall_ms" not in line or "shifts" not in line:
            continue  # a phases-only line (bench.msm_phases without --plan)
        if "g1_blocks" in line:
            continue  # the blocks-an-SM experiment's kernels (bench/results/archive/gpu-notes.md), not the product's
        if (line.get("curve", "bls12_381"), line.get("variant", "mul32"), line.get("balanced", False)) \
                == (curve, variant, balanced):
            rows.append(line)
    return rows


def fit(rows: list[dict], divergence: float) -> dict:
    """Least-squares unit, BUCKET_COST and fixed for one DIVERGENCE, with each row's error."""
    plans = [pippenger.Plan(r["c"], r["shifts"]) for r in rows]
    ns = [1 << r["log2"] for r in rows]
    digits = np.array([n * p.windows for p, n in zip(plans, ns)], float)
    buckets = np.array([p.groups << (p.c - 1) for p in plans], float)
    a = np.column_stack([digits * (1 + divergence / np.sqrt(digits / buckets)), buckets, np.ones(len(rows))])
    y = np.array([r["wall_ms"] for r in rows], float)
    (unit, unit_b, fixed), *_ = np.linalg.lstsq(a, y, rcond=None)
    err = a @ np.array([unit, unit_b, fixed]) / y - 1
    return {"divergence": divergence, "unit_ns": unit * 1e6, "bucket_cost": unit_b / unit, "fixed_ms": fixed,
            "max_error": float(np.max(np.abs(err))),
            "plans": [{"log2": r["log2"], "c": r["c"], "shifts": r["shifts"], "wall_ms": r["wall_ms"],
                       "error": round(float(e), 4)} for r, e in zip(rows, err)]}


def best_fit(rows: list[dict]) -> dict:
    """The grid's DIVERGENCE whose fit has the smallest worst error (and a positive unit and
    BUCKET_COST: a negative one fits noise, not the kernels)."""
    fits = [f for f in (fit(rows, d) for d in DIVERGENCE_GRID) if f["unit_ns"] > 0 and f["bucket_cost"] >= 0]
    if not fits:
        raise ValueError("no fit with a positive unit and bucket cost: too few or inconsistent plans")
    return min(fits, key=lambda f: f["max_error"])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", type=Path)
    ap.add_argument("--variant", default="mul32", help="the lines' curve variant (default mul32, the old lines)")
    ap.add_argument("--curve", default="bls12_381", help="the lines' curve (default bls12_381, the lines without one)")
    ap.add_argument("--balanced", action=argparse.BooleanOptionalAction, default=False)
    args = ap.parse_args(argv)
    rows = load(args.jsonl, args.variant, args.balanced, args.curve)
    out = {}
    for group in sorted({r.get("group", "g1") for r in rows}):
        mine = [r for r in rows if r.get("group", "g1") == group]
        if len({(r["log2"], r["c"], r["shifts"]) for r in mine}) < 4:
            out[group] = {"error": f"{len(mine)} plan line(s): at least 4 distinct plans are needed for 3 parameters"}
            continue
        out[group] = best_fit(mine)
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
