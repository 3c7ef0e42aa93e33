"""proofflow calibrate on the CPU path (and on the GPU where one is visible): rows per size,
stored in the calibrations table, the latest batch used, rates interpolated by size."""
import pytest

from proofflow.timing.calibrate import calibrate, partition_bytes, reference_gbps
from proofflow.timing import TimingStore


def test_cpu_calibration_is_stored_per_size(sqlite_url):
    store = TimingStore(sqlite_url)
    rows = calibrate("cpu", 8, 11, reps=3, host="test-host", store=store)
    assert [r["bytes"] for r in rows] == [partition_bytes(k) for k in range(8, 12)] == [24576, 49152, 98304, 196608]
    for r in rows:
        assert r["median_ms"] > 0 and r["gbps"] == pytest.approx(r["bytes"] / r["median_ms"] / 1e6)
        assert (r["device"], r["memory_kind"], r["method"], r["reps"]) == ("cpu", "pageable", "cpu-staging-copy-3x", 3)
    stored = store.calibration("test-host", "cpu")
    assert [r["bytes"] for r in stored] == [r["bytes"] for r in rows]
    newer = calibrate("cpu", 8, 9, reps=2, host="test-host", store=store)
    assert {r["batch"] for r in store.calibration("test-host", "cpu")} == {newer[0]["batch"]}
    assert store.calibration("other-host", "cpu") == []
    store.dispose()


def test_reference_rate_interpolates_in_log_size():
    cal = [{"bytes": 100, "gbps": 1.0}, {"bytes": 10_000, "gbps": 3.0}]
    assert reference_gbps(cal, 10) == 1.0 and reference_gbps(cal, 10**6) == 3.0
    assert reference_gbps(cal, 1000) == pytest.approx(2.0)
    assert reference_gbps([], 1000) is None


@pytest.mark.gpu
def test_gpu_calibration_is_pinned_h2d():
    from proofflow.prover.device import available as gpu_available
    if not gpu_available():
        pytest.skip("no GPU")
    rows = calibrate("cuda:0", 16, 22, reps=3, host="gpu-host")
    assert rows[-1]["method"] == "cuda-h2d-3x"
    assert rows[-1]["gbps"] > 10, rows  # pinned PCIe: tens of GB/s at 2^22 (384 MiB)


@pytest.mark.parametrize("visible", [True, False])
def test_check_h2d_calibrates_a_missing_gpu_on_this_host(visible, monkeypatch):
    """check_h2d's calibrator hands the device's name (cuda:N) to calibrate when the GPU is
    visible here, and calibrates nothing when it is not."""
    from proofflow.airflow.operators.check_h2d import auto_calibrator
    from proofflow.prover import device
    from proofflow.timing import calibrate as calibrate_mod
    calls = []
    monkeypatch.setattr(device, "available", lambda: visible)
    monkeypatch.setattr(calibrate_mod, "calibrate", lambda dev, lo, hi, reps, host, store: calls.append((dev, lo, hi))
                        or [{"device": dev}])
    got = auto_calibrator("store")(calibrate_mod.host_name(), "cuda:0", 96 << 20)
    assert (got, calls) == (([{"device": "cuda:0"}], [("cuda:0", 8, 20)]) if visible else ([], []))
