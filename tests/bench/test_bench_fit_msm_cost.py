"""bench/fit_msm_cost.py: the cost model's fit recovers known parameters from plan timings
made with them, and picks the lines of one kernel configuration."""
from __future__ import annotations

import json
import math

import pytest

from bench import fit_msm_cost
from proofflow.prover.device import pippenger

PLANS = [(22, 16, 1), (24, 16, 1), (22, 16, 8), (24, 20, 13), (24, 18, 15), (24, 20, 5), (22, 19, 2)]


def _wall(log2, c, shifts, unit_ns, divergence, bucket_cost, fixed_ms):
    plan, n = pippenger.Plan(c, shifts), 1 << log2
    digits, buckets = n * plan.windows, plan.groups << (c - 1)
    units = digits * (1 + divergence / math.sqrt(digits / buckets)) + bucket_cost * buckets
    return unit_ns * 1e-6 * units + fixed_ms


@pytest.mark.parametrize("divergence", [0.0, 1.5, 5.5])
def test_the_fit_recovers_the_parameters_that_made_the_timings(tmp_path, divergence):
    lines = [{"group": "g1", "log2": l, "c": c, "shifts": k, "variant": "call", "balanced": True,
              "wall_ms": _wall(l, c, k, 0.45, divergence, 11.0, 3.3)} for l, c, k in PLANS]
    lines.append({"group": "g1", "log2": 24, "c": 16, "shifts": 1, "wall_ms": 999.0})  # old kernels: left out
    lines.append({"log2": 24, "c": 16, "ms": {"sort": 15.0}})  # a phases-only line: left out
    lines.append({"group": "g1", "log2": 24, "c": 16, "shifts": 1, "variant": "call", "balanced": True,
                  "g1_blocks": 5, "wall_ms": 999.0})  # the blocks experiment's kernels: left out
    path = tmp_path / "phases.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    got = fit_msm_cost.main([str(path), "--variant", "call", "--balanced"])["g1"]
    assert got["divergence"] == divergence
    assert got["unit_ns"] == pytest.approx(0.45, rel=1e-6) and got["bucket_cost"] == pytest.approx(11.0, rel=1e-6)
    assert got["fixed_ms"] == pytest.approx(3.3, abs=1e-6) and got["max_error"] < 1e-9
    assert len(got["plans"]) == len(PLANS)


def test_too_few_plans_is_said_not_fitted(tmp_path):
    path = tmp_path / "phases.jsonl"
    path.write_text(json.dumps({"group": "g2", "log2": 22, "c": 16, "shifts": 1, "wall_ms": 111.0}) + "\n")
    assert "at least 4 distinct plans" in fit_msm_cost.main([str(path)])["g2"]["error"]


def test_another_curves_lines_are_fitted_apart(tmp_path):
    """--curve picks a curve's lines; lines without a curve are BLS12-381's (they predate curves)."""
    lines = [{"group": "g1", "log2": l, "c": c, "shifts": k, "variant": "call", "balanced": True,
              "wall_ms": _wall(l, c, k, 0.45, 0.0, 11.0, 3.3)} for l, c, k in PLANS]
    lines += [{"curve": "bn254", "group": "g1", "log2": l, "c": c, "shifts": k, "variant": "call", "balanced": True,
               "wall_ms": _wall(l, c, k, 0.25, 0.0, 9.0, 2.0)} for l, c, k in PLANS]
    path = tmp_path / "phases.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    bls = fit_msm_cost.main([str(path), "--variant", "call", "--balanced"])["g1"]
    bn = fit_msm_cost.main([str(path), "--variant", "call", "--balanced", "--curve", "bn254"])["g1"]
    assert bls["unit_ns"] == pytest.approx(0.45, rel=1e-6) and bn["unit_ns"] == pytest.approx(0.25, rel=1e-6)
    assert bn["bucket_cost"] == pytest.approx(9.0, rel=1e-6) and len(bn["plans"]) == len(PLANS)
