"""bench.stream's own logic (its streams are the benchmark): the union of device spans over
the steady window, the window's bounds, the rates and the bound, the options."""
import time

import pytest

from bench import stream


def test_union_clips_to_the_window_and_merges_overlaps():
    spans = [(0, 2), (1, 3), (5, 6), (9, 12), (20, 21)]
    assert stream.merged(spans, 1.5, 10) == [(1.5, 3), (5, 6), (9, 10)]
    assert stream.union_s(spans, 1.5, 10) == pytest.approx(1.5 + 1 + 1)
    assert stream.idle_gaps(spans, 1.5, 10) == [2, 3]
    assert stream.union_s([], 0, 10) == 0 and stream.idle_gaps([(1, 2)], 0, 10) == []


def test_window_after_a_time_or_a_partition_warmup():
    attempts = [{"gpu_start": t} for t in (30.0, 12.0, 20.0)]
    assert stream.window_bounds(attempts, 0.0, 100.0, 60.0, None) == (60.0, 100.0)
    assert stream.window_bounds(attempts, 0.0, 100.0, 60.0, 1) == (20.0, 100.0)  # after the first in device order
    with pytest.raises(ValueError, match="none left"):
        stream.window_bounds(attempts, 0.0, 100.0, None, 3)
    with pytest.raises(ValueError, match="whole stream"):
        stream.window_bounds(attempts, 0.0, 50.0, 60.0, None)


def test_synthesis_slots():
    assert stream.synthesis_slots(8, 4, None, 3) == 4  # prove_gpu holds the pool's slots
    assert stream.synthesis_slots(16, 4, 2, 3) == 6  # 2 per run, 3 runs
    assert stream.synthesis_slots(4, 4, None, 3) == 1


def _attempt(device, start, busy, mutex=0.5):
    return {"device": device, "gpu_start": start, "gpu_end": start + busy, "busy_s": busy, "slot_s": 4 * busy,
            "mutex_wait_s": mutex,
            "pool_wait_s": 1.0, "h2d_bytes": 1000, "h2d_transfer_s": 1e-6}


def test_figures_over_a_window_across_runs():
    # one device, a 1 s device phase every 1.25 s from t=0 (80% busy), three of them in a run's
    # tail before the window; the window is [10, 40]
    attempts = [_attempt("cuda:0", 1.25 * i, 1.0) for i in range(40)]
    phases = [p for a in attempts for p in (
        {"device": "cuda:0", "phase": "h2d", "start": a["gpu_start"], "end": a["gpu_start"] + 0.1},
        {"device": "cuda:0", "phase": "msm", "start": a["gpu_start"] + 0.1, "end": a["gpu_end"]})]
    synth = [{"start": t, "end": t + 2.0, "synthesis_s": 0.5} for t in range(0, 40)]  # 2 s each
    stage = [{"start": t, "end": t + 1.0} for t in range(0, 40)]
    fin = [{"start": t, "end": t + 1.0} for t in range(0, 40)]
    f = stream.figures(phases, attempts, synth, stage, 10.0, 40.0, synth_slots=2, finalize=fin, gpu_slots=4)
    assert f["window_s"] == 30 and f["devices"] == ["cuda:0"]
    assert f["busy_fraction"] == pytest.approx(0.8, abs=0.02)
    assert f["kernel_busy_fraction"] == pytest.approx(0.72, abs=0.02)
    assert f["proofs"] == 24 and f["proofs_per_min"] == pytest.approx(48.0)  # ends in [10, 40]
    assert f["device_phase"]["median_s"] == 1.0 and f["gpu_rate_per_min"] == pytest.approx(60.0)
    assert f["synthesize_task"]["median_s"] == 2.0 and f["synthesis_rate_per_min"] == pytest.approx(60.0)
    assert f["synthesis_phase"]["median_s"] == 0.5
    assert f["host_rate_per_min"] == pytest.approx(30.0)  # 2 slots over 2 + 1 + 1 s
    assert f["bound_per_min"] == pytest.approx(60.0) and f["fraction_of_bound"] == pytest.approx(0.8)
    assert f["prove_gpu_task"]["median_s"] == 4.0 and f["pool_rate_per_min"] == pytest.approx(60.0)
    assert f["binding"] == "host tasks" and f["fraction_of_binding"] == pytest.approx(48.0 / 30.0)
    assert f["synthesize_tasks_running_mean"] == pytest.approx(2.0)
    assert f["per_device"]["cuda:0"]["idle_gap_median_s"] == pytest.approx(0.25)
    # idle 20%: between attempts (no partition in hand); none inside one
    assert f["per_device"]["cuda:0"]["starved_fraction"] == pytest.approx(0.2, abs=0.02)
    assert f["per_device"]["cuda:0"]["handoff_fraction"] == pytest.approx(0.0, abs=1e-9)
    slow = stream.figures(phases, attempts, synth, stage, 10.0, 40.0, synth_slots=1)
    assert slow["bound_by"] == "synthesis" and slow["bound_per_min"] == pytest.approx(30.0)
    assert slow["host_rate_per_min"] is None and slow["pool_rate_per_min"] is None  # no spans, no slots given


def test_a_runs_worth_of_proofs_and_the_wall_of_runs_inside_the_window():
    runs = [{"triggered_at": 5.0, "finished_at": 25.0},  # triggered in the warm-up: not counted
            {"triggered_at": 12.0, "finished_at": 30.0}, {"triggered_at": 20.0, "finished_at": 44.0},
            {"triggered_at": 30.0, "finished_at": 52.0},  # ends after the window
            {"triggered_at": 35.0}]  # still running
    f = stream.run_figures(runs, partitions=10, proofs_per_min=30.0, lo=10.0, hi=50.0)
    assert f["seconds_per_run"] == pytest.approx(20.0)  # 10 proofs at 30 a minute
    assert f["run_wall"] == {"n": 2, "min_s": 18.0, "median_s": 21.0, "max_s": 24.0}
    assert stream.run_figures(runs, 10, None, 10.0, 50.0)["seconds_per_run"] is None


def test_two_devices_each_count_their_own_union():
    attempts = [_attempt("cuda:0", float(i), 1.0) for i in range(20)] + \
               [_attempt("cuda:1", 2.0 * i, 1.0) for i in range(10)]
    phases = [{"device": a["device"], "phase": "ntt", "start": a["gpu_start"], "end": a["gpu_end"]} for a in attempts]
    f = stream.figures(phases, attempts, [], [], 0.0, 20.0, synth_slots=4)
    assert f["per_device"]["cuda:0"]["busy_fraction"] == pytest.approx(1.0)
    assert f["per_device"]["cuda:1"]["busy_fraction"] == pytest.approx(0.5)
    assert f["busy_fraction"] == pytest.approx(0.75) and f["gpu_rate_per_min"] == pytest.approx(120.0)
    assert f["synthesis_rate_per_min"] is None and f["bound_by"] == "gpu"


def test_idle_time_splits_into_starved_and_handoff():
    # attempts back to back every 1 s (never starved), each busy only in [0.1, 0.9] of it: the
    # device idles 20% with a partition in hand
    attempts = [_attempt("cuda:0", float(i), 1.0) for i in range(10)]
    phases = [{"device": "cuda:0", "phase": "ntt", "start": a["gpu_start"] + 0.1, "end": a["gpu_end"] - 0.1}
              for a in attempts]
    d = stream.figures(phases, attempts, [], [], 0.0, 10.0, synth_slots=1)["per_device"]["cuda:0"]
    assert d["busy_fraction"] == pytest.approx(0.8)
    assert d["starved_fraction"] == pytest.approx(0.0) and d["handoff_fraction"] == pytest.approx(0.2)


def test_options_per_size_and_defaults():
    a = stream.parse(["--log2", "22", "24", "--partitions", "8", "4", "--in-flight", "3", "--backend", "gpu",
                      "--label", "h200"])
    assert a.log2 == [22, 24] and a.partitions == [8, 4] and a.in_flight == [3, 3] and a.seeds == [0]
    assert a.out.name == "stream-h200.json" and a.png.name == "stream-h200.png"
    assert stream.parse([]).out.name == "stream-cpu.json" and stream.parse([]).partitions_per_task == 1
    assert stream.parse(["--partitions-per-task", "4"]).partitions_per_task == 4
    with pytest.raises(SystemExit):
        stream.parse(["--log2", "22", "24", "--partitions", "8", "4", "2"])
    with pytest.raises(SystemExit):
        stream.parse(["--duration", "30", "--warmup-s", "60"])


def test_a_run_counts_by_its_partitions_left_to_prove():
    runs = [{"proved": 4}, {"proved": 16}, {}, {"state": "success", "proved": 16}]
    assert stream.in_flight_now(runs, 16, "proving") == pytest.approx(0.75 + 0 + 1)
    assert stream.in_flight_now(runs, 16, "active") == 3  # every unfinished run, in full


def test_each_run_carries_check_h2ds_flags(sqlite_url):
    from proofflow.timing import TimingStore
    store = TimingStore(sqlite_url)
    store.replace_flags("proof_run", "r1", [{"partition": 3, "try_number": 1, "bytes": 3 << 20, "measured_ms": 9.0,
                                             "expected_ms": 2.0, "gbps": 0.35, "floor_gbps": 1.0,
                                             "reason": "H2D 9.0 ms > 1.5 x expected 2.0 ms"}])
    runs = [{"run_id": "r1"}, {"run_id": "r2"}]
    assert stream.verified(store, runs) == 0  # no bundles: nothing proved in this store
    assert runs[0]["h2d_flags"] == [{"partition": 3, "try_number": 1, "measured_ms": 9.0, "expected_ms": 2.0,
                                     "gbps": 0.35, "reason": "H2D 9.0 ms > 1.5 x expected 2.0 ms"}]
    assert runs[1]["h2d_flags"] == []
    store.dispose()


def test_the_services_one_time_phases_are_loaded_apart(sqlite_url):
    """service_start (a stage task's) and key_upload (a prove_gpu task's), in order, for
    the stream's runs only."""
    from proofflow.timing import TimingStore
    store = TimingStore(sqlite_url)
    t = time.time()
    row = dict(dag_id=stream.DAG, map_index=0, try_number=1, partition=0, host="h", device="cuda:0")
    store.record_timings([
        {**row, "run_id": "r1", "task_id": "partition.stage", "phase": "service_start", "start": t, "end": t + 20.9},
        {**row, "run_id": "r1", "task_id": "partition.prove_gpu", "phase": "key_upload", "start": t + 21,
         "end": t + 22.5},
        {**row, "run_id": "r2", "task_id": "partition.stage", "phase": "service_start", "start": t + 30,
         "end": t + 30.8},
        {**row, "run_id": "other", "task_id": "partition.stage", "phase": "service_start", "start": t, "end": t + 5},
        {**row, "run_id": "r1", "task_id": "partition.prove_gpu", "phase": "msm", "start": t + 23, "end": t + 23.2}])
    assert stream.load(store, {"r1", "r2"})["once_s"] == {"service_start": [20.9, 0.8], "key_upload": [1.5]}
    store.dispose()


def test_poll_updates_finished_and_proving_runs(monkeypatch):
    answers = {
        f"/api/v2/dags/{stream.DAG}/dagRuns?state=queued&state=running&limit=1000": {"dag_runs": [{"dag_run_id": "b"}]},
        f"/api/v2/dags/{stream.DAG}/dagRuns/a": {"state": "success"},
        f"/api/v2/dags/{stream.DAG}/dagRuns/b/taskInstances?task_id=partition.prove_gpu&state=success&limit=1":
            {"total_entries": 4},
    }
    asked = []
    monkeypatch.setattr(stream.stack, "api", lambda base, path: asked.append(path) or answers[path])
    runs = [{"run_id": "a"}, {"run_id": "b", "proved": 1}, {"run_id": "c", "state": "failed"}]
    stream._poll("http://x", runs, 4, "proving", 1)
    assert runs[0]["state"] == "success" and "finished_at" in runs[0]
    assert runs[1]["proved"] == 4 and "proved_at" in runs[1] and "state" not in runs[1]
    assert runs[2] == {"run_id": "c", "state": "failed"} and len(asked) == 3  # a finished run is not asked again
    # chunks of 3 partitions (the last of one): a prove_gpu task instance proves its chunk
    answers[f"/api/v2/dags/{stream.DAG}/dagRuns/b/taskInstances?task_id=partition.prove_gpu&state=success&limit=1"] = {
        "total_entries": 1}
    runs = [{"run_id": "b"}]
    stream._poll("http://x", runs, 4, "proving", 3)
    assert runs[0]["proved"] == 3 and "proved_at" not in runs[0]
    answers[f"/api/v2/dags/{stream.DAG}/dagRuns/b/taskInstances?task_id=partition.prove_gpu&state=success&limit=1"] = {
        "total_entries": 2}
    stream._poll("http://x", runs, 4, "proving", 3)
    assert runs[0]["proved"] == 4 and "proved_at" in runs[0]
