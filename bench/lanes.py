"""How busy a warp's lanes are in the MSM accumulation, from the schedule alone (no GPU):
random scalars' bucket sizes under a plan, cut as pippenger cuts them, with each warp of
32 consecutive threads running as long as its longest thread. Pieces of near-equal length
a bucket (``balanced=False``) against spans of ``piece`` entries across buckets
(``balanced=True``, where only the last span is short). The H200's Nsight Compute profile
of the 2^22 G1 accumulation (c = 16, pieces) measured 21.6 of 32 threads active, 0.67;
this model gives 0.68 there.

    python -m bench.lanes [--log2 22 24] [--plan 16,1 20,13] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from proofflow.prover.device import pippenger

WARP = 32


def bucket_counts(n: int, plan: pippenger.Plan, rng) -> np.ndarray:
    """Entries a bucket slot gets from n random scalars: a group's K windows of signed c-bit
    digits, |d| = 1 .. 2^(c-1) - 1 twice as likely as 2^(c-1), zero digits dropped."""
    nb = 1 << (plan.c - 1)
    p = np.full(nb, 2.0)
    p[-1] = 1.0
    p /= p.sum()
    out = []
    for g in range(plan.groups):
        windows = min(plan.shifts, plan.windows - g * plan.shifts)
        out.append(rng.multinomial(round(n * windows * (1 - 2.0 ** -plan.c)), p))
    return np.concatenate(out).astype(np.uint32)


def lane_efficiency(work: np.ndarray) -> float:
    """Mean over max of each warp's threads' work, weighted by the warps' lengths."""
    w = np.zeros(-(-len(work) // WARP) * WARP)
    w[:len(work)] = work
    return float(work.sum() / (WARP * w.reshape(-1, WARP).max(axis=1)).sum())


def schedule(counts: np.ndarray, piece: int) -> dict:
    """Both accumulations' lane efficiency and threads for these bucket sizes."""
    seg, _, parts, npieces = pippenger._split(np, counts, piece)
    pieces = np.repeat(counts / np.maximum(parts, 1), parts)  # near-equal lengths
    offsets = (np.cumsum(counts, dtype=np.uint64) - counts).astype(np.uint32)
    _, _, met, nspans, total, slots = pippenger._spans(np, offsets, counts, piece)
    spans = np.full(nspans, float(piece))
    spans[-1] = total - piece * (nspans - 1)
    return {"pieces": {"threads": int(npieces), "lanes": round(lane_efficiency(pieces), 3)},
            "spans": {"threads": int(nspans), "lanes": round(lane_efficiency(spans), 3),
                      "slots_a_span": round(slots / nspans, 2)}}


def model(log_n: int, plan: pippenger.Plan, piece: int = pippenger.PIECE, seed: int = 1) -> dict:
    counts = bucket_counts(1 << log_n, plan, np.random.default_rng(seed))
    row = {"log2": log_n, "c": plan.c, "shifts": plan.shifts, "entries_a_bucket": round(float(counts.mean()), 1),
           **schedule(counts, piece)}
    row["predicted_speedup"] = round(row["spans"]["lanes"] / row["pieces"]["lanes"], 3)
    return row


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, nargs="+", default=[22, 24])
    ap.add_argument("--plan", nargs="+", metavar="C,K", default=["16,1", "19,14", "20,13"])
    ap.add_argument("--piece", type=int, default=pippenger.PIECE)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for log_n in args.log2:
        for spec in args.plan:
            c, k = map(int, spec.split(","))
            rows.append(model(log_n, pippenger.Plan(c, k), args.piece))
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
