"""How the MSM's precomputed multiples are chosen (proofflow/prover/device/pippenger.py's
plans) and counted in a key's device bytes: PROOFFLOW_MSM_PRECOMPUTE, ``key_bytes``
and ``resources``. Pure Python: no GPU, no compiler."""
from __future__ import annotations

import json
from types import SimpleNamespace
from pathlib import Path

import numpy as np
import pytest

from proofflow import settings
from proofflow.prover import points, resources
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.keys import Key, KeyCache, key_bytes
from proofflow.spec import MemoryKind, RunConfig
from proofflow.prover.backend.by_name import device_options
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
    assert pippenger.key_plans(CURVE, (("g1", n), ("g2", n)), 0) == (pippenger.plain(n),) * 2
    assert pippenger.plain(n) == Plan(pippenger.window_bits(n), 1)


@pytest.mark.parametrize("log_n", [10, 16, 20, 22, 24, 26, 27, 28])
@pytest.mark.parametrize("spare_gib", [0.001, 1, 4, 16, 64, 10_000])
def test_plans_fit_their_budget_and_their_entries(log_n, spare_gib):
    """The copies never pass the budget, a bucket entry's 31 bits index every row, and
    each plan is estimated no slower than the plain one."""
    n = 1 << log_n
    tables = (("g1", n), ("g1", n - 1), ("g2", n))
    plans = pippenger.key_plans(CURVE, tables, int(spare_gib * GIB))
    assert pippenger.copy_bytes(CURVE, tables, plans) <= spare_gib * GIB
    for (group, m), plan in zip(tables, plans):
        assert plan.shifts * m <= 1 << 31 and plan.c <= pippenger.C_MAX[group]
        assert pippenger.cost(plan, m, group) <= pippenger.cost(pippenger.plain(m), m, group)


def test_more_budget_is_never_slower():
    n = 1 << 24
    tables = (("g1", n), ("g2", n))
    costs = [sum(pippenger.cost(p, m, g) for (g, m), p in
                 zip(tables, pippenger.key_plans(CURVE, tables, spare * GIB))) for spare in (0, 2, 4, 8, 16, 32, 64)]
    assert costs == sorted(costs, reverse=True) and costs[-1] < costs[0]


def test_wide_digits_for_large_tables():
    """At 2^24, with room, fewer windows than the plain 16 and fewer bucket sets."""
    plan, = pippenger.key_plans(CURVE, (("g1", 1 << 24),), 64 * GIB)
    assert plan.c >= 19 and plan.windows < 16 and plan.groups < plan.windows


SWEEP = Path(__file__).parents[2] / "bench/results/msm-phases-h200.jsonl"


def _swept(group: str) -> dict:
    """The H200's plan sweep of the product's kernels (call + spans) for ``group``:
    (log2, c, copies) -> wall ms."""
    rows = [json.loads(line) for line in SWEEP.read_text().splitlines() if line.strip()]
    return {(r["log2"], r["c"], r["shifts"]): r["wall_ms"] for r in rows
            if r.get("group") == group and r.get("variant") == "call" and r.get("balanced") and "shifts" in r
            and "g1_blocks" not in r}


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_cost_model_fits_the_measured_plans(group):
    """pippenger.COST against the sweep it was fitted to: each plan within 6%, and of any
    two plans of a size more than 6% apart, the faster one estimated cheaper."""
    ms = _swept(group)
    assert len(ms) >= 6
    est = {k: pippenger.cost(Plan(c, s), 1 << log2, group) for k, (log2, c, s) in zip(ms, ms)}
    for k, wall in ms.items():
        assert abs(est[k] / wall - 1) < 0.06, (k, est[k], wall)
    for a in ms:
        for b in ms:
            if a[0] == b[0] and ms[a] * 1.06 < ms[b]:
                assert est[a] < est[b], (a, b)


def test_the_plans_are_the_faster_ones_measured():
    """With room, the plans chosen at 2^22 and 2^24 are among the sweep's fastest of their
    size (within 5% of its best) and well ahead of the plain one."""
    ms = _swept("g1")
    for log2 in (22, 24):
        n = 1 << log2
        plan, = pippenger.key_plans(CURVE, (("g1", n),), 64 * GIB)
        est = pippenger.cost(plan, n, "g1")
        best = min(wall for (lg, _, _), wall in ms.items() if lg == log2)
        assert est <= best * 1.05 and est < 0.9 * ms[(log2, 16, 1)]


def test_the_g2_table_gets_copies_first():
    """A G2 point saves more of the MSM's time per byte than a G1 point does: with room for
    one G2 copy, the G2 table takes it."""
    n = 1 << 22
    g1, g2 = pippenger.key_plans(CURVE, (("g1", n), ("g2", n)), n * 192)
    assert g1.shifts == 1 and g2.shifts == 2


@pytest.mark.parametrize("raw, expected", [(None, 0), ("auto", None), (" Auto ", None), ("0", 0),
                                           ("123456", 123456), ("16e9", 16_000_000_000)])
def test_precompute_setting(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("PROOFFLOW_MSM_PRECOMPUTE", raising=False)
    else:
        monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", raw)
    assert settings.current().msm_precompute == expected


@pytest.mark.parametrize("raw", ["lots", "-1", "1.5", "inf", "nan"])
def test_a_bad_precompute_setting_names_it(monkeypatch, raw):
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", raw)
    with pytest.raises(ValueError, match="PROOFFLOW_MSM_PRECOMPUTE"):
        settings.current().msm_precompute


def _fake_key(n: int):
    """A key's five tables of n points each (zeros: only their sizes count here)."""
    tables = {name: points.PointTable(CURVE, group, np.zeros((n, CURVE.xy_bytes(group)), np.uint8))
              for name, group in PK_TABLES.items()}
    return SimpleNamespace(curve=CURVE, circuit="mimc", log2=n.bit_length() - 1, **tables)


def test_auto_copies_take_half_the_key_budget_less_the_tables():
    """``auto`` (None): a key with its copies takes at most half the key budget, so a second
    key as large stays resident; a key past half the budget, or an unknown budget, gets
    none. A number of bytes is taken as it is, whatever the budget."""
    n = 1 << 22
    tables = (("g1", n), ("g2", n))
    own = n * (96 + 192)
    assert pippenger.copies_budget(CURVE, tables, 64 * GIB, None) == 32 * GIB - own
    assert pippenger.copies_budget(CURVE, tables, 2 * own, None) == 0
    assert pippenger.copies_budget(CURVE, tables, own, None) == 0
    assert pippenger.copies_budget(CURVE, tables, None, None) == 0
    plans = pippenger.key_plans(CURVE, tables, pippenger.copies_budget(CURVE, tables, 64 * GIB, None))
    assert own + pippenger.copy_bytes(CURVE, tables, plans) <= 32 * GIB and all(p.shifts > 1 for p in plans)
    assert pippenger.copies_budget(CURVE, tables, 64 * GIB, 12345) == 12345
    assert pippenger.copies_budget(CURVE, tables, None, 12345) == 12345
    assert pippenger.copies_budget(CURVE, tables, 64 * GIB, 0) == 0


def test_key_bytes_count_the_copies():
    pk = _fake_key(1 << 16)
    plain = key_bytes(pk)
    assert plain == (4 * 96 + 192) << 16 == key_bytes(pk, pippenger.proving_key_plans(pk, None, None))
    plans = pippenger.proving_key_plans(pk, 2 * (plain + (100 << 20)), None)  # auto: 100 MiB of copies
    assert any(p.shifts > 1 for p in plans.values())
    copies = sum(getattr(pk, name).xy.nbytes * (p.shifts - 1) for name, p in plans.items())
    assert key_bytes(pk, plans) == plain + copies and 0 < copies <= 100 << 20


def test_a_gpu_key_cache_plans_each_key_within_its_budget(monkeypatch, tmp_path):
    """KeyCache with device options, as a GPU prover service keeps keys: each key's plans
    are chosen against the cache's budget when it is loaded, uploaded with it, counted in
    its bytes and reported with the resident keys; without (a CPU prover) none."""
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", "auto")
    options = device_options(settings.current())
    pk = _fake_key(1 << 16)
    budget = 2 * (key_bytes(pk) + (100 << 20))
    uploads = []
    for copies in (True, False):
        cache = KeyCache(budget, options if copies else None)
        plans = pippenger.proving_key_plans(pk, budget, options.msm_precompute) if copies else None
        key = Key(pk, None, tmp_path, plans=plans)
        cache.make_resident(key, lambda pk, plans: uploads.append(plans))
        assert uploads[-1] is key.plans and cache.resident_bytes() == key.nbytes
        reported = cache.resident()[0]["plans"]
        if copies:
            assert key.nbytes > key_bytes(pk) and key.nbytes <= budget // 2
            assert reported == {name: [p.c, p.shifts] for name, p in key.plans.items()}
        else:
            assert key.nbytes == key_bytes(pk) and reported == {}


def test_resources_count_the_copies_on_the_gpu(monkeypatch):
    """A GPU run's device need grows by the key's copies, a CPU run's does not."""
    s = resources.Shape(1 << 20, 1 << 20, 2, CURVE)
    gpu, cpu = (RunConfig("mimc", 20, 1, b, MemoryKind.effective("pinned", b)) for b in ("gpu", "cpu"))
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


def test_resources_size_auto_copies_from_the_device(monkeypatch):
    """Under ``auto`` a GPU run's estimate counts the copies a service on a device of that
    size would plan (half its key budget less the key), and none for an unknown device."""
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", "auto")
    monkeypatch.delenv("PROOFFLOW_KEY_BUDGET", raising=False)
    s = resources.Shape(1 << 20, 1 << 20, 2, CURVE)
    tables = resources.key_table_bytes(s, "xy")  # resident as xy
    assert resources.key_copy_bytes(s) == resources.key_copy_bytes(s, None) == 0
    big = resources.key_copy_bytes(s, 140 * GIB)
    assert 0 < big <= 35 * GIB - tables + 5 * resources.NPY_HEADER
    assert resources.key_copy_bytes(s, 4 * tables) <= tables
    config = RunConfig("mimc", 20, 1, "gpu", MemoryKind.PINNED)
    machine = resources.Machine(key=UNKNOWN, shared=UNKNOWN, cache=UNKNOWN, key_on_disk=True, cs_cached=True,
                                host_available=None, staging_budget=8 * GIB, device_total=140 * GIB)
    assert resources.estimate(config, machine, s).key_tables == tables + big
