"""The reporting views (migrations 0003-0006) return hand-computed figures on a fixture of timing
rows, on Postgres and on SQLite."""
import datetime as dt
import uuid

import pytest
from sqlalchemy import inspect

from proofflow.timing import TimingStore
from proofflow.timing.views import REPORTING_VIEWS, steady_state_query

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
NB = 3 * 1024 * 32  # a/b/c bytes of a 2^10 partition


def _t(s):
    return T0 + dt.timedelta(seconds=s)


def _rows(dag, run, task, mi, spans, try_number=1):
    """spans: phase -> (start_s, duration_s)."""
    return [dict(dag_id=dag, run_id=run, task_id=task, map_index=mi, try_number=try_number,
                 partition=None if mi < 0 else mi, phase=ph, host="h", device="cpu",
                 start=_t(a), end=_t(a + d), duration_s=d) for ph, (a, d) in spans.items()]


def _prove(dag, run, p, wait, task, phases):
    spans = {"pool_wait": wait, "task": task}
    at = task[0]
    for ph, d in phases.items():
        spans[ph] = (at, d)
        at += d
    return _rows(dag, run, "partition.prove_gpu", p, spans)


@pytest.fixture
def fixture_store(store_url):
    """Run r1 (3 partitions, wall 10 s recorded, partition 2 flagged) and r2 (2 partitions,
    no wall_s: the view takes the rows' span), of a dag id of their own."""
    store = TimingStore(store_url)
    dag = f"views-{uuid.uuid4().hex[:8]}"
    rows = _rows(dag, "r1", "validate", -1, {"task": (0, 1)}) + _rows(dag, "r1", "finalize_run", -1, {"task": (7, 3)})
    rows += _prove(dag, "r1", 0, (1, 1.0), (2, 2.0), {"h2d": 0.1, "ntt": 0.5, "msm": 1.0, "d2h": 0.1})
    rows += _prove(dag, "r1", 1, (2, 2.0), (4, 1.5), {"h2d": 0.2, "ntt": 0.4, "msm": 0.6, "d2h": 0.1})
    rows += _prove(dag, "r1", 2, (3, 2.5), (5.5, 1.5), {"h2d": 0.3, "ntt": 0.3, "msm": 0.5, "d2h": 0.1})
    rows += _rows(dag, "r2", "validate", -1, {"task": (0, 1)})
    rows += _prove(dag, "r2", 0, (1, 0.0), (1, 2.0), {"msm": 0.7})
    rows += _prove(dag, "r2", 1, (1, 2.0), (3, 3.0), {"msm": 0.8})
    store.record_timings(rows)
    store.record_transfers([dict(dag_id=dag, run_id="r1", task_id="partition.prove_gpu", map_index=p, partition=p,
                                 try_number=1, direction="h2d", bytes=NB, memory_kind="pinned", start=_t(2 + 2 * p),
                                 duration_s=d) for p, d in enumerate((0.1, 0.2, 0.3))])
    for run, wall in (("r1", 10.0), ("r2", None)):
        store.upsert_run(dag, run, circuit="mimc", log2=10, partitions=3 if run == "r1" else 2, backend="cpu",
                         staging="pinned", state="success", proofs_verified=3 if run == "r1" else 2, wall_s=wall,
                         started_at=T0)
    store.replace_flags(dag, "r1", [dict(partition=2, try_number=1, bytes=NB, measured_ms=300.0, expected_ms=50.0,
                                         gbps=NB / 0.3 / 1e9, floor_gbps=0.1, reason="injected")])
    yield store, dag
    store.set_report_setting("warmup_partitions", 1)
    store.set_report_setting("warmup_seconds", 0)
    store.dispose()


def _one(store, sql, **params):
    rows = store.query(sql, params)
    assert len(rows) == 1, rows
    return rows[0]


def test_the_views_exist(store_url):
    store = TimingStore(store_url)
    assert set(REPORTING_VIEWS) <= set(inspect(store.engine).get_view_names())
    store.dispose()


def test_run_summary(fixture_store):
    store, dag = fixture_store
    store.upsert_run(dag, "r1", backend_requested="auto", staging_requested="pageable")
    r1 = _one(store, "SELECT * FROM run_summary WHERE dag_id = :d AND run_id = 'r1'", d=dag)
    assert (r1["backend"], r1["backend_requested"], r1["staging"], r1["staging_requested"]) == (
        "cpu", "auto", "pinned", "pageable")
    assert r1["wall_s"] == pytest.approx(10.0)
    assert (r1["partitions"], r1["proofs_verified"], r1["flagged_partitions"]) == (3, 3, 1)
    assert r1["gpu_busy_s"] == pytest.approx(1.7 + 1.3 + 1.2)
    assert r1["gpu_busy_fraction"] == pytest.approx(0.42)
    assert r1["gpu_slot_s"] == pytest.approx(5.0) and r1["gpu_slot_fraction"] == pytest.approx(0.5)
    assert r1["pool_wait_s"] == pytest.approx(5.5)
    r2 = _one(store, "SELECT * FROM run_summary WHERE dag_id = :d AND run_id = 'r2'", d=dag)
    assert r2["wall_s"] == pytest.approx(6.0, abs=1e-3)  # from the rows' span: 0 .. 6 s
    assert r2["gpu_busy_s"] == pytest.approx(1.5)
    assert r2["gpu_busy_fraction"] == pytest.approx(0.25, abs=1e-4)
    assert r2["flagged_partitions"] == 0


def test_phase_stats_per_run_and_across_runs(fixture_store):
    store, dag = fixture_store
    q = "SELECT * FROM phase_stats_run WHERE dag_id = :d AND run_id = 'r1' AND phase = :p"
    w = _one(store, q, d=dag, p="pool_wait")  # 1.0, 2.0, 2.5
    assert (w["count"], w["p50_s"], w["p95_s"], w["max_s"]) == (3, 2.0, 2.5, 2.5)
    assert w["mean_s"] == pytest.approx(5.5 / 3) and w["total_s"] == pytest.approx(5.5)
    m = _one(store, q, d=dag, p="msm")  # 0.5, 0.6, 1.0
    assert (m["p50_s"], m["p95_s"], m["max_s"]) == (0.6, 1.0, 1.0)
    a = _one(store, "SELECT * FROM phase_stats WHERE dag_id = :d AND phase = 'msm'", d=dag)
    # 0.5 0.6 0.7 0.8 1.0 over two runs: p50 = 3rd value, p95 = 5th
    assert (a["runs"], a["count"], a["p50_s"], a["p95_s"], a["max_s"]) == (2, 5, 0.7, 1.0, 1.0)
    assert (a["log2"], a["backend"], a["staging"]) == (10, "cpu", "pinned")


def test_h2d_partitions_and_pool_waits(fixture_store):
    store, dag = fixture_store
    rows = store.query("SELECT * FROM h2d_partitions WHERE dag_id = :d AND run_id = 'r1' ORDER BY partition", {"d": dag})
    assert [r["partition"] for r in rows] == [0, 1, 2]
    assert [r["ms"] for r in rows] == pytest.approx([100.0, 200.0, 300.0])
    assert [r["gbps"] for r in rows] == pytest.approx([NB / d / 1e9 for d in (0.1, 0.2, 0.3)])
    assert [r["flagged"] for r in rows] == [0, 0, 1]
    assert rows[2]["expected_ms"] == 50.0 and rows[2]["reason"] == "injected"
    assert {(r["bytes"], r["memory_kind"], r["host"], r["device"]) for r in rows} == {(NB, "pinned", "h", "cpu")}
    waits = store.query("SELECT * FROM pool_waits WHERE dag_id = :d AND run_id = 'r1' ORDER BY partition", {"d": dag})
    assert [(w["partition"], w["pool_wait_s"], w["task_s"]) for w in waits] == [(0, 1.0, 2.0), (1, 2.0, 1.5),
                                                                             (2, 2.5, 1.5)]
    assert waits[1]["ready_at"] == T0 + dt.timedelta(seconds=2) and waits[1]["started_at"] == T0 + dt.timedelta(seconds=4)


def test_steady_state_window(fixture_store):
    store, dag = fixture_store
    g = store.query("SELECT * FROM gpu_partitions WHERE dag_id = :d AND run_id = 'r1' ORDER BY gpu_rank", {"d": dag})
    assert [(r["partition"], r["gpu_rank"]) for r in g] == [(0, 1), (1, 2), (2, 3)]
    assert [r["offset_s"] for r in g] == pytest.approx([2.0, 4.0, 5.5], abs=1e-3)
    # device spans: from the first device phase's start to the last one's end
    assert g[1]["gpu_start"] == _t(4) and g[1]["gpu_end"] == _t(5.3)
    # default warm-up: the first partition: partitions 1 and 2, device spans 4 .. 6.7 s
    s = _one(store, "SELECT * FROM steady_state WHERE dag_id = :d AND run_id = 'r1'", d=dag)
    assert (s["partitions"], s["warmup_partitions"], s["devices"]) == (2, 1, 1)
    assert s["window_s"] == pytest.approx(2.7, abs=1e-3)
    assert s["gpu_busy_s"] == pytest.approx(2.5)
    assert s["gpu_busy_fraction"] == pytest.approx(2.5 / 2.7, abs=1e-3)
    # kernels only (ntt+msm): 1.0 + 0.8 s; the transfers' 0.7 s do not count
    assert s["gpu_kernel_s"] == pytest.approx(1.8)
    assert s["kernel_busy_fraction"] == pytest.approx(1.8 / 2.7, abs=1e-3)
    assert s["s_per_partition"] == pytest.approx(1.35, abs=1e-3)
    assert s["mean_pool_wait_s"] == pytest.approx(2.25) and s["mean_mutex_wait_s"] == 0
    assert s["h2d_gbps"] == pytest.approx(2 * NB / 0.5 / 1e9)
    assert s["window_start"] == T0 + dt.timedelta(seconds=4)
    # the same query with the CLI's own warm-up: no partitions skipped, but the first 5 s
    s = _one(store, steady_state_query(store.dialect) + " HAVING g.dag_id = :d AND g.run_id = 'r1'",
             d=dag, warmup_partitions=0, warmup_seconds=5.0)
    assert s["partitions"] == 1 and s["gpu_busy_fraction"] == pytest.approx(1.0, abs=1e-3)
    # the view follows report_settings
    store.set_report_setting("warmup_partitions", 2)
    s = _one(store, "SELECT * FROM steady_state WHERE dag_id = :d AND run_id = 'r1'", d=dag)
    assert s["partitions"] == 1 and s["window_s"] == pytest.approx(1.2, abs=1e-3)


def test_steady_state_of_overlapping_tasks_on_two_devices(store_url):
    """The prover service's shape: prove_gpu tasks overlap (each waits in the service while
    another's device phase runs), so only the device spans say how busy the devices were.
    Device A: device spans 1-2, 2-3, 3.5-4.5; device B: 1-3, 4-5 (mutex waits before them)."""
    store = TimingStore(store_url)
    dag = f"views-{uuid.uuid4().hex[:8]}"
    rows = []
    for p, dev, task, wait, busy in ((0, "cuda:0", (0, 2.2), (0.2, 0.8), (1.0, 1.0)),
                                     (1, "cuda:0", (0.1, 3.1), (0.3, 1.7), (2.0, 1.0)),
                                     (2, "cuda:1", (0.1, 3.0), (0.2, 0.8), (1.0, 2.0)),
                                     (3, "cuda:0", (2.3, 2.3), (2.5, 1.0), (3.5, 1.0)),
                                     (4, "cuda:1", (3.2, 2.0), (3.4, 0.6), (4.0, 1.0))):
        (s, d), (ws, wd), (bs, bd) = task, wait, busy
        spans = {"task": (s, d), "pool_wait": (s, 0.0), "mutex_wait": (ws, wd),
                 "h2d": (bs, 0.1 * bd), "ntt": (bs + 0.1 * bd, 0.3 * bd), "msm": (bs + 0.4 * bd, 0.6 * bd)}
        rows += [dict(r, device=dev) for r in _rows(dag, "r", "partition.prove_gpu", p, spans)]
    store.record_timings(rows)
    g = store.query("SELECT * FROM gpu_partitions WHERE dag_id = :d ORDER BY gpu_rank", {"d": dag})
    assert [r["partition"] for r in g] == [0, 2, 1, 3, 4]  # by device span, not by task start
    store.set_report_setting("warmup_partitions", 1)  # leaves out partition 0: window 1 .. 5 s
    s = _one(store, "SELECT * FROM steady_state WHERE dag_id = :d", d=dag)
    assert (s["partitions"], s["devices"]) == (4, 2)
    assert s["window_s"] == pytest.approx(4.0, abs=1e-3)
    # the warm-up partition's device span (cuda:0, 1-2 s) lies in the window: the device was busy
    assert s["gpu_busy_s"] == pytest.approx(6.0)
    assert s["gpu_busy_fraction"] == pytest.approx(6.0 / (4.0 * 2), abs=1e-3)
    assert s["mean_mutex_wait_s"] == pytest.approx((1.7 + 0.8 + 1.0 + 0.6) / 4)
    per = {r["device"]: r for r in store.query("SELECT * FROM steady_state_devices WHERE dag_id = :d", {"d": dag})}
    assert per["cuda:0"]["partitions"] == 2 and per["cuda:0"]["gpu_busy_fraction"] == pytest.approx(3 / 4, abs=1e-3)
    assert per["cuda:1"]["partitions"] == 2 and per["cuda:1"]["gpu_busy_fraction"] == pytest.approx(3 / 4, abs=1e-3)
    assert per["cuda:1"]["kernel_busy_fraction"] == pytest.approx(0.9 * 3 / 4, abs=1e-3)  # h2d: a tenth of each span
    assert s["kernel_busy_fraction"] == pytest.approx(0.9 * 6.0 / (4.0 * 2), abs=1e-3)
    waits = store.query("SELECT * FROM pool_waits WHERE dag_id = :d ORDER BY partition", {"d": dag})
    assert [w["mutex_wait_s"] for w in waits] == pytest.approx([0.8, 1.7, 0.8, 1.0, 0.6])
    store.dispose()


def _union(spans, lo=float("-inf"), hi=float("inf")) -> float:
    """Seconds covered by ``spans`` inside [lo, hi]: the reference the views must match."""
    total, end = 0.0, lo
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


# The prover service's shape: each proof's upload runs while the device computes the proof
# before (fully covered for partition 1, partly for 2 and 3), with a 0.1 s hand-off between
# proofs' kernels. Per partition: (h2d start, h2d s, kernels start); ntt 0.3 s, msm 0.7 s.
UPLOAD_AHEAD = ((0.8, 0.2, 1.0), (1.6, 0.2, 2.1), (2.95, 0.2, 3.2), (4.1, 0.15, 4.3))


def test_overlapping_device_spans_count_once(store_url):
    """Spans that overlap on one device are busy time once: the busy fractions are the union
    over the window, never above 1 (a sum counted each overlap twice: 4.75 s of device phases
    in a 4.5 s window read 105.6% busy)."""
    store = TimingStore(store_url)
    dag = f"views-{uuid.uuid4().hex[:8]}"
    rows, spans, kernels = [], [], []
    for p, (h0, hd, k0) in enumerate(UPLOAD_AHEAD):
        phases = {"task": (h0 - 0.5, k0 + 1.5 - h0), "pool_wait": (h0 - 0.5, 0.0), "h2d": (h0, hd),
                  "ntt": (k0, 0.3), "msm": (k0 + 0.3, 0.7)}
        rows += [dict(r, device="cuda:0") for r in _rows(dag, "r", "partition.prove_gpu", p, phases)]
        spans += [(h0, h0 + hd), (k0, k0 + 1.0)]
        kernels.append((k0, k0 + 1.0))
    store.record_timings(rows)
    store.upsert_run(dag, "r", partitions=4, backend="gpu", staging="pinned", state="success", wall_s=10.0)
    assert _union(spans) == pytest.approx(4.3) and sum(e - s for s, e in spans) == pytest.approx(4.75)

    d = _one(store, "SELECT SUM(union_s) AS busy, SUM(kernel_union_s) AS kernel FROM device_spans WHERE dag_id = :d",
             d=dag)
    assert d["busy"] == pytest.approx(4.3, abs=1e-3) and d["kernel"] == pytest.approx(4.0, abs=1e-3)
    r = _one(store, "SELECT * FROM run_summary WHERE dag_id = :d", d=dag)
    assert (r["devices"], r["gpu_busy_s"]) == (1, pytest.approx(4.3, abs=1e-3))
    assert r["gpu_busy_fraction"] == pytest.approx(0.43, abs=1e-4)

    # no warm-up: the window is 0.8 .. 5.3 s
    s = _one(store, f"SELECT * FROM ({steady_state_query(store.dialect)}) q WHERE dag_id = :d", d=dag,
             warmup_partitions=0, warmup_seconds=0.0)
    assert s["window_s"] == pytest.approx(4.5, abs=1e-3)
    assert s["gpu_busy_s"] == pytest.approx(4.3, abs=1e-3)
    assert s["gpu_busy_fraction"] == pytest.approx(4.3 / 4.5, abs=1e-3) and s["gpu_busy_fraction"] <= 1
    assert s["kernel_busy_fraction"] == pytest.approx(4.0 / 4.5, abs=1e-3)
    # the view's warm-up of one partition: the window opens at partition 1's upload (1.6 s),
    # while partition 0's MSM still runs (to 2.0 s): that is busy time too
    lo, hi = 1.6, 5.3
    s = _one(store, "SELECT * FROM steady_state WHERE dag_id = :d", d=dag)
    assert (s["partitions"], s["window_s"]) == (3, pytest.approx(hi - lo, abs=1e-3))
    assert s["gpu_busy_s"] == pytest.approx(_union(spans, lo, hi), abs=1e-3)
    assert s["gpu_busy_fraction"] == pytest.approx(_union(spans, lo, hi) / (hi - lo), abs=1e-3)
    assert s["kernel_busy_fraction"] == pytest.approx(_union(kernels, lo, hi) / (hi - lo), abs=1e-3)
    dev = _one(store, "SELECT * FROM steady_state_devices WHERE dag_id = :d", d=dag)
    assert dev["gpu_busy_fraction"] == pytest.approx(s["gpu_busy_fraction"], abs=1e-9)
    store.dispose()


def test_busy_time_is_the_union_per_device_on_random_spans(store_url):
    """Random spans (millisecond edges) on two devices: each device's busy time, overall and
    in the steady window, is the union of its spans, whatever their overlaps."""
    import random
    rng = random.Random(34)
    store = TimingStore(store_url)
    dag = f"views-{uuid.uuid4().hex[:8]}"
    rows, by_device = [], {"cuda:0": [], "cuda:1": []}
    for p in range(40):
        device = ("cuda:0", "cuda:1")[p % 2]
        at = rng.randrange(0, 20_000) / 1000
        phases = {"task": (at, 3.0)}
        for ph in ("h2d", "ntt", "msm"):  # an attempt's own phases in order, gaps between them
            d = rng.randrange(1, 1500) / 1000
            at += rng.randrange(0, 300) / 1000
            phases[ph] = (at, d)
            by_device[device].append((at, at + d))
            at += d
        rows += [dict(r, device=device) for r in _rows(dag, "r", "partition.prove_gpu", p, phases)]
    store.record_timings(rows)
    store.upsert_run(dag, "r", partitions=40, backend="gpu", staging="pinned", state="success", wall_s=30.0)
    busy = {dev: _union(sp) for dev, sp in by_device.items()}
    got = {r["device"]: r["busy"] for r in store.query(
        "SELECT device, SUM(union_s) AS busy FROM device_spans WHERE dag_id = :d GROUP BY device", {"d": dag})}
    assert got == pytest.approx(busy, abs=1e-3)  # SQLite: epoch seconds from julianday, ~10 µs
    r = _one(store, "SELECT * FROM run_summary WHERE dag_id = :d", d=dag)
    assert r["gpu_busy_fraction"] == pytest.approx(sum(busy.values()) / (30.0 * 2), abs=1e-4)
    s = _one(store, "SELECT * FROM steady_state WHERE dag_id = :d", d=dag)
    lo, hi = s["window_start"], s["window_end"]
    lo, hi = (lo - T0).total_seconds(), (hi - T0).total_seconds()
    for dev in store.query("SELECT * FROM steady_state_devices WHERE dag_id = :d", {"d": dag}):
        assert dev["gpu_busy_s"] == pytest.approx(_union(by_device[dev["device"]], lo, hi), abs=1e-3)
        assert dev["gpu_busy_fraction"] <= 1
    assert s["gpu_busy_fraction"] <= 1
    store.dispose()
