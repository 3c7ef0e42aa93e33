"""How the MSM's precomputed multiples are chosen (proofflow/prover/device/pippenger.py's
plans) and counted in a key's device bytes: PROOFFLOW_MSM_PRECOMPUTE, ``pipeline.key_bytes``
and ``resources``. Pure Python: no GPU, no compiler."""
from __future__ import annotations

from types import SimpleNamespace
from pathlib import Path

import numpy as np
import pytest

from proofflow import resources, settings
from proofflow.prover import curve, pipeline
from proofflow.prover.device import pippenger
from proofflow.prover.device.pippenger import Plan
from proofflow.prover.groth16.data_structures import PK_TABLES

UNKNOWN = resources.Disk(Path("/unknown"), None)  # a place whose free space is not checked
GIB = 1 << 30


def test_plan_windows_and_groups():
    assert (Plan(16).windows, Plan(16).groups) == (16, 16)
    assert (Plan(20, 5).windows, Plan(20, 5).groups) == (13, 3)
    assert Plan(5, 7).groups == 8 and Plan(4, 64).groups == 1
    for bad in ((16, 17), (1, 1), (16, 0), (25, 1)):
        with pytest.raises(ValueError, match="no MSM plan"):
            Plan(*bad)


@pytest.mark.parametrize("log_n", [0, 8, 16, 20, 24, 27])
def test_no_budget_is_the_plain_msm(log_n):
    n = 1 << log_n
    assert pippenger.key_plans((("g1", n), ("g2", n)), 0) == (pippenger.plain(n),) * 2
    assert pippenger.plain(n) == Plan(pippenger.window_bits(n), 1)


@pytest.mark.parametrize("log_n", [10, 16, 20, 22, 24, 26, 27, 28])
@pytest.mark.parametrize("spare_gib", [0.001, 1, 4, 16, 64, 10_000])
def test_plans_fit_their_budget_and_their_entries(log_n, spare_gib):
    """The copies never pass the budget, a bucket entry's 31 bits index every row, and
    each plan is estimated no slower than the plain one."""
    n = 1 << log_n
    tables = (("g1", n), ("g1", n - 1), ("g2", n))
    plans = pippenger.key_plans(tables, int(spare_gib * GIB))
    assert pippenger.copy_bytes(tables, plans) <= spare_gib * GIB
    for (_, m), plan in zip(tables, plans):
        assert plan.shifts * m <= 1 << 31
        assert pippenger.cost(plan, m) <= pippenger.cost(pippenger.plain(m), m)


def test_more_budget_is_never_slower():
    n = 1 << 24
    tables = (("g1", n), ("g2", n))
    costs = [sum(pippenger.ADD_WEIGHT[g] * pippenger.cost(p, m) for (g, m), p in
                 zip(tables, pippenger.key_plans(tables, spare * GIB))) for spare in (0, 2, 4, 8, 16, 32, 64)]
    assert costs == sorted(costs, reverse=True) and costs[-1] < costs[0]


def test_wide_digits_for_large_tables():
    """At 2^24, with room, fewer windows than the plain 16 and fewer bucket sets."""
    plan, = pippenger.key_plans((("g1", 1 << 24),), 64 * GIB)
    assert plan.c >= 19 and plan.windows < 16 and plan.groups < plan.windows


def test_the_cost_model_ranks_the_measured_plans():
    """The H200's G1 MSM at 2^24 under several plans (bench/results/msm-phases-h200.jsonl,
    wall ms): of any two plans more than 5% apart, the model estimates the faster one
    cheaper. (20, 5) has fewer digits than the plain (16, 1) but ~139 a bucket, and is no
    faster; one bucket set of large buckets is fastest."""
    n = 1 << 24
    ms = {(20, 13): 208.7, (18, 15): 211.3, (16, 16): 214.8, (16, 4): 221.0, (22, 12): 236.7, (16, 1): 255.5,
          (20, 5): 262.2, (19, 2): 288.9, (23, 12): 286.5}
    est = {plan: pippenger.cost(Plan(*plan), n) for plan in ms}
    for a in ms:
        for b in ms:
            if ms[a] * 1.05 < ms[b]:
                assert est[a] < est[b], (a, b)


def test_the_g2_table_gets_copies_first():
    """A G2 point saves about twice a G1 point's time per byte: with room for one G2 copy,
    the G2 table takes it."""
    n = 1 << 22
    g1, g2 = pippenger.key_plans((("g1", n), ("g2", n)), n * 192)
    assert g1.shifts == 1 and g2.shifts == 2


@pytest.mark.parametrize("raw, expected", [(None, 0), ("0", 0), ("123456", 123456), ("16e9", 16_000_000_000)])
def test_precompute_setting(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("PROOFFLOW_MSM_PRECOMPUTE", raising=False)
    else:
        monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", raw)
    assert settings.msm_precompute_bytes() == expected


@pytest.mark.parametrize("raw", ["lots", "-1", "1.5", "inf", "nan"])
def test_a_bad_precompute_setting_names_it(monkeypatch, raw):
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", raw)
    with pytest.raises(ValueError, match="PROOFFLOW_MSM_PRECOMPUTE"):
        settings.msm_precompute_bytes()


def _fake_key(n: int):
    """A key's five tables of n points each (zeros: only their sizes count here)."""
    return SimpleNamespace(**{name: curve.PointTable(group, np.zeros((n, curve.XY_BYTES[group]), np.uint8))
                              for name, group in PK_TABLES.items()})


def test_key_bytes_count_the_copies(monkeypatch):
    pk = _fake_key(1 << 16)
    monkeypatch.delenv("PROOFFLOW_MSM_PRECOMPUTE", raising=False)
    plain = pipeline.key_bytes(pk)
    assert plain == (4 * 96 + 192) << 16
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", str(100 << 20))
    plans = pippenger.proving_key_plans(pk, 100 << 20)
    assert any(p.shifts > 1 for p in plans.values())
    copies = sum(getattr(pk, name).xy.nbytes * (p.shifts - 1) for name, p in plans.items())
    assert pipeline.key_bytes(pk) == plain + copies and 0 < copies <= 100 << 20


def test_resources_count_the_copies_on_the_gpu(monkeypatch):
    """A GPU run's device need grows by the key's copies, a CPU run's does not."""
    s = resources.Shape(1 << 20, 1 << 20, 2)
    gpu, cpu = ({"circuit": "mimc", "log2": 20, "partitions": 1, "backend": b} for b in ("gpu", "cpu"))
    machine = resources.Machine(key=UNKNOWN, shared=UNKNOWN, cache=UNKNOWN, key_on_disk=True, cs_cached=True,
                                host_available=None, staging_budget=8 * GIB)
    monkeypatch.delenv("PROOFFLOW_MSM_PRECOMPUTE", raising=False)
    plain_gpu, plain_cpu = resources.estimate(gpu, machine, s), resources.estimate(cpu, machine, s)
    plain_proof = resources.proof_device_bytes(s)
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", str(4 * GIB))
    copies = resources.key_copy_bytes(s)
    assert 0 < copies <= 4 * GIB
    need = resources.estimate(gpu, machine, s)
    # and a proof's MSM scratch under the plans the copies make (other digits and buckets)
    assert need.key_tables == plain_gpu.key_tables + copies
    assert need.device == plain_gpu.device + copies + resources.proof_device_bytes(s) - plain_proof
    assert resources.estimate(cpu, machine, s) == plain_cpu
